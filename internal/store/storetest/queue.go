package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/store"
)

func createTasks(t *testing.T, s store.Store, k store.Key, n int, due time.Time) []string {
	t.Helper()
	ctx := context.Background()
	var ids []string
	for i := 0; i < n; i++ {
		task := newTask(k, "")
		task.NextRunAt = due
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, task) }); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	return ids
}

func advance(s store.Store, a store.Advance) error {
	return s.Transact(context.Background(), func(tx store.Tx) error { return tx.AdvanceTask(context.Background(), a) })
}

func testQueueClaimLeaseAndFence(t *testing.T, s store.Store) {
	ctx := context.Background()
	k := newKey(t, s, "acme", false)
	now := time.Now()
	ids := createTasks(t, s, k, 3, now.Add(-time.Second))
	createTasks(t, s, k, 1, now.Add(time.Hour)) // not due
	got, err := s.ClaimDue(ctx, now, time.Minute, 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("claimed %d, %v; want the 3 due tasks", len(got), err)
	}
	for _, c := range got {
		if c.Token == "" || c.Step != "" || c.Attempts != 0 || string(c.Request) != `{"a":1}` || string(c.Pricing) != `{"rate":1}` {
			t.Errorf("claim %+v", c)
		}
	}
	if again, _ := s.ClaimDue(ctx, now, time.Minute, 10); len(again) != 0 {
		t.Fatalf("leased tasks claimed twice: %d", len(again))
	}
	// A fenced write with the right token lands and releases the lease.
	a := store.Advance{ID: got[0].ID, Token: got[0].Token, Status: store.StatusInProgress, Progress: 40, Step: "poll",
		State: []byte(`{"job":"j1"}`), Attempts: 1, NextRunAt: now.Add(-time.Millisecond)}
	if err := advance(s, a); err != nil {
		t.Fatal(err)
	}
	// The stale token can no longer write.
	a.Progress = 41
	if err := advance(s, a); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale token write: %v", err)
	}
	re, err := s.ClaimDue(ctx, now, time.Minute, 10)
	if err != nil || len(re) != 1 || re[0].ID != got[0].ID || re[0].Step != "poll" || string(re[0].State) != `{"job":"j1"}` || re[0].Attempts != 1 || re[0].Progress != 40 {
		t.Fatalf("reclaim after advance: %+v %v", re, err)
	}
	// Expired leases are taken over: claim "later than" the lease.
	taken, err := s.ClaimDue(ctx, now.Add(2*time.Minute), time.Minute, 10)
	if err != nil || len(taken) != 3 {
		t.Fatalf("takeover claimed %d, %v", len(taken), err)
	}
	// The old holder's token is fenced out.
	if err := advance(s, store.Advance{ID: got[1].ID, Token: got[1].Token, Status: store.StatusInProgress}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("old holder wrote after takeover: %v", err)
	}
	// Release hands a lease back at once.
	if err := s.ReleaseLease(ctx, taken[0].ID, taken[0].Token); err != nil {
		t.Fatal(err)
	}
	if back, _ := s.ClaimDue(ctx, time.Now().Add(time.Second), time.Minute, 10); len(back) != 1 || back[0].ID != taken[0].ID {
		t.Fatalf("released task not claimable: %+v", back)
	}
	// A terminal task is never claimed again and refuses further writes.
	fin := store.Advance{ID: ids[2], Token: taken[2].Token, Status: store.StatusCompleted, Progress: 100, FinishedAt: now, Result: []byte(`{}`)}
	if taken[2].ID != ids[2] {
		for _, c := range taken {
			if c.ID == ids[2] {
				fin.Token = c.Token
			}
		}
	}
	if err := advance(s, fin); err != nil {
		t.Fatal(err)
	}
	fin.Status = store.StatusFailed
	if err := advance(s, fin); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("terminal task rewritten: %v", err)
	}
	done, _ := s.Task(ctx, ids[2])
	if done.Status != store.StatusCompleted || string(done.Result) != `{}` {
		t.Fatalf("terminal task = %+v", done)
	}
	if counts, err := s.CountTasks(ctx); err != nil || counts[store.StatusCompleted] != 1 {
		t.Fatalf("counts %v %v", counts, err)
	}
}

func testQueueConcurrentClaimersDisjoint(t *testing.T, s store.Store) {
	ctx := context.Background()
	k := newKey(t, s, "acme", false)
	now := time.Now()
	createTasks(t, s, k, 40, now.Add(-time.Second))
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				got, err := s.ClaimDue(ctx, now, time.Minute, 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) > 3 {
					t.Errorf("claimed %d tasks with limit 3", len(got))
				}
				mu.Lock()
				for _, c := range got {
					seen[c.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(seen) != 40 {
		t.Fatalf("claimed %d distinct tasks, want 40", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Fatalf("task %s claimed %d times", id, n)
		}
	}
}

func testSettlementMayOverdrawAvailableOnly(t *testing.T, s store.Store) {
	ctx := context.Background()
	k := newKey(t, s, "acme", false)
	if err := credit(ctx, s, k, 1_000); err != nil {
		t.Fatal(err)
	}
	if err := reserve(ctx, s, k, 1_000); err != nil {
		t.Fatal(err)
	}
	settle := store.Txn{ID: "txn_settle_" + k.ID, Kind: "settle", AllowOverdraft: true, Entries: []store.Entry{
		{Account: store.AccountID(k.ID, store.AccountReserved), Amount: -1_000},
		{Account: store.AccountID(k.ID, store.AccountSpent), Amount: 1_500},
		{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -500},
	}}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.Post(ctx, settle) }); err != nil {
		t.Fatal(err)
	}
	if b := balance(t, s, k); b.Available != -500 || b.Used != 1_500 || b.Reserved != 0 {
		t.Fatalf("after collecting beyond the reservation: %+v", b)
	}
	// Overdraft never applies to the reserved account.
	bad := store.Txn{ID: "txn_bad_" + k.ID, Kind: "settle", AllowOverdraft: true, Entries: []store.Entry{
		{Account: store.AccountID(k.ID, store.AccountReserved), Amount: -1},
		{Account: store.AccountID(k.ID, store.AccountSpent), Amount: 1},
	}}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.Post(ctx, bad) }); !errors.Is(err, store.ErrInsufficientFunds) {
		t.Fatalf("reserved overdraft: %v", err)
	}
}

func testActiveTasksByRouteAndStatus(t *testing.T, s store.Store) {
	ctx := context.Background()
	k := newKey(t, s, "acme", false)
	now := time.Now()
	for _, route := range []string{"native", "native", "production"} {
		task := newTask(k, "")
		task.Route, task.NextRunAt = route, now.Add(-time.Second)
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, task) }); err != nil {
			t.Fatal(err)
		}
	}
	claimed, err := s.ClaimDue(ctx, now, time.Minute, 10)
	if err != nil || len(claimed) != 3 {
		t.Fatalf("claim: %d %v", len(claimed), err)
	}
	var native []store.Claimed
	var prod store.Claimed
	for _, c := range claimed {
		if c.Route == "native" {
			native = append(native, c)
		} else {
			prod = c
		}
	}
	// One native task runs, one finishes; the production task stays queued.
	if err := advance(s, store.Advance{ID: native[0].ID, Token: native[0].Token, Status: store.StatusInProgress, Progress: 10, NextRunAt: now.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := advance(s, store.Advance{ID: native[1].ID, Token: native[1].Token, Status: store.StatusCompleted, Progress: 100, FinishedAt: now, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	_ = prod
	got, err := s.ActiveTasks(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.TaskCount{{Route: "native", Status: store.StatusInProgress, N: 1}, {Route: "production", Status: store.StatusQueued, N: 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("active tasks %v, want %v", got, want)
	}
}

// testQueueRenewLease: a heartbeat keeps a lease past its first expiry; a stale token or a
// terminal task cannot renew.
func testQueueRenewLease(t *testing.T, s store.Store) {
	ctx := context.Background()
	k := newKey(t, s, "acme", false)
	now := time.Now()
	createTasks(t, s, k, 2, now.Add(-time.Second))
	got, err := s.ClaimDue(ctx, now, time.Minute, 10)
	if err != nil || len(got) != 2 {
		t.Fatalf("claimed %d, %v", len(got), err)
	}
	kept, other := got[0], got[1]
	if err := s.RenewLease(ctx, kept.ID, kept.Token, now.Add(10*time.Minute)); err != nil {
		t.Fatalf("renew: %v", err)
	}
	later, err := s.ClaimDue(ctx, now.Add(5*time.Minute), time.Minute, 10)
	if err != nil || len(later) != 1 || later[0].ID != other.ID {
		t.Fatalf("claim after the first expiry took %+v (%v); want only the task whose lease was not renewed", later, err)
	}
	if err := s.RenewLease(ctx, other.ID, other.Token, now.Add(10*time.Minute)); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale token renewed: %v", err)
	}
	fin := store.Advance{ID: kept.ID, Token: kept.Token, Status: store.StatusFailed, FinishedAt: now}
	if err := advance(s, fin); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewLease(ctx, kept.ID, kept.Token, now.Add(20*time.Minute)); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("terminal task renewed: %v", err)
	}
}
