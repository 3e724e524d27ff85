package store

import (
	"context"
	"time"
)

// TaskEvent is one recorded moment of a task's life, appended in the transaction of the
// change it records and never changed: its acceptance, each change of status or pipeline
// step, each failed attempt of its job, its end. Operators read them to answer a customer
// who quotes a task id (docs/admin.md, "Support: finding a task"); tenants never see them.
type TaskEvent struct {
	TaskID string
	Seq    int // 0 for the acceptance, then 1, 2, … in the order written
	At     time.Time
	// From and To are the task's status before and after; equal when only the step changed
	// or an attempt failed.
	From, To string
	Step     string // the pipeline step the task is at after the change
	Attempt  int    // the job run that wrote it (1 for the first); 0 for the acceptance
	// Upstream and UpstreamJob are the account and its job id the task is waiting on after
	// the change ("" before a submit).
	Upstream, UpstreamJob string
	// Detail is the internal reason, for operators only: the error behind a failed attempt,
	// or behind a terminal failure whose public message is sanitized.
	Detail string
}

// Page bounds and orders a search. The cursor is a position (CreatedAt, ID) in the order of
// the search: results come strictly after it, so a page is stable under inserts (newer rows
// come before a newest-first cursor and are never shown twice; no row is skipped).
type Page struct {
	Limit int  // at most this many rows; the caller bounds it (0: SearchDefaultLimit)
	Asc   bool // oldest first; newest first by default
	// AfterAt and AfterID are the last row of the previous page (zero: from the start).
	AfterAt time.Time
	AfterID string
}

// SearchDefaultLimit is the rows a search returns unless asked otherwise; SearchMaxLimit is
// the most it returns, whatever it is asked.
const (
	SearchDefaultLimit = 50
	SearchMaxLimit     = 500
)

// TaskFilter selects tasks; empty fields do not filter. CreatedFrom is inclusive and
// CreatedTo exclusive.
type TaskFilter struct {
	TenantID, KeyID, Status, Model, Route string
	UpstreamJob                           string // a task that was ever waiting on this upstream job id
	CreatedFrom, CreatedTo                time.Time
	Page
}

// SpeechFilter selects speech records like TaskFilter.
type SpeechFilter struct {
	TenantID, KeyID, Status, Model string
	CreatedFrom, CreatedTo         time.Time
	Page
}

// AssetFilter selects assets.
type AssetFilter struct {
	TenantID, KeyID, GroupID, Status string
	CreatedFrom, CreatedTo           time.Time
	Page
}

// JobState is a job row as it stands, with what its runs left: how many attempts since it
// last made progress and the last one's error (internal text, for operators).
type JobState struct {
	Job
	Attempts   int
	LastError  string
	LeaseUntil time.Time
}

// SupportStore is what operators read to answer support questions: a record's whole story.
type SupportStore interface {
	// TaskEvents lists a task's events in the order they were written.
	TaskEvents(ctx context.Context, taskID string) ([]TaskEvent, error)
	// SpeechEvents lists a speech record's events the same way: its acceptance (event 0, the
	// record itself), each takeover of an abandoned attempt, and its end.
	SpeechEvents(ctx context.Context, speechID string) ([]TaskEvent, error)
	// SearchTasks lists tasks in creation order (Request and Pricing left empty).
	SearchTasks(ctx context.Context, f TaskFilter) ([]Task, error)
	SearchSpeeches(ctx context.Context, f SpeechFilter) ([]Speech, error)
	SearchAssets(ctx context.Context, f AssetFilter) ([]Asset, error)
	// LedgerTxns lists the ledger transactions about ref (a task, speech or asset id), with
	// their entries, oldest first.
	LedgerTxns(ctx context.Context, ref string) ([]Txn, error)
	// KeyLedger lists the latest limit ledger transactions with an entry on one of the key's
	// accounts, newest first, each with all its entries (the console's key page).
	KeyLedger(ctx context.Context, keyID string, limit int) ([]Txn, error)
	// Jobs reads the jobs with these ids that are still queued (a finished job is deleted).
	Jobs(ctx context.Context, ids []string) ([]JobState, error)
}

// SupportTx appends what the support view reads.
type SupportTx interface {
	// AppendTaskEvent appends an event to an existing task (nothing when the task does not
	// exist): used for what happens outside a status change, such as a failed attempt.
	AppendTaskEvent(ctx context.Context, e TaskEvent) error
}
