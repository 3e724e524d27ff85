package testkit

import (
	"testing"
	"testing/synctest"
	"time"
)

func TestStillClockMovesOnlyWhenTold(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := NewClock(start)
	if !c.Now().Equal(start) {
		t.Fatalf("now %v", c.Now())
	}
	c.Advance(time.Hour)
	if want := start.Add(time.Hour); !c.Now().Equal(want) {
		t.Fatalf("after Advance %v, want %v", c.Now(), want)
	}
	c.Set(start)
	if !c.Now().Equal(start) {
		t.Fatalf("after Set %v", c.Now())
	}
}

// On virtual time the running clock's lead over the wall clock is exact.
func TestRunningClockLeadsTheWallClockByWhatWasAdded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := RunningClock()
		c.Advance(time.Hour)
		time.Sleep(time.Minute)
		if got := time.Until(c.Now()); got != time.Hour {
			t.Fatalf("lead %v, want 1h", got)
		}
		at := time.Now().Add(-time.Minute)
		c.Set(at)
		time.Sleep(time.Second)
		if got := c.Now(); !got.Equal(at.Add(time.Second)) {
			t.Fatalf("after Set %v, want %v", got, at.Add(time.Second))
		}
	})
}

func TestNextSecondEndsInALaterWholeSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(300 * time.Millisecond)
		before := time.Now()
		NextSecond()
		if after := time.Now(); after.Unix() != before.Unix()+1 || after.Sub(before) > time.Second {
			t.Fatalf("from %v to %v", before, after)
		}
	})
}

func TestPollReportsWhetherTheConditionHeldInTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ready := time.Now().Add(50 * time.Millisecond)
		if !Poll(time.Second, func() bool { return time.Now().After(ready) }) {
			t.Error("condition that holds after 50ms not seen within 1s")
		}
		if Poll(time.Second, func() bool { return false }) {
			t.Error("a condition that never holds was reported")
		}
	})
}
