package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/store"
)

func tasksInFlight(t *testing.T, s store.Store, k store.Key) store.InFlight {
	t.Helper()
	var f store.InFlight
	err := s.Transact(context.Background(), func(tx store.Tx) (err error) {
		f, err = tx.TasksInFlight(context.Background(), k.ID, k.TenantID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func speechesInFlight(t *testing.T, s store.Store, k store.Key) store.InFlight {
	t.Helper()
	var f store.InFlight
	err := s.Transact(context.Background(), func(tx store.Tx) (err error) {
		f, err = tx.SpeechesInFlight(context.Background(), k.ID, k.TenantID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func wantInFlight(t *testing.T, what string, got store.InFlight, key, tenant int) {
	t.Helper()
	if got.Key != key || got.Tenant != tenant {
		t.Errorf("%s: in flight key %d tenant %d, want %d and %d", what, got.Key, got.Tenant, key, tenant)
	}
}

func testInFlightTasksFollowCreateAndFinish(t *testing.T, s store.Store) {
	ctx := t.Context()
	a1, a2, b := newKey(t, s, "acme", false), newKey(t, s, "acme", false), newKey(t, s, "bolt", false)
	wantInFlight(t, "no tasks", tasksInFlight(t, s, a1), 0, 0)
	now := time.Now()
	mine := createTasks(t, s, a1, 2, now.Add(-time.Second))
	createTasks(t, s, a2, 1, now.Add(time.Hour))
	createTasks(t, s, b, 1, now.Add(time.Hour))
	wantInFlight(t, "created", tasksInFlight(t, s, a1), 2, 3)
	wantInFlight(t, "other key of the tenant", tasksInFlight(t, s, a2), 1, 3)
	wantInFlight(t, "other tenant", tasksInFlight(t, s, b), 1, 1)

	// A create that rolls back, and a duplicate client_request_id, count nothing.
	boom := errors.New("boom")
	if err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateTask(ctx, newTask(a1, "")); err != nil {
			return err
		}
		if f, err := tx.TasksInFlight(ctx, a1.ID, a1.TenantID); err != nil || f.Key != 3 || f.Tenant != 4 {
			t.Errorf("inside the creating transaction: %+v %v, want 3 and 4", f, err)
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	dup := newTask(a1, "same")
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, dup) }); err != nil {
		t.Fatal(err)
	}
	dup.ID = "vid_dup_" + dup.ID
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, dup) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate: %v", err)
	}
	wantInFlight(t, "after a rollback and a duplicate", tasksInFlight(t, s, a1), 3, 4)

	// Progress keeps a task in flight; a terminal status ends it, once.
	mine = append(mine, strings.TrimPrefix(dup.ID, "vid_dup_")) // the first of the pair, which was created
	write := func(a store.Advance) error {
		return s.Transact(ctx, func(tx store.Tx) error { return tx.AdvanceTask(ctx, a) })
	}
	if err := write(store.Advance{ID: mine[0], Status: store.StatusInProgress}); err != nil {
		t.Fatal(err)
	}
	wantInFlight(t, "in progress", tasksInFlight(t, s, a1), 3, 4)
	for i, st := range []string{store.StatusCompleted, store.StatusFailed, store.StatusExpired} {
		if err := write(store.Advance{ID: mine[i], Status: st, FinishedAt: now}); err != nil {
			t.Fatal(err)
		}
		wantInFlight(t, st, tasksInFlight(t, s, a1), 2-i, 3-i)
	}
	if err := write(store.Advance{ID: mine[2], Status: store.StatusFailed}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("second terminal write: %v", err)
	}
	wantInFlight(t, "a refused second terminal write", tasksInFlight(t, s, a1), 0, 1)
	wantInFlight(t, "the other tenant", tasksInFlight(t, s, b), 1, 1)
}

func testInFlightSpeechesFollowCreateAndFinish(t *testing.T, s store.Store) {
	ctx := t.Context()
	a1, a2 := newKey(t, s, "acme", false), newKey(t, s, "acme", false)
	until := time.Now().Add(time.Minute)
	sp1, sp2, sp3 := newSpeech(a1, "", until), newSpeech(a1, "x", until), newSpeech(a2, "", until)
	for _, sp := range []store.Speech{sp1, sp2, sp3} {
		createSpeech(t, s, sp)
	}
	wantInFlight(t, "created", speechesInFlight(t, s, a1), 2, 3)
	wantInFlight(t, "video tasks are counted apart", tasksInFlight(t, s, a1), 0, 0)
	finish := func(sp store.Speech, token string) error {
		return s.Transact(ctx, func(tx store.Tx) error {
			return tx.FinishSpeech(ctx, store.SpeechFinish{ID: sp.ID, Token: token, Status: store.SpeechCompleted, FinishedAt: time.Now()})
		})
	}
	if err := finish(sp1, sp1.AttemptToken); err != nil {
		t.Fatal(err)
	}
	if err := finish(sp1, sp1.AttemptToken); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("second finish: %v", err)
	}
	wantInFlight(t, "finished once", speechesInFlight(t, s, a1), 1, 2)
	if err := finish(sp3, sp3.AttemptToken); err != nil {
		t.Fatal(err)
	}
	wantInFlight(t, "other key finished", speechesInFlight(t, s, a1), 1, 1)
}

// errOverLimit is what the admitting transaction returns to roll its create back.
var errOverLimit = errors.New("over the in-flight limit")

// AdmitUnderLimit creates a task for key k in one transaction of s and keeps it only if the
// key then has no more than limit tasks in flight: how the service admits a video task.
func AdmitUnderLimit(ctx context.Context, s store.Store, k store.Key, limit int) error {
	return s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateTask(ctx, newTask(k, "")); err != nil {
			return err
		}
		f, err := tx.TasksInFlight(ctx, k.ID, k.TenantID)
		if err != nil {
			return err
		}
		if f.Key > limit {
			return errOverLimit
		}
		return nil
	})
}

// InFlightLimitHolds admits tasks for one key from many goroutines at once, spread over the
// given store handles (on PostgreSQL, two handles on one database are two replicas), and
// fails unless exactly limit were admitted and every other attempt was refused by the limit.
// The first handle must hold the key.
func InFlightLimitHolds(t *testing.T, handles []store.Store, limit, attempts int) {
	t.Helper()
	k := newKey(t, handles[0], "acme", false)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var admitted, refused atomic.Int64
	errs := make(chan error, attempts)
	var wg sync.WaitGroup
	for i := 0; i < attempts; i++ {
		wg.Add(1)
		go func(s store.Store) {
			defer wg.Done()
			switch err := AdmitUnderLimit(ctx, s, k, limit); {
			case err == nil:
				admitted.Add(1)
			case errors.Is(err, errOverLimit):
				refused.Add(1)
			default:
				errs <- err
			}
		}(handles[i%len(handles)])
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("admit: %v", err)
	}
	if admitted.Load() != int64(limit) || refused.Load() != int64(attempts-limit) {
		t.Fatalf("admitted %d and refused %d of %d concurrent creates, want %d admitted", admitted.Load(), refused.Load(), attempts, limit)
	}
	for i, s := range handles {
		wantInFlight(t, fmt.Sprintf("handle %d", i), tasksInFlight(t, s, k), limit, limit)
	}
}

func testInFlightLimitHoldsUnderConcurrentCreates(t *testing.T, s store.Store) {
	InFlightLimitHolds(t, []store.Store{s}, 5, 40)
}

// takeSlot asks for a slot of account as task of tenant and key, at now.
func takeSlot(t *testing.T, s store.Store, account, task, tenant, key string, limit int, now time.Time) bool {
	t.Helper()
	ctx := t.Context()
	var ok bool
	st := store.SlotTaker{SlotHolder: store.SlotHolder{Account: account, TaskID: task, TenantID: tenant, KeyID: key},
		Limit: limit, Now: now, WaitFor: time.Minute}
	if err := s.Transact(ctx, func(tx store.Tx) (err error) { ok, err = tx.TakeSlot(ctx, st); return err }); err != nil {
		t.Error(err)
	}
	return ok
}

func releaseSlot(t *testing.T, s store.Store, h store.SlotHolder) {
	t.Helper()
	ctx := t.Context()
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.ReleaseSlot(ctx, h) }); err != nil {
		t.Fatal(err)
	}
}

// testUpstreamSlotsNeverExceedTheLimit: concurrent takers of one account's slots never take
// more than the limit; a release frees one; accounts are counted apart.
func testUpstreamSlotsNeverExceedTheLimit(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now()
	var mu sync.Mutex
	took := 0
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Go(func() {
			if takeSlot(t, s, "ark-main", fmt.Sprintf("video_%d", i), "acme", "key_a", 5, now) {
				mu.Lock()
				took++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if took != 5 {
		t.Fatalf("12 concurrent takers of 5 slots took %d", took)
	}
	if takeSlot(t, s, "ark-main", "video_x", "acme", "key_a", 5, now) {
		t.Error("a sixth slot was taken")
	}
	releaseSlot(t, s, store.SlotHolder{Account: "ark-main", TenantID: "acme", KeyID: "key_a"})
	// Past the line's wait: the refused takers stopped asking, so a new one gets the slot.
	later := now.Add(2 * time.Minute)
	if !takeSlot(t, s, "ark-main", "video_y", "acme", "key_a", 5, later) || !takeSlot(t, s, "other", "video_z", "acme", "key_a", 1, later) {
		t.Error("a released slot, or another account's, was not free")
	}
	got, err := s.UpstreamSlots(ctx)
	if err != nil || got["ark-main"] != 5 || got["other"] != 1 {
		t.Errorf("slots %v %v", got, err)
	}
}

// testUpstreamSlotGoesToWhoHoldsLeast: a tenant holds both of an account's slots and has 8
// more tasks in line; another tenant's task (or, within a tenant, another key's) asks after
// them. The freed slot goes to it, not to the oldest in line, and the line keeps the slot
// for it when the oldest asks first.
func testUpstreamSlotGoesToWhoHoldsLeast(t *testing.T, s store.Store) {
	for _, tc := range []struct {
		name, tenant, key string
	}{
		{"another tenant", "bolt", "key_b"},
		{"another key of the tenant", "acme", "key_b"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			account := "ark-" + tc.tenant + "-" + tc.key
			now := time.Now()
			for i := range 2 {
				if !takeSlot(t, s, account, fmt.Sprintf("a%d", i), "acme", "key_a", 2, now) {
					t.Fatalf("task a%d was refused a free slot", i)
				}
			}
			for i := 2; i < 10; i++ {
				if takeSlot(t, s, account, fmt.Sprintf("a%d", i), "acme", "key_a", 2, now.Add(time.Duration(i)*time.Millisecond)) {
					t.Fatalf("task a%d took a third slot", i)
				}
			}
			if takeSlot(t, s, account, "b0", tc.tenant, tc.key, 2, now.Add(time.Second)) {
				t.Fatal("b0 took a third slot")
			}
			releaseSlot(t, s, store.SlotHolder{Account: account, TaskID: "a0", TenantID: "acme", KeyID: "key_a"})
			at := now.Add(2 * time.Second)
			if takeSlot(t, s, account, "a2", "acme", "key_a", 2, at) {
				t.Fatal("the oldest task in line took the freed slot; want it kept for b0, whose side holds none")
			}
			if !takeSlot(t, s, account, "b0", tc.tenant, tc.key, 2, at) {
				t.Fatal("b0 was refused the freed slot")
			}
			// Only acme's key_a waits now: the next freed slot goes to the oldest of its tasks.
			releaseSlot(t, s, store.SlotHolder{Account: account, TaskID: "a1", TenantID: "acme", KeyID: "key_a"})
			if takeSlot(t, s, account, "a3", "acme", "key_a", 2, at) {
				t.Fatal("a3 took the slot before a2, older in line")
			}
			if !takeSlot(t, s, account, "a2", "acme", "key_a", 2, at) {
				t.Fatal("a2, first in line, was refused the freed slot")
			}
		})
	}
}

// testLeftSlotLineHoldsNothingBack: a task refused a slot waits in the account's line, and a
// freed slot is kept for it; once it leaves the line (routed elsewhere) the slot goes to the
// next task at once.
func testLeftSlotLineHoldsNothingBack(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now()
	if !takeSlot(t, s, "ark-line", "l0", "acme", "key_a", 1, now) {
		t.Fatal("the free slot was refused")
	}
	if takeSlot(t, s, "ark-line", "l1", "acme", "key_a", 1, now) {
		t.Fatal("a second slot of one was taken")
	}
	releaseSlot(t, s, store.SlotHolder{Account: "ark-line", TaskID: "l0", TenantID: "acme", KeyID: "key_a"})
	if takeSlot(t, s, "ark-line", "l2", "acme", "key_a", 1, now.Add(time.Second)) {
		t.Fatal("l2 took the slot kept for l1, first in line")
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.LeaveSlotLine(ctx, "l1") }); err != nil {
		t.Fatal(err)
	}
	// l2 asked after l1 and waits in line too; it is first now.
	if !takeSlot(t, s, "ark-line", "l2", "acme", "key_a", 1, now.Add(2*time.Second)) {
		t.Fatal("the slot stayed held for l1 after it left the line")
	}
}
