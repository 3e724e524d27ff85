package limits

import (
	"math"
	"time"
)

// bucket is a token bucket: it holds up to burst tokens, refills at rate tokens per second,
// and a request takes one. It starts full, so a new client gets its burst at once.
type bucket struct {
	tokens float64
	last   time.Time // when tokens was computed
	full   time.Time // when the bucket will be full again: after that it is as good as new
}

// refill brings the bucket to now. A clock that went backwards adds nothing.
func (b *bucket) refill(now time.Time, rate, burst float64) {
	if b.last.IsZero() {
		b.tokens, b.last = burst, now
		return
	}
	if el := now.Sub(b.last).Seconds(); el > 0 {
		b.tokens = math.Min(burst, b.tokens+el*rate)
		b.last = now
	}
}

// wait is how long until the bucket has a token: zero when it has one now.
func (b *bucket) wait(rate float64) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// take removes one token; the caller checked wait first.
func (b *bucket) take(now time.Time, rate, burst float64) {
	b.tokens--
	b.full = now.Add(time.Duration((burst - b.tokens) / rate * float64(time.Second)))
}
