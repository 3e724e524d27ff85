// Package speech is the speech use case (POST /v1/audio/speech): decode and validate the
// request, check its reference URLs, record it with its reservation and its generation job
// before the engine is called, and wait for the job within the bounded wait. The job
// (GenerateKind, on the job engine) synthesizes, stores and measures the audio, and settles
// once on the measured duration — or fails and refunds in full. Replays of the same
// client_request_id return the original outcome, waiting for it while it runs; a generation
// whose process died is run again by the engine. See docs/speech.md.
package speech

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/billing"
	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/media/budget"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/routing"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// Defaults of the Service's bounds.
const (
	// DefaultWait bounds one generation attempt: reference checks aside, the engine must
	// deliver within it, and a retry waits at most this long for a running original.
	DefaultWait = 60 * time.Second
	// DefaultGrace is the time after the wait that storing and measuring the audio may take.
	DefaultGrace = 30 * time.Second
	// DefaultLease is the job lease of a generation (GenerateKind's Lease). The engine renews
	// it every third of a lease while the generation works, so a job whose lease ran out
	// belongs to a process that died, and another process runs it again. 5 s keeps the
	// recovery after a crash to a few seconds, while leaving two missed renewals (a slow
	// commit, a long GC pause, a busy database) before a live run could be mistaken for a
	// dead one — and even then only work is repeated: the outcome is fenced by the lease, so
	// money moves once.
	DefaultLease = 5 * time.Second
	// DefaultCheckTimeout bounds the reference checks of one request (run concurrently).
	DefaultCheckTimeout = 15 * time.Second
	// DefaultLinkTTL is the lifetime of download links when the Service has none set.
	DefaultLinkTTL = 24 * time.Hour
	// DefaultPoll is how often a waiting request re-reads a record whose job runs in another
	// process (one that runs here wakes it at once).
	DefaultPoll = 100 * time.Millisecond
)

// Fetcher is the SSRF-safe client (*safefetch.Client) used for reference checks and for
// copying engine output given by URL.
type Fetcher interface {
	Get(ctx context.Context, rawURL string, opt safefetch.RequestOptions) (*safefetch.Response, error)
}

// Prober measures a stored media file (ffmpeg.Tools).
type Prober interface {
	Probe(ctx context.Context, path string) (ffmpeg.Info, error)
}

// Trimmer cuts a stored media file to measure at most maxSeconds (ffmpeg.Tools.Trim).
type Trimmer interface {
	Trim(ctx context.Context, in, out string, maxSeconds float64) error
}

// Store is what the speech service needs of the database; the SQL store satisfies it.
type Store interface {
	Transact(ctx context.Context, fn func(store.Tx) error) error
	Speech(ctx context.Context, id string) (store.Speech, error)
	SpeechByRequestID(ctx context.Context, keyID, clientRequestID string) (store.Speech, error)
}

// Service accepts speech requests. Store, Blobs and Probe are required; Engines maps a catalog
// upstream name (alias.upstream) to its synthesizer — an alias whose upstream has no engine
// in this process answers 503. Fetch is required for requests with references.
type Service struct {
	Store   Store
	Engines map[string]provider.Synthesizer
	// Lookup, when set, finds an engine by account name instead of Engines: a catalog
	// reload swaps the engines it answers from.
	Lookup  func(name string) provider.Synthesizer
	Fetch   Fetcher
	Blobs   blob.Store
	Probe   Prober
	Logger  *slog.Logger
	Metrics *Metrics // optional
	// Overages counts settlements above their reservation (optional; they are logged always).
	Overages *billing.Overages
	// Trim cuts audio longer than its bound (optional: without it, such audio is kept whole
	// and billed only up to its bound).
	Trim Trimmer
	// Excess counts the upstream excess settled (optional; it is logged always).
	Excess *billing.ExcessMetrics
	// Accounts looks up an alias's upstream account (optional): a request its kind cannot
	// serve is refused at submission (catalog.UpstreamKind.RefuseSpeech).
	Accounts func(name string) (catalog.UpstreamAccount, bool)
	// Bounds are the measured audio bounds of the engines by upstream name (see Bound);
	// an engine without one uses EspeakBound.
	Bounds map[string]Bound
	// Router is the accounts' health routed aliases (several accounts) pick from; share the
	// video pipeline's so an account's breaker counts both. nil: one of the Service's own.
	Router *routing.Router
	// AccountWait is how long a routed request skips an account whose key was refused
	// (0 → DefaultAccountWait).
	AccountWait time.Duration
	routerMu    sync.Mutex

	// Notify wakes this process's producer of a job kind (jobs.Engine.Notify): a request's
	// generation starts at once here instead of at the next poll. Register Kinds() on the
	// engine of every process that serves the API.
	Notify func(kind string)
	// Workers is how many generations this process runs at once (0 → DefaultWorkers).
	Workers int
	// Media is the process-wide media budget: a request is refused before it is accepted
	// when its generation would queue behind a full round of media work (Budget.Admit); its
	// generation's media processes then wait in it within the request's bounded wait. nil:
	// no admission check.
	Media   *budget.Budget
	waiting waiters

	LinkTTL      time.Duration // lifetime of the download link; 0 → DefaultLinkTTL
	Wait         time.Duration // bounded wait of one generation; 0 → DefaultWait
	Grace        time.Duration // storing and measuring after the wait; 0 → DefaultGrace
	CheckTimeout time.Duration // reference checks; 0 → DefaultCheckTimeout
	Poll         time.Duration // waiting requests re-read this often; 0 → DefaultPoll
	Lease        time.Duration // job lease of a generation; 0 → DefaultLease
	Now          func() time.Time
	// Tracer, when set, makes each engine call a span "upstream.synthesize" (trace.go);
	// nil: no spans.
	Tracer trace.Tracer
	// Events announces a settled generation to the tenant's webhook endpoints, written in
	// the settlement's transaction (nil: none; internal/webhook).
	Events webhook.Announcer
}

func (s *Service) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Service) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

func orDefault(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (s *Service) wait() time.Duration         { return orDefault(s.Wait, DefaultWait) }
func (s *Service) grace() time.Duration        { return orDefault(s.Grace, DefaultGrace) }
func (s *Service) checkTimeout() time.Duration { return orDefault(s.CheckTimeout, DefaultCheckTimeout) }
func (s *Service) linkTTL() time.Duration      { return orDefault(s.LinkTTL, DefaultLinkTTL) }
func (s *Service) poll() time.Duration         { return orDefault(s.Poll, DefaultPoll) }
func (s *Service) lease() time.Duration        { return orDefault(s.Lease, DefaultLease) }

// engine is the engine of an account (nil: none in this process).
func (s *Service) engine(name string) provider.Synthesizer {
	if s.Lookup != nil {
		return s.Lookup(name)
	}
	return s.Engines[name]
}
