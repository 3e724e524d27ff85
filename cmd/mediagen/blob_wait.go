package main

import (
	"context"
	"errors"
	"time"

	"mediagen/internal/blob"
)

// openS3Waiting opens the bucket of --blob; a store that does not answer is tried again every
// second within --db-wait, as PostgreSQL is, so that replicas restarted together with their
// store come up. A store that answers with a refusal (no such bucket, unknown credentials,
// another region) stops serve at once: its message says what to fix.
func (m *Main) openS3Waiting(ctx context.Context, cfg blob.S3Config) (*blob.S3, error) {
	deadline := time.Now().Add(m.Config.DBWait)
	for attempt := 1; ; attempt++ {
		s, err := blob.NewS3(ctx, cfg)
		if err == nil || !errors.Is(err, blob.ErrUnreachable) || !time.Now().Before(deadline) {
			return s, err
		}
		if attempt == 1 || attempt%10 == 0 {
			m.log.Warn("the S3 store is unreachable; trying again", "for", time.Until(deadline).Round(time.Second), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
