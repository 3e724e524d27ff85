package speech

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/store"
)

// DefaultSweepInterval is how often the sweep job runs.
const DefaultSweepInterval = 30 * time.Second

// sweepBatch bounds the records one query of the sweep lists.
const sweepBatch = 100

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
				ErrorKind: kindTimeout, ErrorCode: CodeTimeout, ErrorMessage: sweptMessage,
				ErrorDetail: "swept: no attempt finished it before " + rec.AttemptUntil.UTC().Format(time.RFC3339Nano), FinishedAt: now}); err != nil {
				return err
			}
			return settleFailed(ctx, tx, rec, now, s.Accounts)
		})
		switch {
		case err == nil:
			n++
			s.Metrics.sweptOne()
			settleLog(ctx, s.log(), rec).Warn("abandoned speech failed and refunded", "reserved", rec.Reserved.String())
		case errors.Is(err, store.ErrLeaseLost):
			// Taken over or finished meanwhile.
		default:
			return n, err
		}
	}
	return n, nil
}

// SweepKind is the job kind of the periodic sweep of abandoned records.
const SweepKind = "speech.sweep"

// Sweep is one pass of the periodic sweep job: it fails and refunds every record whose
// attempt lease (the short heartbeat lease a retry goes by) ran out more than the service's
// grace ago. The grace gives a retry of the same request the first chance to take the record
// over and still deliver audio; it is not how long a dead attempt takes to be recognised,
// which is one lease.
func (s *Service) Sweep(ctx context.Context) error {
	for {
		n, err := s.SweepAbandoned(ctx, s.now().Add(-s.grace()), sweepBatch)
		if err != nil {
			return fmt.Errorf("speech sweep: %w", err)
		}
		if n < sweepBatch {
			return nil
		}
	}
}
