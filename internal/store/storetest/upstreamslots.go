package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/store"
)

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
