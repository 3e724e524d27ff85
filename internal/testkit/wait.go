package testkit

import (
	"testing"
	"time"
)

// Tick is how often WaitFor looks at its condition.
const Tick = 5 * time.Millisecond

// WaitFor waits until cond holds, looking every Tick, and fails the test with what once
// timeout has passed. It replaces a sleep that guesses how long something takes: the test
// goes on as soon as the thing happened, and a slow machine only waits longer.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Poll(timeout, cond) {
		t.Fatalf("after %v: %s", timeout, what)
	}
}

// WaitEvery is WaitFor looking every tick: for a condition that costs a request or a
// query, where looking every Tick would load the machine the test shares.
func WaitEvery(t testing.TB, tick, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	if !poll(tick, timeout, cond) {
		t.Fatalf("after %v: %s", timeout, what)
	}
}

// Poll is WaitFor without the test: it reports whether cond held within timeout.
func Poll(timeout time.Duration, cond func() bool) bool { return poll(Tick, timeout, cond) }

// PollEvery is Poll looking every tick, for a costly condition whose failure message needs
// what the last look saw.
func PollEvery(tick, timeout time.Duration, cond func() bool) bool {
	return poll(tick, timeout, cond)
}

func poll(tick, timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(tick)
	}
	return true
}

// NextSecond waits until the wall clock reads a later whole second than when it was
// called. Signed links carry their expiry in whole seconds, so two links minted either side
// of it differ; this waits half a second on average, where a fixed sleep waited 1.1 s.
func NextSecond() {
	now := time.Now()
	time.Sleep(now.Truncate(time.Second).Add(time.Second).Sub(now))
}
