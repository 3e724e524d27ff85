package asset

import (
	"context"
	"errors"
	"time"

	"mediagen/internal/jobs"
	"mediagen/internal/store"
)

// Job kinds of the asset library.
const (
	IngestKind   = "asset.ingest"    // fetch, check, store and measure a new asset
	CallbackKind = "verify.callback" // deliver a finished verification's callback
)

// IngestJob is the job that processes an asset, enqueued with it.
func IngestJob(a store.Asset) store.Job {
	return store.Job{ID: jobs.ID(IngestKind, a.ID), Kind: IngestKind, Ref: a.ID, TenantID: a.TenantID, KeyID: a.KeyID,
		RunAt: a.CreatedAt, CreatedAt: a.CreatedAt}
}

// CallbackJob is the job that delivers a session's callback, enqueued when it finishes.
func CallbackJob(v store.VerifySession, at time.Time) store.Job {
	return store.Job{ID: jobs.ID(CallbackKind, v.ID), Kind: CallbackKind, Ref: v.ID, TenantID: v.TenantID, KeyID: v.KeyID,
		RunAt: at, CreatedAt: at}
}

// Kinds are the asset library's job kinds, to register with the engine.
func (s *Service) Kinds() []jobs.Kind {
	base := s.cfg.RetryBackoff
	return []jobs.Kind{
		{
			Name: IngestKind, Handler: ingest{s}, Workers: s.cfg.Concurrency, Poll: s.cfg.PollInterval,
			// A run may take as long as the largest fetch; its heartbeat keeps the lease.
			Timeout: s.cfg.Lease, MaxAttempts: s.cfg.MaxAttempts,
			// RetryBackoff, then 4× that per attempt, capped near 10 minutes.
			Backoff: func(attempt int) time.Duration {
				d := base
				for i := 1; i < attempt && d < 10*time.Minute; i++ {
					d *= 4
				}
				return d
			},
		},
		{
			Name: CallbackKind, Handler: callbacks{s}, Workers: 2, Poll: s.cfg.PollInterval,
			Timeout: 2 * s.cfg.CallbackTimeout,
		},
		{
			// Each run is one or a few calls to the library; a run that fails is retried
			// by the handler itself (RunIn) until the asset's deadline.
			// Poll: a run comes back after RunIn (the library's poll) only when the engine
			// looks, so it looks that often.
			Name: UpstreamKind, Handler: registrar{s}, Workers: s.cfg.Concurrency, Poll: min(s.cfg.PollInterval, s.upstreamPoll()),
			Timeout: 2 * time.Minute, MaxAttempts: 10,
		},
	}
}

// notify tells the engine that a job of the kind was enqueued.
func (s *Service) notify(kind string) {
	if s.cfg.Notify != nil {
		s.cfg.Notify(kind)
	}
}

// ingest is the job handler of asset processing.
type ingest struct{ s *Service }

// retryable is a source failure worth another attempt, with the outcome to record if none
// is left.
type retryable struct {
	out store.AssetOutcome
	err error
}

func (r *retryable) Error() string { return "asset source failed for now: " + r.err.Error() }
func (r *retryable) Unwrap() error { return r.err }

// Run processes the asset once and records the outcome with the job's end.
func (h ingest) Run(ctx context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
	s := h.s
	a, err := s.cfg.Store.Asset(ctx, j.Ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return jobs.Outcome{Done: true}, nil // deleted meanwhile
	case err != nil:
		return jobs.Outcome{}, err
	case a.Status != store.AssetProcessing:
		return jobs.Outcome{Done: true}, nil
	}
	if j.Attempt > 1 {
		// An earlier attempt may have died between storing its copy and recording it. The
		// asset is still Processing, so nothing under its directory is referenced: clear it.
		if err := s.cfg.Blobs.DeletePrefix(ctx, KeyPrefix+a.ID); err != nil {
			s.log.WarnContext(ctx, "earlier asset copies not removed", "asset", a.ID, "err", err)
		}
	}
	out, fetchErr := s.process(ctx, a, j.Token)
	if ctx.Err() != nil {
		// Stopped (or out of time): the engine hands the job back; this copy is nobody's.
		s.deleteCopy(out.BlobKey)
		return jobs.Outcome{}, ctx.Err()
	}
	if fetchErr != nil && transient(fetchErr) {
		s.deleteCopy(out.BlobKey)
		s.log.InfoContext(ctx, "asset source failed; retrying", "asset", a.ID, "attempt", j.Attempt, "reason", out.FailureReason)
		return jobs.Outcome{}, &retryable{out: out, err: fetchErr}
	}
	return h.record(ctx, a, j, out), nil
}

// GiveUp records the failure of an asset out of attempts: the last source failure, or an
// interruption when its runs kept dying.
func (h ingest) GiveUp(ctx context.Context, j jobs.Job, cause error) jobs.Outcome {
	a, err := h.s.cfg.Store.Asset(ctx, j.Ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return jobs.Outcome{Done: true}
	case err != nil:
		// The job ends here whatever happens, so the failure is recorded unread rather than
		// skipped: skipped, the asset would stay Processing, and count against its key's
		// asset_ingests_in_flight, forever. FinishAsset changes only a Processing asset.
		a = store.Asset{ID: j.Ref, Status: store.AssetProcessing}
	case a.Status != store.AssetProcessing:
		return jobs.Outcome{Done: true}
	}
	out := failed(FailInterrupted, "Processing was interrupted repeatedly. Create the asset again.")
	if r := (*retryable)(nil); errors.As(cause, &r) {
		out = r.out
	}
	return h.record(ctx, a, j, out)
}

// record is the outcome's write. An asset deleted meanwhile has nothing to record, and the
// copy this run stored is nobody's.
func (h ingest) record(ctx context.Context, a store.Asset, j jobs.Job, out store.AssetOutcome) jobs.Outcome {
	s := h.s
	out.ID, out.Attempts, out.At = a.ID, j.Attempt, s.now()
	// An asset of an upstream library is Active only once the library says so: its stored
	// copy is recorded, it stays Processing, and asset.upstream registers it (upstream.go).
	upstream := a.Upstream != "" && out.Status == store.AssetActive
	if upstream {
		out.Status = store.AssetProcessing
	}
	var gone bool
	var announced string
	tenantID := a.TenantID
	if tenantID == "" {
		tenantID = j.TenantID // the asset could not be read (GiveUp); its job names the tenant
	}
	return jobs.Outcome{
		Done: true,
		Apply: func(ctx context.Context, tx store.Tx) error {
			err := tx.FinishAsset(ctx, out)
			if errors.Is(err, store.ErrLeaseLost) {
				gone = true
				return nil
			}
			if err == nil && upstream {
				return tx.EnqueueJob(ctx, UpstreamJob(a, out.At))
			}
			if err == nil {
				// After the finish that changes only a Processing asset: announced once.
				announced, err = s.announceAsset(ctx, tx, assetEvent(tenantID, j.KeyID, a.ID, out.Status, out.At))
			}
			return err
		},
		After: func() {
			if gone {
				s.deleteCopy(out.BlobKey)
				return
			}
			s.wake(announced)
			if out.Status == store.AssetFailed {
				s.log.InfoContext(ctx, "asset failed", "asset", a.ID, "code", out.FailureCode)
			}
			if upstream {
				s.notify(UpstreamKind)
				return // counted when the library settles it
			}
			if s.cfg.Processed != nil {
				s.cfg.Processed.WithLabelValues(a.Type, out.Status, out.FailureCode).Inc()
			}
		},
		Discard: func() { s.deleteCopy(out.BlobKey) },
	}
}

func (s *Service) deleteCopy(key string) {
	if key == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = s.cfg.Blobs.Delete(ctx, key)
}

// callbacks is the job handler of verification callbacks.
type callbacks struct{ s *Service }

// Run makes one delivery attempt and records it: delivered on a 2xx answer; otherwise tried
// again after the backoff until CallbackAttempts, then failed. The attempts are counted on
// the session, which is what the X-Mediagen-Attempt header reports. Failures are logged; the
// end user never waits for them.
func (h callbacks) Run(ctx context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
	s := h.s
	v, err := s.cfg.Store.VerifySession(ctx, j.Ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return jobs.Outcome{Done: true}, nil
	case err != nil:
		return jobs.Outcome{}, err
	case v.CallbackState != store.CallbackPending:
		return jobs.Outcome{Done: true}, nil
	}
	attempt := v.CallbackAttempts + 1
	err = s.post(ctx, v.CallbackURL, v.CallbackBody, attempt)
	if ctx.Err() != nil {
		return jobs.Outcome{}, ctx.Err() // stopped: handed back, and tried again later
	}
	state, out := store.CallbackDelivered, jobs.Outcome{Done: true}
	if err != nil {
		state = store.CallbackPending
		out = jobs.Outcome{RunIn: s.cfg.CallbackBackoff[min(attempt-1, len(s.cfg.CallbackBackoff)-1)]}
		if attempt >= s.cfg.CallbackAttempts {
			state, out = store.CallbackFailed, jobs.Outcome{Done: true}
		}
		s.log.WarnContext(ctx, "verification callback failed", "session", v.ID, "attempt", attempt,
			"final", state == store.CallbackFailed, "err", err)
	}
	out.Apply = func(ctx context.Context, tx store.Tx) error { return finishCallback(ctx, tx, v.ID, state, attempt) }
	return out, nil
}

// GiveUp fails a callback whose delivery runs kept dying.
func (h callbacks) GiveUp(ctx context.Context, j jobs.Job, _ error) jobs.Outcome {
	v, err := h.s.cfg.Store.VerifySession(ctx, j.Ref)
	if err != nil || v.CallbackState != store.CallbackPending {
		return jobs.Outcome{Done: true}
	}
	return jobs.Outcome{Done: true, Apply: func(ctx context.Context, tx store.Tx) error {
		return finishCallback(ctx, tx, v.ID, store.CallbackFailed, v.CallbackAttempts)
	}}
}

// finishCallback records an attempt; a callback no longer pending has nothing to record.
func finishCallback(ctx context.Context, tx store.Tx, id, state string, attempts int) error {
	if err := tx.FinishCallback(ctx, id, state, attempts); err != nil && !errors.Is(err, store.ErrLeaseLost) {
		return err
	}
	return nil
}
