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

// wait is how long until the bucket has a token: zero when it has one now, and never zero
// when it has none.
func (b *bucket) wait(rate float64) time.Duration {
	if b.tokens >= 1 {
		return 0
	}
	return span((1 - b.tokens) / rate)
}

// take removes one token; the caller checked wait first.
func (b *bucket) take(now time.Time, rate, burst float64) {
	b.tokens--
	b.full = now.Add(span((burst - b.tokens) / rate))
}

// span turns a positive number of seconds into a Duration of at least 1 ns, saturating at the
// longest Duration. A plain conversion is not safe here: Go leaves the conversion of a float
// outside int64's range to the platform (amd64 gives math.MinInt64), so a rate slow enough
// made wait negative, and a negative wait admits. NaN and negative seconds (a rate of 0 or
// below, which never refills) count as forever too. The catalog keeps rates in a range where
// none of this happens (catalog.MinRequestsPerSecond, MaxReplicas); this is the bucket's own
// guarantee that an out-of-range rate refuses rather than admits.
func span(seconds float64) time.Duration {
	ns := seconds * float64(time.Second)
	// float64(math.MaxInt64) rounds up to 2^63, so every ns below it converts exactly.
	if !(ns >= 0) || ns >= float64(math.MaxInt64) {
		return time.Duration(math.MaxInt64)
	}
	return max(time.Nanosecond, time.Duration(ns))
}
