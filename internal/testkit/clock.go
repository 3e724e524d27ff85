package testkit

import (
	"sync"
	"time"
)

// Clock is a time source a test moves by hand, safe to read from any goroutine. A still
// clock (NewClock) stands at its time until the test moves it; a running clock
// (RunningClock) follows the wall clock plus what the test added, for code that also waits
// on real timers (a job engine's poll, a lease) while the test jumps over hours.
type Clock struct {
	mu      sync.Mutex
	at      time.Time     // a still clock's time
	offset  time.Duration // a running clock's lead over the wall clock
	running bool
}

// NewClock is a still clock at t.
func NewClock(t time.Time) *Clock { return &Clock{at: t} }

// RunningClock is a clock that runs with the wall clock until the test moves it ahead.
func RunningClock() *Clock { return &Clock{running: true} }

// Now is the clock's time; pass c.Now where code takes a func() time.Time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		return time.Now().Add(c.offset)
	}
	return c.at
}

// Advance moves the clock by d (backwards when d is negative).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		c.offset += d
		return
	}
	c.at = c.at.Add(d)
}

// Set puts the clock at t; a running clock runs on from t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running {
		c.offset = time.Until(t)
		return
	}
	c.at = t
}
