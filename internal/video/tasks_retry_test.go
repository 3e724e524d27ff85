package video

import (
	"testing"
	"time"
)

// RetryMax caps the wait between attempts of a failed step; without it the engine's default
// (doubling from 1 s to 2 minutes) applies.
func TestRetryMaxCapsTheWaitBetweenAttempts(t *testing.T) {
	t.Parallel()
	if k := (&Tasks{}).Kinds()[0]; k.Backoff != nil {
		t.Error("a backoff of its own without RetryMax")
	}
	k := (&Tasks{RetryMax: 3 * time.Second}).Kinds()[0]
	for attempt := 1; attempt <= 8; attempt++ {
		if d := k.Backoff(attempt); d > 3*time.Second || d < 500*time.Millisecond {
			t.Errorf("attempt %d waits %v, want from 0.5 s (half the first wait) to 3 s", attempt, d)
		}
	}
}
