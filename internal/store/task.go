package store

import (
	"context"
	"time"

	"mediagen/internal/money"
)

// Task statuses, as the contract names them.
const (
	StatusQueued     = "queued"
	StatusInProgress = "in_progress"
	StatusCompleted  = "completed"
	StatusFailed     = "failed"
	StatusExpired    = "expired"
)

// Terminal reports whether a status is final.
func Terminal(status string) bool {
	return status == StatusCompleted || status == StatusFailed || status == StatusExpired
}

// Task is a video task: what was accepted, what was reserved, and how far it got.
type Task struct {
	ID              string
	KeyID           string
	TenantID        string
	Route           string // native, enhancement, production
	Model           string // the tenant's alias
	Status          string
	Progress        int
	ClientRequestID string
	PayloadHash     []byte // SHA-256 of the canonical request body
	Request         []byte // the normalized request (JSON), what the runner executes
	Pricing         []byte // the frozen quote (JSON): rate, band, measured inputs
	Reserved        money.Micros
	Charged         money.Micros
	Result          []byte // result metadata (JSON) once completed; never changes after
	ErrorCode       string
	ErrorMessage    string
	CreatedAt       time.Time
	UpdatedAt       time.Time
	FinishedAt      time.Time
	NextRunAt       time.Time
}

// TaskStore is the part of Store that reads tasks.
type TaskStore interface {
	// Task and TaskByRequestID leave Request and Pricing empty: only the runner needs them,
	// and it gets them with its claims.
	Task(ctx context.Context, id string) (Task, error)
	TaskByRequestID(ctx context.Context, keyID, clientRequestID string) (Task, error)
}

// TaskTx is the part of Tx that writes tasks.
type TaskTx interface {
	// CreateTask inserts a task; a second task with the same key and client_request_id fails
	// with ErrConflict.
	CreateTask(ctx context.Context, t Task) error
	// TasksInFlight counts the queued and in-progress tasks of a key and of a tenant. The
	// counts move with CreateTask and the terminal AdvanceTask; after a CreateTask they
	// include it, and on PostgreSQL the counter rows stay locked by this transaction, so
	// concurrent creates of the key or tenant on any replica wait and then see it.
	TasksInFlight(ctx context.Context, keyID, tenantID string) (InFlight, error)
}

// InFlight is how much unfinished work a key and its tenant have.
type InFlight struct {
	Key, Tenant int
}

// ErrLeaseLost reports a fenced write by a worker whose lease was taken over (or whose task
// already reached a terminal state): the write is refused and nothing changes.
var ErrLeaseLost = errorString("lease lost")

type errorString string

func (e errorString) Error() string { return string(e) }

// Claimed is a task leased to one worker.
type Claimed struct {
	Task
	Token    string // the lease token; every write of this step is fenced by it
	Attempts int    // failed attempts of the current step
	Step     string
	State    []byte
}

// Advance is a fenced update of a claimed task: applied only if the lease token still
// matches and the task is not terminal.
type Advance struct {
	ID, Token string
	Status    string
	Progress  int
	Step      string
	State     []byte
	Attempts  int
	NextRunAt time.Time
	// Terminal fields, set with a terminal Status.
	Result       []byte
	ErrorCode    string
	ErrorMessage string
	Charged      money.Micros
	FinishedAt   time.Time
	// KeepLease keeps the lease (for a write made before an upstream call within one step);
	// otherwise the lease is released with the write.
	KeepLease bool
}

// QueueStore is the work-queue side of the store.
type QueueStore interface {
	// ClaimDue leases up to limit tasks that are due (next_run_at <= now) and not leased
	// (or whose lease expired), with a fresh token each.
	ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]Claimed, error)
	// ReleaseLease hands a lease back (graceful shutdown), making the task due at once.
	ReleaseLease(ctx context.Context, id, token string) error
	// RenewLease moves the lease of a task still held under token (and not terminal) to
	// until: the heartbeat of a running step. ErrLeaseLost when the token no longer holds it.
	RenewLease(ctx context.Context, id, token string, until time.Time) error
	// CountTasks reports unfinished tasks by status, for metrics and tests.
	CountTasks(ctx context.Context) (map[string]int, error)
	// ActiveTasks counts the queued and in-progress tasks by route and status. It reads only
	// the index of unfinished tasks, so it costs what is pending, not what is stored.
	ActiveTasks(ctx context.Context) ([]TaskCount, error)
}

// QueueTx is the fenced write inside a transaction (so settlement commits with it).
type QueueTx interface {
	AdvanceTask(ctx context.Context, a Advance) error
}

// TaskCount is the number of tasks of one route in one status.
type TaskCount struct {
	Route, Status string
	N             int
}
