package limits

import (
	"fmt"
	"sync"
	"time"

	"mediagen/internal/netlimit"
)

// maxRateClients bounds the buckets a ClientRates keeps: past it the buckets that have
// refilled (and so hold nothing a new bucket would not) are dropped, and when none has, a new
// client goes untracked by the rate; its connections are still bounded by the listener.
const maxRateClients = 10_000

// VerifyRequestsPerSecond and VerifyBurst bound the requests of the verification page
// (/verify/…, no key: its token is the credential) per client address. A person loads the
// page and presses two or three buttons, and a reload or a flaky link retries a few times;
// an office verifying its staff from one address at once stays within the burst. Each
// request reads the database for its token.
const (
	VerifyRequestsPerSecond = 5
	VerifyBurst             = 30
)

// ClientRates are token buckets per client address, for the routes that need no key (file
// links, the verification page), to which no key or tenant bucket applies.
type ClientRates struct {
	now         func() time.Time
	rate, burst float64
	what        string // what is counted, for the refusal's message: "file requests"

	mu      sync.Mutex
	buckets map[netlimit.Client]*bucket
	swept   time.Time // when a full table was last swept
}

// NewClientRates makes the buckets: rate requests a second per client, bursts of burst; now
// nil is time.Now.
func NewClientRates(now func() time.Time, rate, burst float64, what string) *ClientRates {
	if now == nil {
		now = time.Now
	}
	return &ClientRates{now: now, rate: rate, burst: max(1, burst), what: what, buckets: map[netlimit.Client]*bucket{}}
}

// Allow takes a token from client's bucket, or refuses with Retry-After when it has none.
func (c *ClientRates) Allow(client netlimit.Client) error {
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.bucket(client, now)
	if b == nil {
		return nil
	}
	b.refill(now, c.rate, c.burst)
	if w := b.wait(c.rate); w > 0 {
		secs := seconds(w)
		return refuse(ScopeClient, LimitRate, CodeRate, secs,
			fmt.Sprintf("Too many %s from this client address. Slow down and retry after %d s (Retry-After).", c.what, secs))
	}
	b.take(now, c.rate, c.burst)
	return nil
}

// bucket returns the client's bucket, or nil when the table is full of clients whose buckets
// are still refilling.
func (c *ClientRates) bucket(client netlimit.Client, now time.Time) *bucket {
	if b, ok := c.buckets[client]; ok {
		return b
	}
	if len(c.buckets) >= maxRateClients {
		// A sweep reads the whole table: at most one a second, so that a flood of new
		// addresses cannot make every request pay for it.
		if now.Sub(c.swept) < time.Second {
			return nil
		}
		c.swept = now
		for k, b := range c.buckets {
			if !now.Before(b.full) {
				delete(c.buckets, k)
			}
		}
		if len(c.buckets) >= maxRateClients {
			return nil
		}
	}
	b := &bucket{}
	c.buckets[client] = b
	return b
}
