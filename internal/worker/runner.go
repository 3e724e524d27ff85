// Package worker is the lease-based task runner. The tasks table is the queue: a runner claims
// due tasks in batches, runs one step of each, and writes the outcome only while it still
// holds the lease (fencing by token). Expired leases are taken over by any runner, so a crashed
// process loses no task; a terminal outcome and its settlement commit in one transaction, so
// no task is charged twice.
package worker

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Outcome is what one step decided.
type Outcome struct {
	Status   string // queued or in_progress while running
	Progress int
	Step     string
	State    []byte
	RunIn    time.Duration // when the task is due again
	Final    *Final        // set when the task reaches a terminal state
}

// Final is a terminal outcome.
type Final struct {
	Status       string // completed, failed, expired
	Result       []byte
	ErrorCode    string
	ErrorMessage string
	Charge       money.Micros // the settled amount; 0 releases the whole reservation
}

// Handler runs steps. Step returns an error for a transient failure (the step is retried with
// backoff); a permanent failure is a Final outcome. save records progress within a step while
// keeping the lease (for example "about to submit" before an upstream call).
type Handler interface {
	Step(ctx context.Context, c store.Claimed, save func(Outcome) error) (Outcome, error)
	// Expired is the terminal outcome of a task past the deadline.
	Expired(c store.Claimed) Final
}

// DefaultLease is 30 s: long enough that two missed heartbeats (every 10 s) on a busy
// database do not lose a live step, short enough that a task of a process killed mid-step is
// taken over within half a minute instead of waiting out a long lease.
const DefaultLease = 30 * time.Second

// Config tunes a Runner. Zero values get the defaults in New.
type Config struct {
	Store    store.Store
	Handler  Handler
	Logger   *slog.Logger
	Metrics  *Metrics
	Overages *billing.Overages // counts settlements above their reservation (may be nil)
	Workers  int               // steps running at once (default 4)
	Batch    int               // most tasks claimed per query (default 16)
	// Lease is how long a claim holds a task without a heartbeat: the running step renews it
	// every Lease/3, so a crashed process's tasks are taken over within one Lease. Default 30 s.
	Lease       time.Duration
	StepTimeout time.Duration // bounds one step whatever its heartbeat; default 1 min
	Idle        time.Duration // poll interval when nothing is due (default 250 ms)
	MaxAttempts int           // failed attempts of one step before the task fails (default 8)
	BackoffBase time.Duration // first retry delay (default 1 s), doubled per attempt, with jitter
	BackoffMax  time.Duration // retry delay cap (default 2 min)
	Deadline    time.Duration // a task not terminal this long after creation expires (default 6 h)
	Now         func() time.Time
}

// Runner claims and runs tasks until stopped.
type Runner struct {
	cfg    Config
	notify chan struct{}
	cancel context.CancelFunc
	done   chan struct{}
	sem    chan struct{}
	wg     sync.WaitGroup
}

// New returns a runner; Start makes it work.
func New(cfg Config) *Runner {
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.Batch <= 0 {
		cfg.Batch = 16
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = time.Minute
	}
	if cfg.Idle <= 0 {
		cfg.Idle = 250 * time.Millisecond
	}
	if cfg.MaxAttempts <= 0 {
		cfg.MaxAttempts = 8
	}
	if cfg.BackoffBase <= 0 {
		cfg.BackoffBase = time.Second
	}
	if cfg.BackoffMax <= 0 {
		cfg.BackoffMax = 2 * time.Minute
	}
	if cfg.Deadline <= 0 {
		cfg.Deadline = 6 * time.Hour
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Runner{cfg: cfg, notify: make(chan struct{}, 1), sem: make(chan struct{}, cfg.Workers)}
}

// Notify wakes the runner early (a task was just accepted).
func (r *Runner) Notify() {
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// Start runs the claim loop in the background.
func (r *Runner) Start(ctx context.Context) {
	ctx, r.cancel = context.WithCancel(ctx)
	r.done = make(chan struct{})
	go r.loop(ctx)
}

// Stop stops claiming, lets running steps finish, and hands back the leases of steps that
// were cut short, so another runner takes them at once instead of after the lease.
func (r *Runner) Stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
	r.wg.Wait()
}

func (r *Runner) loop(ctx context.Context) {
	defer close(r.done)
	for {
		free := cap(r.sem) - len(r.sem)
		n := 0
		if free > 0 {
			claimed, err := r.cfg.Store.ClaimDue(ctx, r.cfg.Now(), r.cfg.Lease, min(free, r.cfg.Batch))
			if err != nil && ctx.Err() == nil {
				r.cfg.Logger.Error("claim failed", "err", err)
			}
			n = len(claimed)
			if n > 0 {
				r.cfg.Logger.Debug("claimed tasks", "count", n)
			}
			for _, c := range claimed {
				r.sem <- struct{}{}
				r.wg.Add(1)
				go func(c store.Claimed) {
					// A freed slot wakes the loop, so the next due task starts without waiting.
					defer func() { <-r.sem; r.wg.Done(); r.Notify() }()
					r.run(ctx, c)
				}(c)
			}
		}
		if n > 0 && n == min(free, r.cfg.Batch) {
			continue // more may be due right now
		}
		select {
		case <-ctx.Done():
			return
		case <-r.notify:
		case <-time.After(r.cfg.Idle):
		}
	}
}

// run executes one step of a claimed task and writes its outcome under the lease.
func (r *Runner) run(loopCtx context.Context, c store.Claimed) {
	log := r.cfg.Logger.With("task", c.ID, "route", c.Route, "step", c.Step)
	// Steps get their own context: stopping the loop does not cut a step mid-write; the step
	// timeout bounds it instead.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(loopCtx), r.cfg.StepTimeout)
	defer cancel()
	now := r.cfg.Now()
	if now.Sub(c.CreatedAt) > r.cfg.Deadline {
		f := r.cfg.Handler.Expired(c)
		r.finish(ctx, log, c, Outcome{Final: &f})
		return
	}
	save := func(o Outcome) error {
		return r.cfg.Store.Transact(ctx, func(tx store.Tx) error {
			return tx.AdvanceTask(ctx, r.advance(c, o, c.Attempts, true))
		})
	}
	start := time.Now()
	stopBeat := r.heartbeat(ctx, cancel, log, c)
	out, err := r.cfg.Handler.Step(ctx, c, save)
	stopBeat()
	r.cfg.Metrics.stepDone(c.Route, c.Step, time.Since(start), err)
	if errors.Is(err, store.ErrLeaseLost) {
		log.Warn("lease lost during step; another runner owns the task")
		return
	}
	if err != nil {
		if loopCtx.Err() != nil {
			// Shutting down: hand the task back rather than count a failure.
			_ = r.cfg.Store.ReleaseLease(context.WithoutCancel(ctx), c.ID, c.Token)
			return
		}
		r.retry(ctx, log, c, err)
		return
	}
	if out.Final != nil {
		r.finish(ctx, log, c, out)
		return
	}
	err = r.cfg.Store.Transact(ctx, func(tx store.Tx) error {
		return tx.AdvanceTask(ctx, r.advance(c, out, 0, false))
	})
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		log.Error("advance failed", "err", err)
	}
}

// heartbeat renews the task's lease every Lease/3 while its step runs. A renewal that finds
// the lease taken (the process stalled past the lease and another runner took over) cancels
// the step: its writes would be fenced out anyway. The returned func stops the heartbeat
// and waits for a renewal in flight.
func (r *Runner) heartbeat(ctx context.Context, cancel context.CancelFunc, log *slog.Logger, c store.Claimed) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(r.cfg.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := r.cfg.Store.RenewLease(ctx, c.ID, c.Token, r.cfg.Now().Add(r.cfg.Lease))
			switch {
			case errors.Is(err, store.ErrLeaseLost):
				log.Warn("lease lost while the step ran; stopping it")
				cancel()
				return
			case err != nil && ctx.Err() == nil:
				log.Warn("lease renewal failed; will try again", "err", err)
			}
		}
	}()
	return func() { close(stop); <-done }
}

func (r *Runner) advance(c store.Claimed, o Outcome, attempts int, keepLease bool) store.Advance {
	status := o.Status
	if status == "" {
		status = c.Status
	}
	progress := max(o.Progress, c.Progress) // progress never goes back
	if progress > 99 {
		progress = 99 // 100 belongs to completed
	}
	step := o.Step
	if step == "" {
		step = c.Step
	}
	state := o.State
	if state == nil {
		state = c.State
	}
	return store.Advance{ID: c.ID, Token: c.Token, Status: status, Progress: progress, Step: step, State: state,
		Attempts: attempts, NextRunAt: r.cfg.Now().Add(o.RunIn), KeepLease: keepLease}
}

// retry schedules the failed step again with exponential backoff and jitter, or fails the
// task once the step has failed MaxAttempts times.
func (r *Runner) retry(ctx context.Context, log *slog.Logger, c store.Claimed, cause error) {
	attempts := c.Attempts + 1
	r.cfg.Metrics.retried(c.Route, c.Step)
	if attempts >= r.cfg.MaxAttempts {
		log.Error("step keeps failing; failing the task", "attempts", attempts, "err", cause)
		r.finish(ctx, log, c, Outcome{Final: &Final{Status: store.StatusFailed, ErrorCode: "video_generation_failed",
			ErrorMessage: "The video could not be generated. Start a new task deliberately if you still need it."}})
		return
	}
	delay := backoff(r.cfg.BackoffBase, r.cfg.BackoffMax, attempts)
	log.Warn("step failed; will retry", "attempts", attempts, "in", delay, "err", cause)
	a := r.advance(c, Outcome{RunIn: delay}, attempts, false)
	err := r.cfg.Store.Transact(ctx, func(tx store.Tx) error { return tx.AdvanceTask(ctx, a) })
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		log.Error("scheduling retry failed", "err", err)
	}
}

// backoff is base × 2^(attempt-1), capped, with full jitter in its upper half so retries of
// many tasks spread out.
func backoff(base, maxDelay time.Duration, attempt int) time.Duration {
	d := base
	for i := 1; i < attempt && d < maxDelay; i++ {
		d *= 2
	}
	d = min(d, maxDelay)
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

// finish writes the terminal state and the settlement in one transaction. The state change is
// a compare-and-swap (lease token and non-terminal status), so if it does not apply, neither
// does the settlement: money moves once.
func (r *Runner) finish(ctx context.Context, log *slog.Logger, c store.Claimed, o Outcome) {
	f := o.Final
	now := r.cfg.Now()
	progress := c.Progress
	if f.Status == store.StatusCompleted {
		progress = 100
	}
	charge := f.Charge
	if f.Status != store.StatusCompleted {
		charge = 0
	}
	state := o.State
	if state == nil {
		state = c.State
	}
	a := store.Advance{ID: c.ID, Token: c.Token, Status: f.Status, Progress: progress, Step: "done", State: state,
		Attempts: c.Attempts, NextRunAt: now, Result: f.Result, ErrorCode: f.ErrorCode, ErrorMessage: f.ErrorMessage,
		Charged: charge, FinishedAt: now}
	err := r.cfg.Store.Transact(ctx, func(tx store.Tx) error {
		if err := tx.AdvanceTask(ctx, a); err != nil {
			return err
		}
		_, err := billing.Settle(ctx, tx, c.KeyID, c.ID, c.Reserved, charge, now)
		return err
	})
	switch {
	case err == nil:
		r.cfg.Metrics.finished(c.Route, f.Status, c.Reserved, charge)
		if charge > c.Reserved {
			r.cfg.Overages.Record(log, c.Route, billing.QuoteCurrency(c.Pricing), c.KeyID, c.ID, c.Reserved, charge)
		}
		log.Info("task finished", "status", f.Status, "code", f.ErrorCode, "reserved", c.Reserved.String(), "charged", charge.String())
	case errors.Is(err, store.ErrLeaseLost):
		log.Warn("lease lost before finishing; another runner owns the task")
	default:
		log.Error("finishing failed; will retry", "err", err)
		r.retry(ctx, log, c, err)
	}
}
