package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"mediagen/internal/store"
)

func enqueue(t *testing.T, s store.Store, jobs ...store.Job) {
	t.Helper()
	ctx := t.Context()
	err := s.Transact(ctx, func(tx store.Tx) error {
		for _, j := range jobs {
			if j.CreatedAt.IsZero() {
				j.CreatedAt = j.RunAt
			}
			if err := tx.EnqueueJob(ctx, j); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func updateJob(s store.Store, u store.JobUpdate) error {
	ctx := context.Background()
	return s.Transact(ctx, func(tx store.Tx) error { return tx.UpdateJob(ctx, u) })
}

func jobCounts(t *testing.T, s store.Store, now time.Time) string {
	t.Helper()
	counts, err := s.CountJobs(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range counts {
		out = append(out, fmt.Sprintf("%s running=%v due=%v n=%d", c.Kind, c.Running, c.Due, c.N))
	}
	sort.Strings(out)
	return fmt.Sprint(out)
}

// testJobsEnqueueClaimAndUpdate covers one job's life: an idempotent enqueue, a claim that
// counts an attempt, updates fenced by the token (schedule, checkpoint, done), and counts.
func testJobsEnqueueClaimAndUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	j := store.Job{ID: "k:1", Kind: "k", Ref: "1", TenantID: "acme", KeyID: "key_1", Payload: []byte(`{"p":1}`), RunAt: now, Deadline: now.Add(time.Hour),
		RequestID: "req_1"}
	enqueue(t, s, j)
	dup := j
	dup.Payload, dup.RunAt = []byte(`{"p":2}`), now.Add(time.Hour)
	enqueue(t, s, dup) // the same id: left as it is
	enqueue(t, s, store.Job{ID: "k:later", Kind: "k", Ref: "later", RunAt: now.Add(time.Hour)})
	if got := jobCounts(t, s, now); got != "[k running=false due=false n=1 k running=false due=true n=1]" {
		t.Errorf("counts before claiming: %s", got)
	}
	// The oldest due time of each group is what the queue-age metric reads.
	if counts, err := s.CountJobs(ctx, now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	} else {
		for _, c := range counts {
			if want := map[bool]time.Time{true: now, false: now.Add(time.Hour)}[c.Due]; !c.Oldest.Equal(want) {
				t.Errorf("count %+v: oldest %v, want %v", c, c.Oldest, want)
			}
		}
	}
	got, err := s.ClaimJobs(ctx, "k", "", now, time.Minute, 10, nil)
	if err != nil || len(got) != 1 {
		t.Fatalf("claim: %+v %v", got, err)
	}
	c := got[0]
	if c.ID != "k:1" || c.Ref != "1" || c.TenantID != "acme" || c.KeyID != "key_1" || string(c.Payload) != `{"p":1}` || c.RequestID != "req_1" || c.Attempt != 1 || c.Token == "" ||
		!c.Deadline.Equal(j.Deadline) || !c.CreatedAt.Equal(now) {
		t.Fatalf("claimed %+v", c)
	}
	if got := jobCounts(t, s, now); got != "[k running=false due=false n=1 k running=true due=false n=1]" {
		t.Errorf("counts while running: %s", got)
	}
	// Updates are fenced by the token: a wrong one changes nothing.
	if err := updateJob(s, store.JobUpdate{ID: c.ID, Token: "lease_wrong", Done: true}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("done with a wrong token: %v", err)
	}
	// A checkpoint keeps the lease: nobody else can claim the job.
	if err := updateJob(s, store.JobUpdate{ID: c.ID, Token: c.Token, KeepLease: true}); err != nil {
		t.Fatal(err)
	}
	if again, _ := s.ClaimJobs(ctx, "k", "", now.Add(30*time.Second), time.Minute, 10, nil); len(again) != 0 {
		t.Fatalf("claimed during a kept lease: %+v", again)
	}
	// A schedule releases the lease, keeps the attempts it is given, and is not due before its time.
	if err := updateJob(s, store.JobUpdate{ID: c.ID, Token: c.Token, RunAt: now.Add(10 * time.Second), Attempts: 1, LastError: "503"}); err != nil {
		t.Fatal(err)
	}
	if early, _ := s.ClaimJobs(ctx, "k", "", now.Add(5*time.Second), time.Minute, 10, nil); len(early) != 0 {
		t.Fatalf("claimed before its time: %+v", early)
	}
	again, _ := s.ClaimJobs(ctx, "k", "", now.Add(11*time.Second), time.Minute, 10, nil)
	if len(again) != 1 || again[0].ID != c.ID || again[0].Attempt != 2 || again[0].Token == c.Token {
		t.Fatalf("after the retry delay: %+v", again)
	}
	if err := updateJob(s, store.JobUpdate{ID: c.ID, Token: c.Token, Done: true}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("the first claim's token still writes: %v", err)
	}
	// Done deletes it: nothing left to claim or renew.
	if err := updateJob(s, store.JobUpdate{ID: c.ID, Token: again[0].Token, Done: true}); err != nil {
		t.Fatal(err)
	}
	if rest, _ := s.ClaimJobs(ctx, "k", "", now.Add(time.Minute), time.Minute, 10, nil); len(rest) != 0 {
		t.Fatalf("claimed after done: %+v", rest)
	}
	if err := s.RenewJob(ctx, c.ID, again[0].Token, now.Add(time.Hour)); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("renewed after done: %v", err)
	}
	if got := jobCounts(t, s, now); got != "[k running=false due=false n=1]" {
		t.Errorf("counts after done: %s", got)
	}
}

// testJobsKindsAndQueuesIsolate: a claim takes only its kind and queue.
func testJobsKindsAndQueuesIsolate(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now()
	enqueue(t, s,
		store.Job{ID: "a:1", Kind: "a", Ref: "1", RunAt: now},
		store.Job{ID: "b:1", Kind: "b", Ref: "1", RunAt: now},
		store.Job{ID: "a@disk-2", Kind: "a", Queue: "disk-2", RunAt: now})
	got, err := s.ClaimJobs(ctx, "a", "", now, time.Minute, 10, nil)
	if err != nil || len(got) != 1 || got[0].ID != "a:1" {
		t.Fatalf("claim of kind a, shared queue: %+v %v", got, err)
	}
	got, _ = s.ClaimJobs(ctx, "a", "disk-2", now, time.Minute, 10, nil)
	if len(got) != 1 || got[0].ID != "a@disk-2" || got[0].Queue != "disk-2" {
		t.Fatalf("claim of kind a, queue disk-2: %+v", got)
	}
	if got, _ = s.ClaimJobs(ctx, "c", "", now, time.Minute, 10, nil); len(got) != 0 {
		t.Fatalf("claim of an unknown kind: %+v", got)
	}
}

// testJobsEnsureInsertsOnce: periodic work has one row however many processes ensure it.
func testJobsEnsureInsertsOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now()
	for i := 0; i < 3; i++ {
		if err := s.EnsureJob(ctx, store.Job{ID: "sweep", Kind: "sweep", RunAt: now.Add(time.Duration(i) * time.Hour), CreatedAt: now}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.ClaimJobs(ctx, "sweep", "", now, time.Minute, 10, nil)
	if err != nil || len(got) != 1 {
		t.Fatalf("periodic rows claimed: %+v %v", got, err)
	}
}

// testJobsPriorityAndFairShare: priority goes first; within it, tenants take turns, so one
// with many due jobs does not starve one with few; then the oldest goes first.
func testJobsPriorityAndFairShare(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now()
	var jobs []store.Job
	for i := 0; i < 20; i++ { // acme's backlog, older than bolt's jobs
		jobs = append(jobs, store.Job{ID: fmt.Sprintf("k:acme-%02d", i), Kind: "k", TenantID: "acme", RunAt: now.Add(time.Duration(i-100) * time.Millisecond)})
	}
	jobs = append(jobs,
		store.Job{ID: "k:bolt-0", Kind: "k", TenantID: "bolt", RunAt: now.Add(-50 * time.Millisecond)},
		store.Job{ID: "k:bolt-1", Kind: "k", TenantID: "bolt", RunAt: now.Add(-40 * time.Millisecond)},
		store.Job{ID: "k:urgent", Kind: "k", TenantID: "acme", Priority: -1, RunAt: now.Add(-time.Millisecond)})
	enqueue(t, s, jobs...)
	got, err := s.ClaimJobs(ctx, "k", "", now, time.Minute, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range got {
		ids = append(ids, j.ID)
	}
	sort.Strings(ids)
	want := []string{"k:acme-00", "k:acme-01", "k:bolt-0", "k:bolt-1", "k:urgent"}
	if fmt.Sprint(ids) != fmt.Sprint(want) {
		t.Fatalf("a claim of 5 took %v, want %v: the urgent job, both of bolt's, and acme's two oldest", ids, want)
	}
}
