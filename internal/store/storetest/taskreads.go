package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/store"
)

// testTaskReadsFollowWrites polls a task while a runner advances it, as clients do. Once an
// advance has returned, every read shows it; and no poller ever sees progress go backwards.
// A store that caches reads (SQLite's task cache) must pass this exactly like one that
// does not.
func testTaskReadsFollowWrites(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	id := createTasks(t, s, k, 1, time.Now().Add(-time.Second))[0]
	for range 2 {
		if got, err := s.Task(ctx, id); err != nil || got.Status != store.StatusQueued || got.Progress != 0 {
			t.Fatalf("fresh task: %+v %v", got, err)
		}
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var reads atomic.Int64
	errs := make(chan error, 8)
	for range 4 {
		readers.Go(func() {
			last := -1
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := s.Task(ctx, id)
				if err != nil {
					errs <- err
					return
				}
				if got.Progress < last {
					errs <- fmt.Errorf("progress went back from %d to %d", last, got.Progress)
					return
				}
				last = got.Progress
				reads.Add(1)
			}
		})
	}
	claim := func(at time.Time) store.Job {
		t.Helper()
		c := claimTasks(t, s, at, 1)
		if len(c) != 1 || c[0].Ref != id {
			t.Fatalf("claim: %+v", c)
		}
		return c[0]
	}
	for p := 1; p <= 60; p++ {
		c := claim(time.Now())
		if err := advance(s, store.JobUpdate{ID: c.ID, Token: c.Token, RunAt: time.Now().Add(-time.Millisecond)},
			store.Advance{ID: id, Status: store.StatusInProgress, Progress: p, Step: "poll"}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Task(ctx, id); err != nil || got.Progress != p || got.Status != store.StatusInProgress {
			close(stop)
			t.Fatalf("read after advance to %d: %+v %v", p, got, err)
		}
	}
	// A write whose job's lease was lost rolls back whole: the next read shows no change.
	c := claim(time.Now())
	stale := store.JobUpdate{ID: c.ID, Token: "lease_stale", RunAt: time.Now()}
	if err := advance(s, stale, store.Advance{ID: id, Status: store.StatusInProgress, Progress: 99, Step: "poll"}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale write: %v", err)
	}
	if got, _ := s.Task(ctx, id); got.Progress != 60 {
		t.Errorf("progress %d after a refused write, want 60", got.Progress)
	}
	if err := advance(s, store.JobUpdate{ID: c.ID, Token: c.Token, Done: true}, store.Advance{ID: id, Status: store.StatusCompleted, Progress: 100,
		FinishedAt: time.Now(), Result: []byte(`{"video_key":"k"}`)}); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Task(ctx, id); got.Status != store.StatusCompleted || string(got.Result) != `{"video_key":"k"}` {
		t.Errorf("completed task reads %+v", got)
	}
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if reads.Load() == 0 {
		t.Error("the pollers never read")
	}
}
