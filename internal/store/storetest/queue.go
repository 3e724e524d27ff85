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

// taskKind is the job kind of video tasks (internal/video.TaskKind; the store knows no kind,
// so the suite names its own).
const taskKind = "video.task"

// createTasks creates n queued tasks, each with its job due at due, as the video service does.
func createTasks(t *testing.T, s store.Store, k store.Key, n int, due time.Time) []string {
	t.Helper()
	ctx := t.Context()
	var ids []string
	for i := 0; i < n; i++ {
		task := newTask(k, "")
		err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateTask(ctx, task); err != nil {
				return err
			}
			return tx.EnqueueJob(ctx, store.Job{ID: taskKind + ":" + task.ID, Kind: taskKind, Ref: task.ID, TenantID: task.TenantID, KeyID: task.KeyID,
				RunAt: due, CreatedAt: task.CreatedAt})
		})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, task.ID)
	}
	return ids
}

func claimTasks(t *testing.T, s store.Store, now time.Time, limit int) []store.Job {
	t.Helper()
	got, err := s.ClaimJobs(context.Background(), taskKind, "", now, time.Minute, limit, nil)
	if err != nil {
		t.Fatalf("claim: %v", err)
	}
	return got
}

// advance writes a task's step outcome as the task handler does: the job's fenced update and
// the task's update in one transaction.
func advance(s store.Store, u store.JobUpdate, a store.Advance) error {
	ctx := context.Background()
	return s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.UpdateJob(ctx, u); err != nil {
			return err
		}
		return tx.AdvanceTask(ctx, a)
	})
}

func testQueueClaimLeaseAndFence(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	now := time.Now()
	ids := createTasks(t, s, k, 3, now.Add(-time.Second))
	createTasks(t, s, k, 1, now.Add(time.Hour)) // not due
	got := claimTasks(t, s, now, 10)
	if len(got) != 3 {
		t.Fatalf("claimed %d; want the 3 due tasks", len(got))
	}
	for _, j := range got {
		r, err := s.TaskRun(ctx, j.Ref)
		if j.Token == "" || j.Attempt != 1 || err != nil || r.Step != "" || string(r.Request) != `{"a":1}` || string(r.Pricing) != `{"rate":1}` {
			t.Errorf("claim %+v, task %+v %v", j, r, err)
		}
	}
	if again := claimTasks(t, s, now, 10); len(again) != 0 {
		t.Fatalf("leased tasks claimed twice: %d", len(again))
	}
	// A fenced write with the right token lands and releases the lease.
	u := store.JobUpdate{ID: got[0].ID, Token: got[0].Token, RunAt: now.Add(-time.Millisecond)}
	a := store.Advance{ID: got[0].Ref, Status: store.StatusInProgress, Progress: 40, Step: "poll", State: []byte(`{"job":"j1"}`)}
	if err := advance(s, u, a); err != nil {
		t.Fatal(err)
	}
	// The stale token can no longer write, and the task's update rolls back with the job's.
	a.Progress = 41
	if err := advance(s, u, a); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale token write: %v", err)
	}
	re := claimTasks(t, s, now, 10)
	if len(re) != 1 || re[0].ID != got[0].ID || re[0].Attempt != 1 {
		t.Fatalf("reclaim after advance: %+v", re)
	}
	if r, _ := s.TaskRun(ctx, re[0].Ref); r.Step != "poll" || string(r.State) != `{"job":"j1"}` || r.Progress != 40 {
		t.Fatalf("task after advance and a refused stale write: %+v", r)
	}
	// Expired leases are taken over: claim "later than" the lease, counting an attempt.
	taken := claimTasks(t, s, now.Add(2*time.Minute), 10)
	if len(taken) != 3 {
		t.Fatalf("takeover claimed %d", len(taken))
	}
	for _, j := range taken {
		if j.Attempt != 2 {
			t.Errorf("takeover of %s is attempt %d, want 2", j.ID, j.Attempt)
		}
	}
	// The old holder's token is fenced out.
	if err := advance(s, store.JobUpdate{ID: got[1].ID, Token: got[1].Token}, store.Advance{ID: got[1].Ref, Status: store.StatusInProgress}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("old holder wrote after takeover: %v", err)
	}
	// A job handed back is claimable at once, its attempt uncounted. (Not ids[2]'s: that one
	// finishes below under the takeover's token; a claim returns its jobs in the order it
	// chose them, not in the order they were made.)
	handed := taken[0]
	if handed.Ref == ids[2] {
		handed = taken[1]
	}
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.UpdateJob(ctx, store.JobUpdate{ID: handed.ID, Token: handed.Token, RunAt: time.Now(), Attempts: handed.Attempt - 1})
	}); err != nil {
		t.Fatal(err)
	}
	if back := claimTasks(t, s, time.Now().Add(time.Second), 10); len(back) != 1 || back[0].ID != handed.ID || back[0].Attempt != 2 {
		t.Fatalf("handed-back task not claimable as attempt 2: %+v", back)
	}
	// A terminal task ends its job, refuses further writes, and is never claimed again.
	var fin store.Job
	for _, j := range taken {
		if j.Ref == ids[2] {
			fin = j
		}
	}
	done := store.Advance{ID: ids[2], Status: store.StatusCompleted, Progress: 100, FinishedAt: now, Result: []byte(`{}`)}
	if err := advance(s, store.JobUpdate{ID: fin.ID, Token: fin.Token, Done: true}, done); err != nil {
		t.Fatal(err)
	}
	done.Status = store.StatusFailed
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.AdvanceTask(ctx, done) }); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("terminal task rewritten: %v", err)
	}
	if got, _ := s.Task(ctx, ids[2]); got.Status != store.StatusCompleted || string(got.Result) != `{}` {
		t.Fatalf("terminal task = %+v", got)
	}
	for _, j := range claimTasks(t, s, now.Add(time.Hour), 10) {
		if j.Ref == ids[2] {
			t.Fatal("a finished task's job was claimed")
		}
	}
	if counts, err := s.CountTasks(ctx); err != nil || counts[store.StatusCompleted] != 1 {
		t.Fatalf("counts %v %v", counts, err)
	}
}

func testQueueConcurrentClaimersDisjoint(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	now := time.Now()
	createTasks(t, s, k, 40, now.Add(-time.Second))
	var mu sync.Mutex
	seen := map[string]int{}
	// Concurrent claims choose the same fairest candidates, and on PostgreSQL a claim skips
	// what another holds, so a claim can come back short while jobs remain: the claimers go
	// on until every task was claimed, within a bound, rather than a fixed number of times.
	done := func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == 40 }
	deadline := time.Now().Add(30 * time.Second)
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000 && !done() && time.Now().Before(deadline); i++ {
				got, err := s.ClaimJobs(ctx, taskKind, "", now, time.Minute, 3, nil)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) > 3 {
					t.Errorf("claimed %d tasks with limit 3", len(got))
				}
				mu.Lock()
				for _, c := range got {
					seen[c.Ref]++
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
	ctx := t.Context()
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
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	now := time.Now()
	var native []string
	for _, route := range []string{"native", "native", "production"} {
		task := newTask(k, "")
		task.Route = route
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, task) }); err != nil {
			t.Fatal(err)
		}
		if route == "native" {
			native = append(native, task.ID)
		}
	}
	// One native task runs, one finishes; the production task stays queued.
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.AdvanceTask(ctx, store.Advance{ID: native[0], Status: store.StatusInProgress, Progress: 10})
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.AdvanceTask(ctx, store.Advance{ID: native[1], Status: store.StatusCompleted, Progress: 100, FinishedAt: now, Result: []byte(`{}`)})
	}); err != nil {
		t.Fatal(err)
	}
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
// finished job cannot renew.
func testQueueRenewLease(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	now := time.Now()
	createTasks(t, s, k, 2, now.Add(-time.Second))
	got := claimTasks(t, s, now, 10)
	if len(got) != 2 {
		t.Fatalf("claimed %d", len(got))
	}
	kept, other := got[0], got[1]
	if err := s.RenewJob(ctx, kept.ID, kept.Token, now.Add(10*time.Minute)); err != nil {
		t.Fatalf("renew: %v", err)
	}
	later := claimTasks(t, s, now.Add(5*time.Minute), 10)
	if len(later) != 1 || later[0].ID != other.ID {
		t.Fatalf("claim after the first expiry took %+v; want only the task whose lease was not renewed", later)
	}
	if err := s.RenewJob(ctx, other.ID, other.Token, now.Add(10*time.Minute)); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale token renewed: %v", err)
	}
	fin := store.Advance{ID: kept.Ref, Status: store.StatusFailed, FinishedAt: now}
	if err := advance(s, store.JobUpdate{ID: kept.ID, Token: kept.Token, Done: true}, fin); err != nil {
		t.Fatal(err)
	}
	if err := s.RenewJob(ctx, kept.ID, kept.Token, now.Add(20*time.Minute)); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("finished job renewed: %v", err)
	}
}
