package jobs

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"mediagen/internal/logctx"
	"mediagen/internal/store"
	"mediagen/internal/tenantctx"
	"mediagen/internal/tracing"
)

// producer claims and runs the jobs of one kind (River's producer per queue).
type producer struct {
	e      *Engine
	k      Kind
	log    *slog.Logger
	notify chan struct{}
	sem    chan struct{}

	cancel   context.CancelFunc // stops the claim loop
	stopping chan struct{}      // closed by stop: runs start their grace
	done     chan struct{}
	runs     sync.WaitGroup
	stopOnce sync.Once
}

func (p *producer) wake() {
	select {
	case p.notify <- struct{}{}:
	default:
	}
}

func (p *producer) start(ctx context.Context) {
	ctx, p.cancel = context.WithCancel(ctx)
	p.stopping, p.done = make(chan struct{}), make(chan struct{})
	go p.loop(ctx)
}

// stop may be called more than once; only the first call stops.
func (p *producer) stop() {
	if p.cancel == nil {
		return
	}
	p.stopOnce.Do(func() {
		close(p.stopping)
		p.cancel()
		<-p.done
		p.runs.Wait()
	})
}

func (p *producer) loop(ctx context.Context) {
	defer close(p.done)
	for {
		free := cap(p.sem) - len(p.sem)
		want := min(free, p.k.Batch)
		n := 0
		if want > 0 {
			var weights map[string]int
			if p.e.cfg.Weights != nil {
				weights = p.e.cfg.Weights()
			}
			claimed, err := p.e.cfg.Store.ClaimJobs(ctx, p.k.Name, p.k.Queue, p.e.cfg.Now(), p.k.Lease, want, weights)
			if err != nil && ctx.Err() == nil {
				p.log.Error("claim failed", "err", err)
			}
			n = len(claimed)
			for _, j := range claimed {
				p.sem <- struct{}{}
				p.runs.Add(1)
				go func() {
					// A freed slot wakes the loop, so the next due job starts without waiting.
					defer func() { <-p.sem; p.runs.Done(); p.wake() }()
					p.run(ctx, j)
				}()
			}
		}
		if n > 0 && n == want {
			continue // more may be due right now
		}
		select {
		case <-ctx.Done():
			return
		case <-p.notify:
		case <-time.After(p.k.Poll):
		}
	}
}

// run executes one claimed job and commits its outcome under the lease.
func (p *producer) run(loopCtx context.Context, j Job) {
	log := p.log.With("job", j.ID, "attempt", j.Attempt)
	// A run gets its own context: stopping the loop does not cut it mid-write. Stop cancels
	// it after the kind's grace; the timeout bounds it whatever its heartbeat. It carries the
	// id of the request that enqueued the job, so the handler's lines carry it too (logctx),
	// and its tenant and key, so what the run waits for in shared budgets (the media budget)
	// is served fairly between tenants (tenantctx).
	runCtx := logctx.WithRequestID(context.WithoutCancel(loopCtx), j.RequestID)
	runCtx = tenantctx.With(runCtx, j.TenantID, j.KeyID)
	log = logctx.Logger(runCtx, log)
	ctx, cancel := context.WithTimeout(runCtx, p.k.Timeout)
	defer cancel()
	ctx, span := p.traceRun(ctx, j)
	defer span.End()
	stopWatch := p.cancelAfterGrace(cancel)
	defer stopWatch()
	now := p.e.cfg.Now()
	switch {
	case p.k.Every == 0 && p.expired(j, now):
		p.finish(ctx, log, j, p.k.Handler.GiveUp(ctx, j, ErrDeadline), "gave_up")
		return
	case p.k.Every == 0 && j.Attempt > p.k.MaxAttempts:
		// Every earlier run of it died before recording anything: a job that kills its
		// process must not take it down forever.
		log.Error("job runs keep being interrupted; giving up")
		p.finish(ctx, log, j, p.k.Handler.GiveUp(ctx, j, ErrInterrupted), "gave_up")
		return
	}
	cp := func(ctx context.Context, apply Apply) error {
		return p.e.cfg.Store.Transact(ctx, func(tx store.Tx) error {
			if err := tx.UpdateJob(ctx, store.JobUpdate{ID: j.ID, Token: j.Token, KeepLease: true}); err != nil {
				return err
			}
			return apply(ctx, tx)
		})
	}
	start := time.Now()
	p.e.metrics.running(p.k.Name, 1)
	stopBeat := p.heartbeat(ctx, cancel, log, j)
	out, err := p.k.Handler.Run(ctx, j, cp)
	stopBeat()
	p.e.metrics.running(p.k.Name, -1)
	p.e.metrics.ran(p.k.Name, time.Since(start))
	tracing.Fail(span, err)
	switch {
	case errors.Is(err, store.ErrLeaseLost):
		noteOutcome(ctx, "lease_lost")
		log.Warn("lease lost during the run; another process owns the job")
		p.e.metrics.outcome(p.k.Name, "lease_lost")
	case err != nil && p.isStopping():
		p.handBack(log, j)
	case err != nil:
		p.retry(ctx, log, j, err)
	default:
		if out.Done && p.k.Every == 0 {
			p.finish(ctx, log, j, out, "done")
			return
		}
		p.again(ctx, log, j, out)
	}
}

// cancelAfterGrace cancels the run once Stop was called and the kind's grace has passed.
func (p *producer) cancelAfterGrace(cancel context.CancelFunc) func() {
	quit := make(chan struct{})
	go func() {
		select {
		case <-quit:
			return
		case <-p.stopping:
		}
		if p.k.Grace > 0 {
			t := time.NewTimer(p.k.Grace)
			defer t.Stop()
			select {
			case <-quit:
				return
			case <-t.C:
			}
		}
		cancel()
	}()
	return func() { close(quit) }
}

func (p *producer) isStopping() bool {
	select {
	case <-p.stopping:
		return true
	default:
		return false
	}
}

func (p *producer) expired(j Job, now time.Time) bool {
	if !j.Deadline.IsZero() && now.After(j.Deadline) {
		return true
	}
	return p.k.Deadline > 0 && now.Sub(j.CreatedAt) > p.k.Deadline
}

// heartbeat renews the lease every Lease/3 while the job runs. A renewal that finds the lease
// taken (the process stalled past the lease and another took over) cancels the run: its
// writes would be fenced out anyway. The returned func stops it and waits for a renewal in
// flight.
func (p *producer) heartbeat(ctx context.Context, cancel context.CancelFunc, log *slog.Logger, j Job) func() {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(p.k.Lease / 3)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			err := p.e.cfg.Store.RenewJob(ctx, j.ID, j.Token, p.e.cfg.Now().Add(p.k.Lease))
			switch {
			case errors.Is(err, store.ErrLeaseLost):
				log.Warn("lease lost while the job ran; stopping it")
				cancel()
				return
			case err != nil && ctx.Err() == nil:
				log.Warn("lease renewal failed; will try again", "err", err)
			}
		}
	}()
	return func() { close(stop); <-done }
}

// writeCtx is the context of an outcome's commit: a run cut short by Stop still records
// what it finished.
func writeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
}

// commit writes the job update and the outcome's domain write in one transaction.
func (p *producer) commit(ctx context.Context, u store.JobUpdate, apply Apply) error {
	ctx, cancel := writeCtx(ctx)
	defer cancel()
	return p.e.cfg.Store.Transact(ctx, func(tx store.Tx) error {
		if err := tx.UpdateJob(ctx, u); err != nil {
			return err
		}
		if apply == nil {
			return nil
		}
		return apply(ctx, tx)
	})
}

// finish ends the job with its outcome.
func (p *producer) finish(ctx context.Context, log *slog.Logger, j Job, out Outcome, label string) {
	p.record(ctx, log, j, store.JobUpdate{ID: j.ID, Token: j.Token, Done: true}, out, label)
}

// again schedules the next run of a job that made progress (or of a periodic job).
func (p *producer) again(ctx context.Context, log *slog.Logger, j Job, out Outcome) {
	in := out.RunIn
	if p.k.Every > 0 && in <= 0 {
		in = p.k.Every
	}
	p.record(ctx, log, j, store.JobUpdate{ID: j.ID, Token: j.Token, RunAt: p.e.cfg.Now().Add(in)}, out, "again")
}

// record commits an outcome with its job update. If the commit fails for another reason than
// a lost lease, the job is retried like a failed run, so the outcome is not lost; either way
// an uncommitted outcome's side effects are discarded.
func (p *producer) record(ctx context.Context, log *slog.Logger, j Job, u store.JobUpdate, out Outcome, label string) {
	err := p.commit(ctx, u, out.Apply)
	if err != nil && out.Discard != nil {
		out.Discard()
	}
	switch {
	case err == nil:
		p.e.metrics.outcome(p.k.Name, label)
		noteOutcome(ctx, label)
		if out.After != nil {
			out.After()
		}
	case errors.Is(err, store.ErrLeaseLost):
		log.Warn("lease lost before recording the outcome; another process owns the job", "outcome", label)
		p.e.metrics.outcome(p.k.Name, "lease_lost")
	default:
		log.Error("recording the outcome failed; will retry", "outcome", label, "err", err)
		p.retry(ctx, log, j, err)
	}
}

// retry schedules a failed job again after its backoff, or gives it up after MaxAttempts.
// Periodic jobs are never given up: they wait for their next period.
func (p *producer) retry(ctx context.Context, log *slog.Logger, j Job, cause error) {
	if p.k.Every == 0 && j.Attempt >= p.k.MaxAttempts {
		log.Error("job keeps failing; giving up", "err", cause)
		out := p.k.Handler.GiveUp(ctx, j, cause)
		err := p.commit(ctx, store.JobUpdate{ID: j.ID, Token: j.Token, Done: true}, out.Apply)
		if err != nil && out.Discard != nil {
			out.Discard()
		}
		if err != nil {
			log.Error("giving up the job failed; its lease will expire and it runs again", "err", err)
			return
		}
		p.e.metrics.outcome(p.k.Name, "gave_up")
		noteOutcome(ctx, "gave_up")
		if out.After != nil {
			out.After()
		}
		return
	}
	delay := p.k.Backoff(j.Attempt)
	attempts := j.Attempt
	if p.k.Every > 0 {
		delay, attempts = min(delay, p.k.Every), 0
	}
	log.Warn("job failed; will retry", "in", delay, "err", cause)
	var apply Apply
	if fr, ok := p.k.Handler.(FailureRecorder); ok {
		apply = fr.Failed(j, cause)
	}
	err := p.commit(ctx, store.JobUpdate{ID: j.ID, Token: j.Token, RunAt: p.e.cfg.Now().Add(delay),
		Attempts: attempts, LastError: truncate(cause.Error(), 500)}, apply)
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		log.Error("scheduling the retry failed", "err", err)
	}
	p.e.metrics.outcome(p.k.Name, "retry")
	noteOutcome(ctx, "retry")
}

// handBack returns a job cut short by Stop: due at once, its attempt uncounted, so another
// process (or the next start) runs it without waiting out the lease.
func (p *producer) handBack(log *slog.Logger, j Job) {
	ctx, cancel := writeCtx(context.Background())
	defer cancel()
	err := p.commit(ctx, store.JobUpdate{ID: j.ID, Token: j.Token, RunAt: p.e.cfg.Now(), Attempts: max(j.Attempt-1, 0)}, nil)
	if err != nil && !errors.Is(err, store.ErrLeaseLost) {
		log.Warn("job not handed back; it runs again when its lease expires", "err", err)
	}
	p.e.metrics.outcome(p.k.Name, "handed_back")
}

// Exponential is base × 2^(attempt-1), capped at max, with full jitter in its upper half so
// that retries of many jobs spread out.
func Exponential(base, maxDelay time.Duration) func(int) time.Duration {
	return func(attempt int) time.Duration {
		d := base
		for i := 1; i < attempt && d < maxDelay; i++ {
			d *= 2
		}
		d = min(d, maxDelay)
		return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	}
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
