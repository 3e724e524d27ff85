package speech

import (
	"context"
	"errors"
	"sync"
	"time"

	"mediagen/internal/logctx"
	"mediagen/internal/store"
)

// errSuperseded ends an attempt whose record was taken over or finished by someone else.
var errSuperseded = errors.New("speech attempt superseded")

// heartbeat keeps a live attempt's lease: it renews the record's attempt deadline every third
// of a lease, fenced by the attempt token. The attempt does its work under ctx, which ends
// when a renewal finds the record no longer ours (taken over after a stall, or finished by
// the sweep), so a superseded attempt stops generating instead of running to its timeout.
type heartbeat struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	once   sync.Once
}

// keepAlive starts the heartbeat of rec's attempt. Renewals stop after the attempt's own
// bounds (wait + grace, and one lease for the finish): an attempt wedged past them stops
// renewing, so it is taken over one lease later rather than never. Stop the heartbeat before
// settling.
func (s *Service) keepAlive(ctx context.Context, rec store.Speech) *heartbeat {
	hctx, cancel := context.WithCancelCause(ctx)
	h := &heartbeat{ctx: hctx, cancel: cancel, done: make(chan struct{})}
	lease := s.lease()
	end := time.Now().Add(s.wait() + s.grace() + lease) // monotonic: immune to clock steps
	go func() {
		defer close(h.done)
		t := time.NewTicker(lease / 3)
		defer t.Stop()
		for {
			select {
			case <-hctx.Done():
				return
			case <-t.C:
			}
			if time.Now().After(end) {
				logctx.Logger(ctx, s.log()).Warn("speech attempt outlived its bounds; lease no longer renewed", "speech_id", rec.ID)
				return
			}
			err := s.renew(hctx, rec, lease)
			switch {
			case err == nil:
			case errors.Is(err, store.ErrLeaseLost):
				logctx.Logger(ctx, s.log()).Warn("speech attempt lost its record; stopping it", "speech_id", rec.ID)
				cancel(errSuperseded)
				return
			case hctx.Err() != nil:
				return
			default:
				// The next renewal may get through; until the lease runs out the attempt is
				// still ours, and after it a take-over only repeats work.
				logctx.Logger(ctx, s.log()).Warn("speech lease not renewed", "speech_id", rec.ID, "err", err)
			}
		}
	}()
	return h
}

// renew moves the attempt deadline one lease ahead. A renewal that cannot commit within a
// lease is pointless, so it is bounded by one.
func (s *Service) renew(ctx context.Context, rec store.Speech, lease time.Duration) error {
	until := s.now().UTC().Add(lease)
	ctx, cancel := context.WithTimeout(ctx, lease)
	defer cancel()
	return s.Store.Transact(ctx, func(tx store.Tx) error {
		return tx.RenewSpeech(ctx, rec.ID, rec.AttemptToken, until)
	})
}

// stop ends the renewals, waits for a renewal in flight, and reports whether the attempt was
// superseded: then it must not settle, and answers the owner's outcome instead. Idempotent.
func (h *heartbeat) stop() (superseded bool) {
	h.once.Do(func() {
		h.cancel(nil) // a no-op when a renewal already cancelled with errSuperseded
		<-h.done
	})
	return errors.Is(context.Cause(h.ctx), errSuperseded)
}
