// Package provider defines the upstream engines a task runs on. Each upstream (the embedded
// sandbox, later real providers) implements these interfaces in its own subpackage. Jobs are
// asynchronous like a real provider: submit returns a job id, poll reports progress and, at
// the end, the output or a sanitized error.
package provider

import (
	"context"
	"errors"
	"io"
	"time"
)

// Status of an upstream job.
type Status string

const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusSucceeded Status = "succeeded"
	StatusFailed    Status = "failed"
	StatusExpired   Status = "expired"
)

// Errors a provider call returns. Anything else is treated as transient.
var (
	// ErrTransient: the call may be retried (network trouble, 5xx, 429, overload).
	ErrTransient = errors.New("transient upstream error")
	// ErrPermanent: retrying cannot help (the upstream rejected the request).
	ErrPermanent = errors.New("permanent upstream error")
	// ErrUnknownJob: the upstream does not know the job id (lost by the upstream).
	ErrUnknownJob = errors.New("unknown upstream job")
	// ErrAccount: the upstream refused the account's credentials (HTTP 401/403). Nothing is
	// wrong with the task: it waits, without spending its attempts, until the operator fixes
	// the account or the task's deadline passes.
	ErrAccount = errors.New("upstream account refused")
	// ErrOutcomeUnknown: a create whose answer was lost may have made a paid job, and the
	// upstream can neither be asked for it nor be given the same create safely (no
	// idempotency key, no search): the task must not submit again. It ends, refunded, and
	// the possible job is the operator's upstream excess (a GenerationFinder's answer).
	ErrOutcomeUnknown = errors.New("upstream create outcome unknown")
	// ErrNotSent marks a transient failure before the request left this process (its turn
	// under the account's request rate never came, or the connection was refused): the
	// upstream cannot have made a job for it.
	ErrNotSent = errors.New("upstream request not sent")
)

// RetryAfter is a transient error with the upstream's Retry-After: the caller should not
// call again sooner.
type RetryAfter struct {
	After time.Duration
	Err   error
}

func (e *RetryAfter) Error() string { return e.Err.Error() }
func (e *RetryAfter) Unwrap() error { return e.Err }

// RetryDelay is the Retry-After an error carries (0: none).
func RetryDelay(err error) time.Duration {
	var ra *RetryAfter
	if errors.As(err, &ra) {
		return ra.After
	}
	return 0
}

// Capped reads r and fails once it gives more than n bytes: an output over its bound is an
// error, never a silently cut file.
func Capped(r io.Reader, n int64) io.Reader { return &capped{r: r, left: n} }

type capped struct {
	r    io.Reader
	left int64
}

// ErrTooLarge is an output over its bound.
var ErrTooLarge = errors.New("upstream output is larger than its bound")

func (c *capped) Read(p []byte) (int, error) {
	if c.left < 0 {
		return 0, ErrTooLarge
	}
	if int64(len(p)) > c.left+1 {
		p = p[:c.left+1]
	}
	n, err := c.r.Read(p)
	c.left -= int64(n)
	if c.left < 0 {
		return n, ErrTooLarge
	}
	return n, err
}

// Source is a media input. URL is what a remote upstream fetches; Path, when set, is a local
// copy the embedded sandbox may read directly instead.
type Source struct {
	URL  string
	Path string
	// Key is an object of the service's own blob store, which a local engine with the
	// store's credentials reads directly (an S3 bucket: no public link needed).
	Key string `json:",omitempty"`
	// Library and LibraryID name an asset registered in an upstream asset library (an
	// ark_assets account) and its id there: an ark engine of that library sends
	// asset://<LibraryID> instead of URL. Every other engine reads URL, Path or Key.
	Library   string `json:",omitempty"`
	LibraryID string `json:",omitempty"`
	// Open, when set on an output, streams it: for an upstream whose result is fetched with
	// the account's credentials (openai's GET /videos/{id}/content), or a body already read.
	// The reader is the caller's to close.
	Open func(ctx context.Context) (io.ReadCloser, error) `json:"-"`
}

// Input is one content item of a generation request, in request order.
type Input struct {
	Type   string // image_url, video_url, audio_url
	Role   string // reference_image, reference_video, reference_audio, first_frame, last_frame
	Source Source
}

// GenerateRequest is a native generation job.
type GenerateRequest struct {
	// IdempotencyKey identifies this step of this task; an upstream that supports
	// idempotency tokens gets it, so a retried submit cannot start a second paid job.
	IdempotencyKey string
	// Tenant and Key say whose task the job is for: an engine with a queue of its own (the
	// sandbox's render slots) serves them fairly. No upstream API receives them.
	Tenant, Key   string
	Model         string // upstream model name
	Prompt        string
	Resolution    string
	Ratio         string
	Width, Height int // pixel size for the resolution and ratio
	Duration      int // seconds; -1 = model default
	GenerateAudio *bool
	Watermark     *bool
	Seed          *int64
	OutputFormat  string // mp4 or mov
	TaskType      string // omni task type: auto, reference, edit, extend
	Inputs        []Input
}

// EnhanceRequest is an enhancement job.
type EnhanceRequest struct {
	IdempotencyKey string
	Tenant, Key    string // whose task, as in GenerateRequest
	Model          string
	ToolVersion    string // "" (lite), standard, professional
	Source         Source
	Resolution     string // 1080p, 2k, 4k, 8k; or
	ShortSide      int    // resolution_limit: short-side pixels
	FPS            *int   // nil keeps the source fps
	Bitrate        *int   // kbps; wins over BitrateLevel
	BitrateLevel   string
	BitDepth       *int
	Scene          string
	EnhanceStyle   string
	// MaxSourceSeconds is the longest source the task was priced for (0: no limit): the
	// source was measured at submission and the reservation bounds the charge from that
	// length. A source URL can serve something longer by the time the engine fetches it, so
	// an engine refuses a longer source (CodeSourceChanged) instead of processing it; an
	// adapter for an upstream that fetches the URL itself must give it a copy it measured.
	MaxSourceSeconds float64
	// Prompt is the production request's prompt when this job is a production task's second
	// half ("" for standalone enhancement). Upstreams may ignore it; the sandbox reads its
	// [sandbox:enhance=…] markers from it.
	Prompt string
}

// Output is a finished job's result.
type Output struct {
	// The produced file: a local path (sandbox) or a URL the runner copies from.
	Source Source
	// ContentType of the file, e.g. video/mp4, video/quicktime.
	ContentType string
	// CompletionTokens is the upstream's usage for generation jobs.
	CompletionTokens int64
	// UsageSeconds is the seconds of output the upstream bills for the job, when it reports
	// them (DashScope's usage.video_duration; 0: not reported): the operator's cost, and
	// usage beyond the request is upstream excess.
	UsageSeconds float64
}

// Job is the state of an upstream job.
type Job struct {
	Status   Status
	Progress int // 0..100 within this job
	// ErrorCode and ErrorMessage are set on failed/expired jobs; the code is public (for
	// example InvalidParameter.TaskTypeMismatch), the message is sanitized.
	ErrorCode    string
	ErrorMessage string
	Output       *Output // on success
}

// Generator runs native generation jobs.
type Generator interface {
	SubmitGeneration(ctx context.Context, r GenerateRequest) (jobID string, err error)
	PollGeneration(ctx context.Context, jobID string) (Job, error)
}

// GenerationFinder is a Generator that can find a job an earlier submit of the same request
// started although its answer never reached us (a crash, a timeout, a 5xx after the job was
// made): for upstreams without idempotency tokens. since is when that submit was about to be
// made. The pipeline asks before a submit that may repeat one, so a retry does not start a
// second paid job. An error of kind ErrOutcomeUnknown answers "the account cannot tell whether
// that submit made a job": the task then fails, refunded, and is never submitted again (its
// possible job is recorded as the operator's upstream excess, lost_create).
type GenerationFinder interface {
	FindGeneration(ctx context.Context, r GenerateRequest, since time.Time) (jobID string, found bool, err error)
}

// BlindCreator is a Generator whose lost creates can neither be found nor safely repeated (no
// idempotency key, no search): its FindGeneration answers ErrOutcomeUnknown. For it the
// pipeline forgets a create the upstream refused outright (a refused key or balance, a rate
// limit: no job made), so only a create whose answer was truly lost ends its task.
type BlindCreator interface {
	Generator
	BlindCreates()
}

// GenerationCanceler is a Generator that can stop a job it started (Runway's DELETE
// /v1/tasks/{id}). The service calls it, best effort, when it gives a task up while its job
// is still running upstream (the task's deadline passed, or its steps kept failing): the task
// is refunded either way, and a job stopped early costs the operator less. A job already
// finished or gone is not an error.
type GenerationCanceler interface {
	CancelGeneration(ctx context.Context, jobID string) error
}

// EnhancementCanceler is GenerationCanceler for enhancement jobs.
type EnhancementCanceler interface {
	CancelEnhancement(ctx context.Context, jobID string) error
}

// Enhancer runs enhancement jobs.
type Enhancer interface {
	SubmitEnhancement(ctx context.Context, r EnhanceRequest) (jobID string, err error)
	PollEnhancement(ctx context.Context, jobID string) (Job, error)
}

// SpeechRequest is a speech synthesis call.
type SpeechRequest struct {
	IdempotencyKey string
	Model          string
	Text           string // the combined text to speak
	// Input and Instructions are the contract's fields as sent (trimmed), for an upstream
	// that takes them apart; Text joins them.
	Input, Instructions string
	Mode                string // text, audio, image
	References          []Input
}

// Speech is a finished synthesis.
type Speech struct {
	Source      Source
	ContentType string // audio/mpeg
}

// Synthesizer generates speech synchronously, within the caller's deadline.
type Synthesizer interface {
	Synthesize(ctx context.Context, r SpeechRequest) (Speech, error)
}

// BlindSynthesizer is a Synthesizer whose syntheses can neither be read back nor safely
// repeated (no idempotency key; the answer is the audio): a generation run again after its
// process died — whose call may have left and been billed — is not sent again; it fails,
// refunded, with the possible synthesis recorded as lost_create (speech.generator.Run).
type BlindSynthesizer interface {
	Synthesizer
	BlindSyntheses()
}

// Error is a job failure with a public code, for errors returned by Synthesize and by submit
// calls that the upstream rejected for a reason the client should see.
type Error struct {
	Code    string // public code, e.g. InvalidParameter.TaskTypeMismatch
	Message string // sanitized
	Kind    error  // ErrTransient or ErrPermanent
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }
func (e *Error) Unwrap() error { return e.Kind }
