package speech

import (
	"context"
	"errors"
	"sync"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/store"
)

// Sweeper defaults.
const (
	DefaultSweepInterval = 30 * time.Second
	sweepBatch           = 100
)

// sweptMessage is the failure shown for a record whose process stopped before it finished.
const sweptMessage = "Speech generation did not finish: the request was interrupted before audio was produced, and the pre-charge was refunded."

// SweepAbandoned fails and refunds up to limit pending records whose attempt lease ran out
// before the given time: a live attempt keeps renewing its lease, so their process stopped
// (crash, kill, restart) and no retry took them over. Each record is failed with code speech_timeout in one transaction with its zero
// settlement, fenced by the attempt token it was listed with, so a concurrent take-over or a
// late finish of the original makes the sweep skip it. It returns how many it failed.
func (s *Service) SweepAbandoned(ctx context.Context, before time.Time, limit int) (int, error) {
	list, err := s.Store.AbandonedSpeeches(ctx, before, limit)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, rec := range list {
		now := s.now().UTC()
		err := s.Store.Transact(ctx, func(tx store.Tx) error {
			if err := tx.FinishSpeech(ctx, store.SpeechFinish{ID: rec.ID, Token: rec.AttemptToken, Status: store.SpeechFailed,
				ErrorKind: kindTimeout, ErrorCode: CodeTimeout, ErrorMessage: sweptMessage, FinishedAt: now}); err != nil {
				return err
			}
			_, err := billing.Settle(ctx, tx, rec.KeyID, rec.ID, rec.Reserved, 0, now)
			return err
		})
		switch {
		case err == nil:
			n++
			s.Metrics.sweptOne()
			s.log().Warn("abandoned speech failed and refunded", "speech_id", rec.ID, "reserved", rec.Reserved.String())
		case errors.Is(err, store.ErrLeaseLost):
			// Taken over or finished meanwhile.
		default:
			return n, err
		}
	}
	return n, nil
}

// Sweeper runs SweepAbandoned every Interval, failing records whose attempt lease (the same
// short heartbeat lease a retry goes by) ran out more than Delay ago. Delay gives a retry of
// the same request the first chance to take the record over and still deliver audio; it is
// not how long a dead attempt takes to be recognised, which is one lease.
type Sweeper struct {
	Service  *Service
	Interval time.Duration // 0 → DefaultSweepInterval
	Delay    time.Duration // 0 → the service's grace (30 s by default)

	mu   sync.Mutex
	stop context.CancelFunc
	done chan struct{}
}

// Start runs the sweep in the background until Stop or ctx ends. Starting twice is a no-op.
func (sw *Sweeper) Start(ctx context.Context) {
	sw.mu.Lock()
	defer sw.mu.Unlock()
	if sw.done != nil {
		return
	}
	ctx, sw.stop = context.WithCancel(ctx)
	sw.done = make(chan struct{})
	go sw.run(ctx, sw.done)
}

// Stop ends the sweep and waits for a sweep in progress to return.
func (sw *Sweeper) Stop() {
	sw.mu.Lock()
	stop, done := sw.stop, sw.done
	sw.mu.Unlock()
	if stop == nil {
		return
	}
	stop()
	<-done
}

func (sw *Sweeper) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	interval := orDefault(sw.Interval, DefaultSweepInterval)
	delay := orDefault(sw.Delay, sw.Service.grace())
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		for {
			n, err := sw.Service.SweepAbandoned(ctx, sw.Service.now().Add(-delay), sweepBatch)
			if err != nil {
				if ctx.Err() == nil {
					sw.Service.log().Error("speech sweep failed", "err", err)
				}
				break
			}
			if n < sweepBatch {
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
