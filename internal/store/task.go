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
	// ReplaceTaskResult rewrites the result document of a completed task: the only change a
	// completed task's result ever sees is the mark that its files were deleted (DELETE
	// /v1/videos/{id}), recorded before the files go so that no replica links them again.
	// ErrNotFound when the task is not completed.
	ReplaceTaskResult(ctx context.Context, id string, result []byte) error
}

// ErrLeaseLost reports a fenced write by a run whose lease was taken over (or whose record
// finished meanwhile): the write did not happen, and the caller must not act as if it had.
var ErrLeaseLost = errorString("lease lost")

type errorString string

func (e errorString) Error() string { return string(e) }

// TaskRun is a task as its job runs it: the whole record (request and pricing included) with
// the pipeline's resumable position.
type TaskRun struct {
	Task
	Step  string
	State []byte
}

// Advance is an update of a running task, applied only while the task is not terminal. It
// carries no lease: the caller fences it with its job's lease in the same transaction
// (JobTx.UpdateJob), so a run that lost its job writes nothing.
type Advance struct {
	ID           string
	Status       string
	Progress     int
	Step         string
	State        []byte
	Result       []byte
	ErrorCode    string
	ErrorMessage string
	Charged      money.Micros
	FinishedAt   time.Time
	// What the task's event records (TaskEvent), written with the update when the status or
	// the step changes, or when Detail is set: the job run's attempt, the upstream account
	// and job the task now waits on, and the internal reason behind the change.
	Attempt               int
	Upstream, UpstreamJob string
	Detail                string
}

// QueueStore reads tasks for their runs and counts them for metrics.
type QueueStore interface {
	// TaskRun reads the whole task with its step and state.
	TaskRun(ctx context.Context, id string) (TaskRun, error)
	CountTasks(ctx context.Context) (map[string]int, error)
	ActiveTasks(ctx context.Context) ([]TaskCount, error)
	// UpstreamSlots counts the upstream jobs in flight per account that has a limit.
	UpstreamSlots(ctx context.Context) (map[string]int, error)
}

// QueueTx is the write side of a task's run.
type QueueTx interface {
	// AdvanceTask writes a run's outcome; ErrLeaseLost when the task is already terminal.
	AdvanceTask(ctx context.Context, a Advance) error
	// TakeSlot counts one more upstream job of an account when fewer than its limit are
	// counted and no task waiting in line for the account comes first, and reports whether
	// it did. A task refused is put in line (or keeps its place) until WaitFor after Now.
	// Among the tasks in line, the first is the one whose tenant holds the fewest of the
	// account's slots, then whose key holds the fewest, then the one waiting longest: a freed
	// slot goes to whoever holds least, not to the oldest. ReleaseSlot counts one fewer.
	// They move in the transaction of the task state that records the slot, so a slot is
	// released exactly once.
	TakeSlot(ctx context.Context, t SlotTaker) (bool, error)
	ReleaseSlot(ctx context.Context, h SlotHolder) error
	// LeaveSlotLine takes the task out of any account's line it waits in: a task routed to
	// another account (one without a limit) no longer asks, and must not hold back a freed
	// slot from the next in line.
	LeaveSlotLine(ctx context.Context, taskID string) error
}

// SlotHolder is a task holding (or asking for) one of its upstream account's slots.
type SlotHolder struct {
	Account                 string
	TaskID, TenantID, KeyID string
}

// SlotTaker asks for a slot.
type SlotTaker struct {
	SlotHolder
	Limit int // the account's max_in_flight
	Now   time.Time
	// WaitFor is how long a refused task keeps its place in line without asking again: one
	// that stops asking (it ended, or its process died) stops holding others back then.
	WaitFor time.Duration
}

type TaskCount struct {
	Route, Status string
	N             int
}
