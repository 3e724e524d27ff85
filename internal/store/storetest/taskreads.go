package storetest

import (
	"context"
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
	ctx := context.Background()
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
	claim := func(at time.Time) store.Claimed {
		t.Helper()
		c, err := s.ClaimDue(ctx, at, time.Minute, 1)
		if err != nil || len(c) != 1 || c[0].ID != id {
			t.Fatalf("claim: %+v %v", c, err)
		}
		return c[0]
	}
	for p := 1; p <= 60; p++ {
		c := claim(time.Now())
		if err := advance(s, store.Advance{ID: id, Token: c.Token, Status: store.StatusInProgress, Progress: p,
			Step: "poll", Attempts: p, NextRunAt: time.Now().Add(-time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
		if got, err := s.Task(ctx, id); err != nil || got.Progress != p || got.Status != store.StatusInProgress {
			close(stop)
			t.Fatalf("read after advance to %d: %+v %v", p, got, err)
		}
	}
	// Handing a lease back changes when the task is due; the next read shows it.
	c := claim(time.Now())
	before := time.Now()
	if err := s.ReleaseLease(ctx, id, c.Token); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Task(ctx, id); got.NextRunAt.Before(before.Add(-time.Millisecond)) {
		t.Errorf("next_run_at %v after a release at %v", got.NextRunAt, before)
	}
	c = claim(time.Now().Add(time.Second))
	if err := advance(s, store.Advance{ID: id, Token: c.Token, Status: store.StatusCompleted, Progress: 100,
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
