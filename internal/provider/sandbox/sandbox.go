package sandbox

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"mediagen/internal/media/budget"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
)

// Defaults and limits; docs/sandbox.md lists them for integrators.
const (
	// DefaultPace is the minimum wall time of a job when Config.Pace is zero.
	DefaultPace = 2 * time.Second
	// DefaultDuration is what a generation with Duration -1 (model default) renders.
	DefaultDuration = 5
	// MaxDuration bounds a requested generation length in seconds.
	MaxDuration = 60
	// FPS is the fixed frame rate of generated videos.
	FPS = 24
	// TokenDivisor is the pixel-frames per completion token.
	TokenDivisor = 1024
	// MaxSlow bounds a [sandbox:slow=…] marker.
	MaxSlow = 10 * time.Minute
	// MaxTransient bounds a [sandbox:transient=N] marker.
	MaxTransient = 100
	// DefaultMaxFetchBytes caps a fetched enhancement source or reference video check.
	DefaultMaxFetchBytes = 1 << 30
	// MaxImageBytes caps a fetched first/last-frame or reference image.
	MaxImageBytes = 32 << 20
)

// Public error codes the sandbox reports.
const (
	CodeGenerationFailed = "video_generation_failed"
	CodeSpeechFailed     = "speech_generation_failed"
	CodeExpired          = "task_expired"
	CodeInvalidParameter = "InvalidParameter"
	CodeTaskTypeMismatch = "InvalidParameter.TaskTypeMismatch"
	// CodeSourceChanged: the enhancement source measured longer at processing than at
	// submission (provider.EnhanceRequest.MaxSourceSeconds).
	CodeSourceChanged = "InvalidParameter.SourceChanged"
)

// Config configures an Engine. Only Dir is required.
type Config struct {
	// Dir is the job directory, e.g. <data-dir>/sandbox. Jobs survive process restarts.
	Dir   string
	Tools ffmpeg.Tools
	// Fetch fetches URL sources (reference images, enhancement sources). Nil: URL sources
	// without a local Path fail their job.
	Fetch *safefetch.Client
	// OpenKey reads an object of the service's own blob store (provider.Source.Key), for
	// sources kept in an object store this engine reaches with the service's credentials.
	// Nil: keys are not read (Path or URL is used).
	OpenKey func(ctx context.Context, key string) (io.ReadCloser, error)
	// Pace is the minimum wall time a job spends queued → running → done; progress rises
	// linearly over it. 0 means DefaultPace; a negative value means no minimum.
	Pace time.Duration
	// MaxConcurrent bounds renders running at once; 0 means 1 on machines with up to 2
	// CPUs and NumCPU/2 otherwise. Speech syntheses have their own bound of the same size.
	MaxConcurrent int
	// MaxFetchBytes caps a fetched enhancement source; 0 means DefaultMaxFetchBytes.
	// Images are capped at min(MaxImageBytes, MaxFetchBytes).
	MaxFetchBytes int64
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives render failures and notes; nil means slog.Default().
	Logger *slog.Logger
	// NoMarkers turns the integrator markers off: prompts, texts and source URLs are used as
	// they are. The local production engines (catalog kinds ffmpeg and espeak) are this
	// engine with no markers and no pace (docs/upstreams.md).
	NoMarkers bool
}

// Engine is the embedded sandbox upstream. It implements provider.Generator,
// provider.Enhancer and provider.Synthesizer. It is safe for concurrent use.
type Engine struct {
	cfg  Config
	pace time.Duration
	log  *slog.Logger

	jobsDir, speechDir, attemptsDir string

	ctx    context.Context // cancelled by Close; parent of every background render
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  *budget.Fair  // render slots, shared fairly
	speech chan struct{} // speech slots

	mu       sync.Mutex
	closed   bool
	jobs     map[string]*jobState // loaded jobs of this process
	keyLocks map[string]*keyLock  // serializes submits and syntheses per job id

	// Test hooks and counters.
	renders      atomic.Int64 // Tools.Render/Enhance calls
	syntheses    atomic.Int64 // Tools.Speak calls
	beforeRender func(ctx context.Context, id string)
}

var (
	_ provider.Generator   = (*Engine)(nil)
	_ provider.Enhancer    = (*Engine)(nil)
	_ provider.Synthesizer = (*Engine)(nil)
)

// errClosed is returned by every call after Close; it is transient because another
// process (or the next one) can serve the call.
var errClosed = fmt.Errorf("sandbox engine closed: %w", provider.ErrTransient)

// New creates the engine and its directories. Jobs left by an earlier process resume
// when they are polled.
func New(cfg Config) (*Engine, error) {
	if cfg.Dir == "" {
		return nil, errors.New("sandbox: Config.Dir is required")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	cfg.Dir = dir
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxConcurrent <= 0 {
		cfg.MaxConcurrent = max(1, runtime.NumCPU()/2)
	}
	if cfg.MaxFetchBytes <= 0 {
		cfg.MaxFetchBytes = DefaultMaxFetchBytes
	}
	pace := cfg.Pace
	switch {
	case pace == 0:
		pace = DefaultPace
	case pace < 0:
		pace = 0
	}
	e := &Engine{
		cfg:         cfg,
		pace:        pace,
		log:         cfg.Logger.With("component", "sandbox"),
		jobsDir:     filepath.Join(dir, "jobs"),
		speechDir:   filepath.Join(dir, "speech"),
		attemptsDir: filepath.Join(dir, "attempts"),
		slots:       budget.NewFair(cfg.MaxConcurrent),
		speech:      make(chan struct{}, cfg.MaxConcurrent),
		jobs:        map[string]*jobState{},
		keyLocks:    map[string]*keyLock{},
	}
	for _, d := range []string{e.jobsDir, e.speechDir, e.attemptsDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	// Speech is written atomically into the shared speech directory under a random temporary
	// name that no later synthesis can attribute to its key, so the partial outputs of
	// processes killed mid-synthesis are removed by age instead.
	if n, err := cfg.Tools.RemoveStaleTemp(e.speechDir, cfg.Now()); err != nil {
		e.log.Warn("stale speech temporary files not removed", "err", err)
	} else if n > 0 {
		e.log.Info("removed speech temporary files of stopped processes", "removed", n)
	}
	e.ctx, e.cancel = context.WithCancel(context.Background())
	return e, nil
}

// Close stops background renders and waits for them to end. Interrupted renders leave
// no output; the next process's Poll starts them again. Close is idempotent.
func (e *Engine) Close() error {
	e.mu.Lock()
	e.closed = true
	e.mu.Unlock()
	e.cancel()
	e.wg.Wait()
	return nil
}

func (e *Engine) isClosed() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed
}

// Job kinds; the kind is part of the id hash, so the same idempotency key used for a
// generation and an enhancement names two different jobs.
const (
	kindGeneration  = "generation"
	kindEnhancement = "enhancement"
	kindSpeech      = "speech"
)

// jobID derives the job id from the idempotency key: the same key always names the
// same job, in this process and the next.
func jobID(kind, key string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + key))
	return "sbx_" + hex.EncodeToString(sum[:])[:24]
}

// validID guards every path built from a caller-supplied job id.
var validID = regexp.MustCompile(`^sbx_[0-9a-f]{24}$`)

// keyLock is a reference-counted mutex per job id.
type keyLock struct {
	mu   sync.Mutex
	refs int
}

// lockKey serializes work on one job id (submits, syntheses) without holding e.mu
// across file or tool I/O.
func (e *Engine) lockKey(id string) (unlock func()) {
	e.mu.Lock()
	l := e.keyLocks[id]
	if l == nil {
		l = &keyLock{}
		e.keyLocks[id] = l
	}
	l.refs++
	e.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		e.mu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(e.keyLocks, id)
		}
		e.mu.Unlock()
	}
}

// permanent builds a permanent provider error with a public code.
func permanent(code, format string, a ...any) error {
	return &provider.Error{Code: code, Message: fmt.Sprintf(format, a...), Kind: provider.ErrPermanent}
}

// transientAttempt implements [sandbox:transient=N]: the first n calls for a job id
// fail with provider.ErrTransient. The count is kept on disk, so it survives restarts.
func (e *Engine) transientAttempt(id string, n int) error {
	if n <= 0 {
		return nil
	}
	path := filepath.Join(e.attemptsDir, id)
	done := readCount(path)
	if done >= n {
		return nil
	}
	if err := writeFileAtomic(path, fmt.Appendf(nil, "%d\n", done+1)); err != nil {
		return fmt.Errorf("sandbox: %w: %w", provider.ErrTransient, err)
	}
	return fmt.Errorf("sandbox: simulated transient failure %d of %d: %w", done+1, n, provider.ErrTransient)
}
