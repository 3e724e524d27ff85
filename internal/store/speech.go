package store

import (
	"context"
	"time"

	"mediagen/internal/money"
)

// Speech statuses. A speech record is pending from acceptance until it completes or fails;
// completed and failed are terminal and never change again.
const (
	SpeechPending   = "pending"
	SpeechCompleted = "completed"
	SpeechFailed    = "failed"
)

// Speech is one POST /v1/audio/speech request: what was accepted, what was reserved, by when
// its audio is due, and how it ended. Who is generating it is its job's (speech.generate).
type Speech struct {
	ID              string
	KeyID           string
	TenantID        string
	Model           string // the tenant's alias
	Status          string // SpeechPending, SpeechCompleted, SpeechFailed
	ClientRequestID string // "" when the client sent none
	PayloadHash     []byte // SHA-256 of the request's idempotency fingerprint
	Request         []byte // the normalized request (JSON) with its upstream binding
	Pricing         []byte // the frozen quote (JSON)
	Reserved        money.Micros
	Charged         money.Micros
	Result          []byte // result (JSON) once completed; never changes after
	// ErrorKind classifies a failure for the transport (invalid, upstream, timeout, internal);
	// ErrorCode, ErrorMessage and ErrorParam are what the client is shown, sanitized.
	ErrorKind    string
	ErrorCode    string
	ErrorMessage string
	ErrorParam   string
	// ErrorDetail is the internal reason behind a failure, for operators only.
	ErrorDetail string
	// AttemptToken is the record's finish token, set at acceptance: FinishSpeech names it.
	// Who may finish the record is decided by its job's lease (internal/jobs), which fences
	// the finish's transaction. AttemptUntil is the end of the request's bounded wait: the
	// job's first run must have the audio by then (column attempt_until).
	AttemptToken string
	AttemptUntil time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
	FinishedAt   time.Time
}

// SpeechFinish is the fenced terminal write of a pending speech record.
type SpeechFinish struct {
	ID, Token    string
	Status       string // SpeechCompleted or SpeechFailed
	Charged      money.Micros
	Result       []byte
	ErrorKind    string
	ErrorCode    string
	ErrorMessage string
	ErrorParam   string
	ErrorDetail  string // the internal reason, for operators only (bounded by the caller)
	FinishedAt   time.Time
	// A record of a routed alias (several accounts) also keeps where it ran: Upstream is
	// the account it finally ran on (named by the finish event), Request, when set, replaces
	// the stored request (bound to that account, so usage and cost count it there), and
	// Route are the accounts tried or passed over before it, one event each, in order.
	Upstream string
	Request  []byte
	Route    []SpeechRoute
}

// SpeechRoute is one account a routed speech record tried or passed over, and why it moved
// on (an event of the record, step "route").
type SpeechRoute struct {
	Upstream string
	Detail   string
}

// SpeechStore is the part of Store that reads speech records.
type SpeechStore interface {
	Speech(ctx context.Context, id string) (Speech, error)
	// SpeechByRequestID finds the key's record with the given non-empty client_request_id.
	SpeechByRequestID(ctx context.Context, keyID, clientRequestID string) (Speech, error)
}

// SpeechTx is the part of Tx that writes speech records.
type SpeechTx interface {
	// CreateSpeech inserts a pending record; a second record with the same key and non-empty
	// client_request_id (or the same id) fails with ErrConflict.
	CreateSpeech(ctx context.Context, s Speech) error
	// FinishSpeech moves a pending record to its terminal status if f.Token is its token;
	// otherwise (already finished, or another token) it fails with ErrLeaseLost and changes
	// nothing. Run it in the same transaction as the settlement and the job's fenced end, so
	// money moves exactly once.
	FinishSpeech(ctx context.Context, f SpeechFinish) error
}
