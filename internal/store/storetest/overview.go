package storetest

import (
	"fmt"
	"testing"
	"time"

	"mediagen/internal/store"
)

// testOverviewQueueAndSlotStats: the console overview's reads count the jobs by kind and
// state with the oldest due job, and every upstream account's held slots and line.
func testOverviewQueueAndSlotStats(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	if got, err := s.JobQueueStats(ctx, now); err != nil || len(got) != 0 {
		t.Fatalf("stats of an empty queue: %+v %v", got, err)
	}
	enqueue(t, s,
		store.Job{ID: "a:1", Kind: "a", Ref: "1", RunAt: now.Add(-time.Hour)},
		store.Job{ID: "a:2", Kind: "a", Ref: "2", RunAt: now.Add(-time.Minute)},
		store.Job{ID: "a:3", Kind: "a", Ref: "3", RunAt: now.Add(time.Hour)},
		store.Job{ID: "b:1", Kind: "b", Ref: "1", RunAt: now.Add(-2 * time.Hour)},
	)
	// b's only job is leased: running, not due, so b has no oldest due job.
	if got, err := s.ClaimJobs(ctx, "b", "", now, time.Minute, 1, nil); err != nil || len(got) != 1 {
		t.Fatalf("claim b: %+v %v", got, err)
	}
	got, err := s.JobQueueStats(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.JobQueueStat{
		{Kind: "a", Due: 2, Scheduled: 1, OldestDue: now.Add(-time.Hour)},
		{Kind: "b", Running: 1},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("job queue stats:\n got %+v\nwant %+v", got, want)
	}

	if got, err := s.UpstreamSlotStats(ctx, now); err != nil || len(got) != 0 {
		t.Fatalf("slot stats with no slots: %+v %v", got, err)
	}
	for i := range 3 {
		ok := takeSlot(t, s, "ark-1", fmt.Sprintf("t%d", i), "acme", "key_a", 2, now.Add(time.Duration(i)*time.Millisecond))
		if ok != (i < 2) {
			t.Fatalf("take slot %d: %v", i, ok)
		}
	}
	takeSlot(t, s, "ark-2", "u0", "acme", "key_a", 1, now)
	releaseSlot(t, s, store.SlotHolder{Account: "ark-2", TaskID: "u0", TenantID: "acme", KeyID: "key_a"})
	slots, err := s.UpstreamSlotStats(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	wantSlots := []store.UpstreamSlotStat{{Account: "ark-1", InFlight: 2, Waiting: 1}, {Account: "ark-2"}}
	if fmt.Sprint(slots) != fmt.Sprint(wantSlots) {
		t.Errorf("slot stats:\n got %+v\nwant %+v", slots, wantSlots)
	}
	// A task in line that stopped asking (its WaitFor of a minute passed) is not counted.
	later, err := s.UpstreamSlotStats(ctx, now.Add(2*time.Minute))
	if err != nil || len(later) != 2 || later[0].Waiting != 0 {
		t.Errorf("slot stats after the line's wait: %+v %v", later, err)
	}
}
