package store

import (
	"context"
	"time"
)

// Job is one unit of background work in the jobs table, the queue of internal/jobs. A job
// names the record it works on (Ref); the record keeps the domain state, the job only when
// and by whom it runs. A finished job is deleted. See docs/architecture.md#the-job-engine.
type Job struct {
	ID       string // unique; enqueueing an existing id is a no-op, so enqueueing is idempotent
	Kind     string // which handler runs it: "video.task", "asset.ingest", …
	Queue    string // "" for shared work; a process-local scope (one disk's retention) otherwise
	Ref      string // the record it is about (task, asset, session id); "" for periodic work
	TenantID string // for fair share between tenants ("" for operator work)
	KeyID    string // the key whose request made it, for fair share between a tenant's keys
	Priority int    // lower runs first
	Payload  []byte // kind-specific, fixed at enqueue
	// RequestID is the id of the request that enqueued the job ("" for periodic work): the
	// engine attaches it to the log lines of every run (logctx), so a request's lines and its
	// background work's share one id.
	RequestID string
	RunAt     time.Time
	// Deadline, when set, is when the job stops being worth running: the engine hands it to
	// the handler's give-up path instead of running it.
	Deadline  time.Time
	CreatedAt time.Time
	// TraceParent and TraceState are the W3C trace context of the request that enqueued the
	// job ("" when it had none): the process that runs it continues that trace
	// (internal/tracing, docs/tracing.md). EnqueueJob fills them from its context.
	TraceParent, TraceState string

	// Set by a claim.
	Token   string // the lease token; every write of this run is fenced by it
	Attempt int    // this run's attempt: runs started since the job last made progress
}

// JobUpdate is what a run of a job decided, written under its lease.
type JobUpdate struct {
	ID, Token string
	Done      bool      // delete the job: its work is over
	RunAt     time.Time // when it is due again (not Done)
	// Attempts is the attempt count to keep: 0 after progress, the run's attempt after a
	// failure, the run's attempt minus one when the run was handed back unfinished.
	Attempts  int
	LastError string
	// KeepLease writes a checkpoint inside a run: the lease, the attempt count and the due
	// time stay as they are.
	KeepLease bool
}

// JobCount is the number of jobs of one kind in one state, for metrics.
type JobCount struct {
	Kind    string
	Running bool // leased now
	Due     bool // not leased and due now
	N       int
	// Oldest is the earliest due time (run_at) in the group: for due jobs, since when the
	// oldest has waited for a worker (the queue-age metric).
	Oldest time.Time
}

// JobStore is the engine's side of the jobs table.
type JobStore interface {
	// ClaimJobs leases up to limit due jobs of the kind and queue (a job whose lease has
	// expired is due), counting an attempt on each. Each job taken goes to the tenant with
	// the fewest leased jobs of the kind relative to its weight (weights: tenant → weight,
	// absent ones weigh 1), ties to the tenant served least lately; within the tenant to the
	// key with the fewest leased jobs, ties likewise; within the key by priority (lower
	// first), then the oldest due. However long one tenant's backlog, another's due job is
	// taken at the next claim. See docs/architecture.md#priority-and-fair-share.
	ClaimJobs(ctx context.Context, kind, queue string, now time.Time, lease time.Duration, limit int, weights map[string]int) ([]Job, error)
	// RenewJob extends a held lease; ErrLeaseLost when it is no longer ours.
	RenewJob(ctx context.Context, id, token string, until time.Time) error
	// EnsureJob inserts the job unless its id exists (periodic work: one row per kind and
	// queue, whatever the number of processes).
	EnsureJob(ctx context.Context, j Job) error
	// CountJobs counts jobs by kind: leased, due and waiting.
	CountJobs(ctx context.Context, now time.Time) ([]JobCount, error)
}

// JobTx is the write side, inside Store.Transact, so that enqueueing commits with the
// record the job is about, and a run's outcome commits with its domain writes.
type JobTx interface {
	// EnqueueJob inserts a job; an existing id is left as it is.
	EnqueueJob(ctx context.Context, j Job) error
	// UpdateJob writes a run's outcome if the lease is still ours, else ErrLeaseLost.
	UpdateJob(ctx context.Context, u JobUpdate) error
}
