package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/store"
)

// The in-flight counts, one table-driven suite over the kinds (inflightkinds.go). Each kind
// runs under its own tenants, so the kinds counted apart are seen to stay at zero.

func inFlight(t *testing.T, s store.Store, kind store.InFlightKind, k store.Key) store.InFlight {
	t.Helper()
	var f store.InFlight
	err := s.Transact(context.Background(), func(tx store.Tx) (err error) {
		f, err = tx.InFlight(context.Background(), kind, k.ID, k.TenantID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// tasksInFlight is inFlight of video tasks, for the suites that create tasks.
func tasksInFlight(t *testing.T, s store.Store, k store.Key) store.InFlight {
	t.Helper()
	return inFlight(t, s, store.InFlightTasks, k)
}

func wantInFlight(t *testing.T, what string, got store.InFlight, key, tenant int) {
	t.Helper()
	if got.Key != key || got.Tenant != tenant {
		t.Errorf("%s: in flight key %d tenant %d, want %d and %d", what, got.Key, got.Tenant, key, tenant)
	}
}

func inFlightCaseOf(kind store.InFlightKind) inFlightCase {
	for _, c := range inFlightCases {
		if c.kind == kind {
			return c
		}
	}
	panic(fmt.Sprintf("storetest: no in-flight case for kind %q", kind))
}

// testInFlightFollowsCreateAndEnd: for every kind, a create counts once for its key and its
// tenant, nothing else does (a rollback, a twin, a write that keeps the record unfinished,
// another kind), and every way a record ends uncounts it exactly once.
func testInFlightFollowsCreateAndEnd(t *testing.T, s store.Store) {
	for _, kind := range store.InFlightKinds {
		t.Run(string(kind), func(t *testing.T) { inFlightFollowsCreateAndEnd(t, s, inFlightCaseOf(kind)) })
	}
}

func inFlightFollowsCreateAndEnd(t *testing.T, s store.Store, c inFlightCase) {
	ctx := t.Context()
	acme, bolt := "acme-"+string(c.kind), "bolt-"+string(c.kind)
	create := c.creator(t, s, acme, bolt)
	a1, a2, b := newKey(t, s, acme, false), newKey(t, s, acme, false), newKey(t, s, bolt, false)
	count := func(k store.Key) store.InFlight { t.Helper(); return inFlight(t, s, c.kind, k) }
	write := func(w inFlightEnd, r inFlightRecord) error {
		return s.Transact(ctx, func(tx store.Tx) error { return w.write(ctx, tx, r) })
	}
	wantInFlight(t, "nothing created", count(a1), 0, 0)

	n := len(c.ends)
	mine := make([]inFlightRecord, n)
	for i := range mine {
		mine[i] = mustCreate(t, s, create, a1)
	}
	mustCreate(t, s, create, a2)
	mustCreate(t, s, create, b)
	wantInFlight(t, "created", count(a1), n, n+1)
	wantInFlight(t, "other key of the tenant", count(a2), 1, n+1)
	wantInFlight(t, "other tenant", count(b), 1, 1)
	for _, other := range store.InFlightKinds {
		if other != c.kind {
			wantInFlight(t, string(other)+" is counted apart", inFlight(t, s, other, a1), 0, 0)
		}
	}

	// A create that rolls back counts nothing, though its own transaction sees it.
	boom := errors.New("boom")
	if err := s.Transact(ctx, func(tx store.Tx) error {
		if _, err := create(ctx, tx, a1); err != nil {
			return err
		}
		if f, err := tx.InFlight(ctx, c.kind, a1.ID, a1.TenantID); err != nil || f.Key != n+1 || f.Tenant != n+2 {
			t.Errorf("inside the creating transaction: %+v %v, want %d and %d", f, err, n+1, n+2)
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	wantInFlight(t, "after a rollback", count(a1), n, n+1)

	if err := s.Transact(ctx, func(tx store.Tx) error { return mine[0].twin(ctx, tx) }); !errors.Is(err, c.twinErr) {
		t.Fatalf("twin: %v, want %v", err, c.twinErr)
	}
	for _, w := range c.keep {
		if err := write(w, mine[0]); err != nil {
			t.Fatalf("%s: %v", w.name, err)
		}
	}
	wantInFlight(t, "after a twin and writes that keep it unfinished", count(a1), n, n+1)

	for i, e := range c.ends {
		if err := write(e, mine[i]); err != nil {
			t.Fatalf("%s: %v", e.name, err)
		}
		wantInFlight(t, e.name, count(a1), n-1-i, n-i)
	}
	for _, l := range c.late {
		if err := write(c.ends[l.end], mine[l.rec]); !errors.Is(err, l.want) {
			t.Errorf("%s of the record ended %s: %v, want %v", c.ends[l.end].name, c.ends[l.rec].name, err, l.want)
		}
	}
	wantInFlight(t, "ends of ended records", count(a1), 0, 1)
	wantInFlight(t, "the other tenant", count(b), 1, 1)
}

func mustCreate(t *testing.T, s store.Store, create inFlightCreate, k store.Key) inFlightRecord {
	t.Helper()
	ctx := t.Context()
	var r inFlightRecord
	if err := s.Transact(ctx, func(tx store.Tx) (err error) { r, err = create(ctx, tx, k); return err }); err != nil {
		t.Fatalf("create: %v", err)
	}
	return r
}

// errOverLimit is what the admitting transaction returns to roll its create back.
var errOverLimit = errors.New("over the in-flight limit")

// admitUnderLimit creates a record for key k in one transaction of s and keeps it only if
// the key then has no more than limit of its kind in flight: how the service admits one
// (limits.Admit).
func admitUnderLimit(ctx context.Context, s store.Store, kind store.InFlightKind, create inFlightCreate, k store.Key, limit int) (inFlightRecord, error) {
	var r inFlightRecord
	err := s.Transact(ctx, func(tx store.Tx) (err error) {
		if r, err = create(ctx, tx, k); err != nil {
			return err
		}
		f, err := tx.InFlight(ctx, kind, k.ID, k.TenantID)
		if err != nil {
			return err
		}
		if f.Key > limit {
			return errOverLimit
		}
		return nil
	})
	return r, err
}

// admitConcurrently admits records of kind for key k from attempts goroutines at once, spread
// over the store handles, and fails unless exactly limit were admitted, every other attempt
// was refused by the limit, and every handle counts the limit. It returns the admitted.
func admitConcurrently(t *testing.T, handles []store.Store, c inFlightCase, create inFlightCreate, k store.Key, limit, attempts int) []inFlightRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	var refused atomic.Int64
	var mu sync.Mutex
	var admitted []inFlightRecord
	var wg sync.WaitGroup
	for i := range attempts {
		s := handles[i%len(handles)]
		wg.Go(func() {
			r, err := admitUnderLimit(ctx, s, c.kind, create, k, limit)
			switch {
			case err == nil:
				mu.Lock()
				admitted = append(admitted, r)
				mu.Unlock()
			case errors.Is(err, errOverLimit):
				refused.Add(1)
			default:
				t.Errorf("admit: %v", err)
			}
		})
	}
	wg.Wait()
	if len(admitted) != limit || refused.Load() != int64(attempts-limit) {
		t.Fatalf("admitted %d and refused %d of %d concurrent creates, want %d admitted", len(admitted), refused.Load(), attempts, limit)
	}
	for i, s := range handles {
		wantInFlight(t, fmt.Sprintf("handle %d", i), inFlight(t, s, c.kind, k), limit, limit)
	}
	return admitted
}

// InFlightLimitHolds admits video tasks for one key from many goroutines at once, spread
// over the given store handles (on PostgreSQL, two handles on one database are two
// replicas), and fails unless exactly limit were admitted and every other attempt was refused
// by the limit.
func InFlightLimitHolds(t *testing.T, handles []store.Store, limit, attempts int) {
	t.Helper()
	c := inFlightCaseOf(store.InFlightTasks)
	admitConcurrently(t, handles, c, c.creator(t, handles[0], "acme"), newKey(t, handles[0], "acme", false), limit, attempts)
}

// testInFlightLimitHoldsUnderConcurrentCreates: for every kind, concurrent creates of one key
// against a limit admit exactly the limit, a refused create leaves no record, and once every
// admitted record has ended (each a different way) the counts are back to 0 and a create is
// admitted again.
func testInFlightLimitHoldsUnderConcurrentCreates(t *testing.T, s store.Store) {
	for _, kind := range store.InFlightKinds {
		t.Run(string(kind), func(t *testing.T) { inFlightLimitHolds(t, s, inFlightCaseOf(kind)) })
	}
}

func inFlightLimitHolds(t *testing.T, s store.Store, c inFlightCase) {
	const limit, attempts = 5, 40
	ctx := t.Context()
	tenant := "acme-" + string(c.kind)
	create := c.creator(t, s, tenant)
	k := newKey(t, s, tenant, false)
	admitted := admitConcurrently(t, []store.Store{s}, c, create, k, limit, attempts)
	if n, err := c.stored(ctx, s, k); err != nil || n != limit {
		t.Fatalf("%d records stored (%v), want only the %d admitted", n, err, limit)
	}
	for i, r := range admitted {
		e := c.ends[i%len(c.ends)]
		if err := s.Transact(ctx, func(tx store.Tx) error { return e.write(ctx, tx, r) }); err != nil {
			t.Fatalf("%s %s: %v", e.name, r.id, err)
		}
	}
	wantInFlight(t, "all ended", inFlight(t, s, c.kind, k), 0, 0)
	if _, err := admitUnderLimit(ctx, s, c.kind, create, k, limit); err != nil {
		t.Fatalf("a create after the admitted ended: %v", err)
	}
}
