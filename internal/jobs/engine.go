// Package jobs is the one durable job engine: every piece of background work (video tasks,
// asset ingestion, verification callbacks, speech generation, retention sweeps) is a job of a
// kind in one table, run by the handler registered for its kind. The engine owns claiming,
// leases and their heartbeat, fencing, attempts, backoff with jitter, deadlines, fair share,
// graceful hand-back on shutdown and metrics; it knows nothing about any kind. See
// docs/architecture.md#the-job-engine.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/store"
)

// Job is a claimed job.
type Job = store.Job

// Store is what the engine needs of the database.
type Store interface {
	Transact(ctx context.Context, fn func(store.Tx) error) error
	ClaimJobs(ctx context.Context, kind, queue string, now time.Time, lease time.Duration, limit int, weights map[string]int) ([]store.Job, error)
	RenewJob(ctx context.Context, id, token string, until time.Time) error
	EnsureJob(ctx context.Context, j store.Job) error
	CountJobs(ctx context.Context, now time.Time) ([]store.JobCount, error)
}

// Apply is a domain write that commits in the transaction of a job's outcome, after the
// engine checked the job's lease in it: the write happens with the outcome or not at all.
type Apply func(ctx context.Context, tx store.Tx) error

// Outcome is what a run decided.
type Outcome struct {
	// Done ends the job (its row is deleted). Otherwise the job made progress and runs again
	// after RunIn, with its attempts reset.
	Done  bool
	RunIn time.Duration
	Apply Apply
	// After runs once the outcome committed (metrics, logs, notifications).
	After func()
	// Discard runs when the outcome could not be committed (the lease was lost, or the write
	// failed): it undoes what the run did outside the database, such as a stored copy.
	Discard func()
}

// Checkpoint commits apply under the job's lease while the run goes on, for example "about
// to call the upstream" before a call that must not be repeated blindly. ErrLeaseLost when
// the job was taken over: the run must stop.
type Checkpoint func(ctx context.Context, apply Apply) error

// Handler runs the jobs of one kind.
type Handler interface {
	// Run does one run of the job. An error is a failure worth another attempt: the engine
	// runs the job again after a backoff, and gives up after the kind's MaxAttempts.
	Run(ctx context.Context, j Job, cp Checkpoint) (Outcome, error)
	// GiveUp is the end of a job the engine will not run again: cause is the last error of
	// its final attempt, ErrInterrupted when its runs kept dying before they could record
	// anything, or ErrDeadline when it outlived its deadline. The outcome should be Done.
	GiveUp(ctx context.Context, j Job, cause error) Outcome
}

// FailureRecorder is implemented by a handler that keeps its own record of failed runs (a
// video task's history): the write Failed returns commits with the retry's schedule, under
// the job's lease. It must not fail for a record that is gone or finished.
type FailureRecorder interface {
	Failed(j Job, cause error) Apply
}

// Causes given to Handler.GiveUp.
var (
	ErrDeadline    = errors.New("job deadline passed")
	ErrInterrupted = errors.New("job runs kept being interrupted")
)

// Kind registers a handler and how its jobs run. Zero values get the defaults in Register.
type Kind struct {
	Name    string
	Queue   string // "" shared; a process-local scope (see store.Job.Queue)
	Handler Handler

	Workers int           // jobs of this kind running at once in this process (default 4)
	Batch   int           // most jobs claimed at once (default 16)
	Poll    time.Duration // how often to look for due jobs when not notified (default 250 ms)
	// Lease is how long a claim holds a job without a heartbeat; a running job renews it
	// every Lease/3, so the jobs of a killed process are taken over within one Lease.
	Lease   time.Duration // default 30 s
	Timeout time.Duration // bounds one run whatever its heartbeat (default 1 min)
	// Grace is how long Stop lets a running job finish before cancelling it; a job cut
	// short is handed back without counting the attempt. Default 0: cancel at once.
	Grace       time.Duration
	MaxAttempts int                             // attempts before GiveUp (default 8)
	Backoff     func(attempt int) time.Duration // delay after a failed attempt (default Exponential(1s, 2m))
	// Deadline, when set, gives up jobs this long after they were created.
	Deadline time.Duration
	// Every makes the kind periodic: one job per kind and queue, run every Every in one
	// process of all that share the database, never Done.
	Every time.Duration
}

// Config configures an Engine.
type Config struct {
	Store    Store
	Logger   *slog.Logger
	Registry prometheus.Registerer // nil: no metrics
	Now      func() time.Time
	// Weights gives each tenant's share of the workers of every kind, by tenant id (the
	// catalog's tenant weight); a tenant it omits weighs 1. It is asked at each claim, so a
	// catalog reload applies at once. nil: every tenant weighs 1.
	Weights func() map[string]int
	// Tracer, when set, makes each run a span "job.run" continuing the trace its job was
	// enqueued with (trace.go). nil: no spans.
	Tracer trace.Tracer
}

// Engine runs registered kinds until stopped.
type Engine struct {
	cfg     Config
	metrics *metrics
	mu      sync.Mutex
	kinds   map[string]*producer
	order   []*producer
	started bool
}

// New returns an engine with no kinds.
func New(cfg Config) *Engine {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	e := &Engine{cfg: cfg, kinds: map[string]*producer{}}
	e.metrics = newMetrics(cfg.Registry, cfg.Store, cfg.Now)
	return e
}

// Register adds a kind. It must be called before Start.
func (e *Engine) Register(k Kind) error {
	if k.Name == "" || k.Handler == nil {
		return errors.New("jobs: a kind needs a name and a handler")
	}
	k = withDefaults(k)
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return fmt.Errorf("jobs: kind %s registered after Start", k.Name)
	}
	if _, dup := e.kinds[k.Name]; dup {
		return fmt.Errorf("jobs: kind %s registered twice", k.Name)
	}
	p := &producer{e: e, k: k, notify: make(chan struct{}, 1), sem: make(chan struct{}, k.Workers),
		log: e.cfg.Logger.With("job_kind", k.Name)}
	e.kinds[k.Name] = p
	e.order = append(e.order, p)
	return nil
}

func withDefaults(k Kind) Kind {
	if k.Workers <= 0 {
		k.Workers = 4
	}
	if k.Batch <= 0 {
		k.Batch = 16
	}
	if k.Poll <= 0 {
		k.Poll = 250 * time.Millisecond
	}
	if k.Lease <= 0 {
		k.Lease = 30 * time.Second
	}
	if k.Timeout <= 0 {
		k.Timeout = time.Minute
	}
	if k.MaxAttempts <= 0 {
		k.MaxAttempts = 8
	}
	if k.Backoff == nil {
		k.Backoff = Exponential(time.Second, 2*time.Minute)
	}
	return k
}

// Start starts one producer per kind. Periodic kinds get their job row if they have none.
func (e *Engine) Start(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.started {
		return nil
	}
	now := e.cfg.Now()
	for _, p := range e.order {
		if p.k.Every > 0 {
			j := store.Job{ID: PeriodicID(p.k.Name, p.k.Queue), Kind: p.k.Name, Queue: p.k.Queue, RunAt: now, CreatedAt: now}
			if err := e.cfg.Store.EnsureJob(ctx, j); err != nil {
				return fmt.Errorf("jobs: periodic %s: %w", p.k.Name, err)
			}
		}
	}
	e.started = true
	for _, p := range e.order {
		p.start(ctx)
	}
	return nil
}

// Stop stops claiming, lets running jobs finish within their kind's Grace, cancels the rest
// and hands them back, and waits for all of it.
func (e *Engine) Stop() {
	e.mu.Lock()
	ps := append([]*producer(nil), e.order...)
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// Notify wakes the producer of a kind early: a job of it was just enqueued.
func (e *Engine) Notify(kind string) {
	e.mu.Lock()
	p := e.kinds[kind]
	e.mu.Unlock()
	if p != nil {
		p.wake()
	}
}

// PeriodicID is the id of the one job of a periodic kind and queue.
func PeriodicID(kind, queue string) string {
	if queue == "" {
		return kind
	}
	return kind + "@" + queue
}

// ID is the id of the job of a kind about a record: enqueueing it twice is a no-op.
func ID(kind, ref string) string { return kind + ":" + ref }

// Periodic adapts a function to a Handler for a periodic kind: each run is one pass; an error
// is logged and the pass is tried again after a backoff, never later than the next period.
type Periodic func(ctx context.Context) error

// Run implements Handler.
func (f Periodic) Run(ctx context.Context, _ Job, _ Checkpoint) (Outcome, error) {
	return Outcome{}, f(ctx)
}

// GiveUp implements Handler; periodic jobs are never given up.
func (f Periodic) GiveUp(context.Context, Job, error) Outcome { return Outcome{} }
