package testkit

import (
	"testing"
	"testing/synctest"
	"time"

	"mediagen/internal/money"
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
		time.Sleep(time.Minute) // virtual time: the bubble's clock moves exactly a minute
		if got := time.Until(c.Now()); got != time.Hour {
			t.Fatalf("lead %v, want 1h", got)
		}
		at := time.Now().Add(-time.Minute)
		c.Set(at)
		time.Sleep(time.Second) // virtual time
		if got := c.Now(); !got.Equal(at.Add(time.Second)) {
			t.Fatalf("after Set %v, want %v", got, at.Add(time.Second))
		}
	})
}

func TestNextSecondEndsInALaterWholeSecond(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		time.Sleep(300 * time.Millisecond) // virtual time: start off a whole second
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

func TestKeyIsCreditedOnAFreshStore(t *testing.T) {
	db := SQLite(t)
	secret, k := Key(t, db, "acme", 5*money.Scale, false)
	if secret == "" || k.TenantID != "acme" {
		t.Fatalf("key %q %+v", secret, k)
	}
	b, err := db.Balance(t.Context(), k.ID)
	if err != nil || b.Available != 5*money.Scale || b.Used != 0 {
		t.Fatalf("balance %+v %v, want 5 available", b, err)
	}
	if _, k0 := Key(t, db, "acme", 0, true); !k0.Unlimited {
		t.Errorf("unlimited key %+v", k0)
	}
}

func TestNamesResolveOnlyWhatTheyHold(t *testing.T) {
	n := Names{"media.example.com": "127.0.0.1"}
	if a, err := n.LookupNetIP(t.Context(), "ip", "media.example.com"); err != nil || len(a) != 1 || !a[0].IsLoopback() {
		t.Errorf("held name: %v %v", a, err)
	}
	if _, err := n.LookupNetIP(t.Context(), "ip", "example.org"); err == nil {
		t.Error("a name it does not hold resolved")
	}
}

// Stores copied from the one migrated template share nothing.
func TestSQLiteStoresAreIndependent(t *testing.T) {
	a, b := SQLite(t), SQLite(t)
	_, k := Key(t, a, "acme", money.Scale, false)
	if _, err := b.Balance(t.Context(), k.ID); err == nil {
		t.Error("a key made in one store has a balance in another")
	}
	if _, err := a.Balance(t.Context(), k.ID); err != nil {
		t.Errorf("the key's own store: %v", err)
	}
}
