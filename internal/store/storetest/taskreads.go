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
	polls := startPollers(ctx, s, id, 4)
	claim := func(at time.Time) store.Job {
		t.Helper()
		c := claimTasks(t, s, at, 1)
		if len(c) != 1 || c[0].Ref != id {
			t.Fatalf("claim: %+v", c)
		}
		return c[0]
	}
	for p := 1; p <= 60; p++ {
		stepTask(t, s, id, p)
		if got, err := s.Task(ctx, id); err != nil || got.Progress != p || got.Status != store.StatusInProgress {
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
	for _, err := range polls.finish() {
		t.Error(err)
	}
	if polls.reads.Load() == 0 {
		t.Error("the pollers never read")
	}
}

// stepTask is one step of a runner on s: it claims task id's job and advances the task to
// progress p, due again at once. Other due task jobs it claimed on the way (tasks an earlier
// check left behind on the same store) are handed back unchanged.
func stepTask(t *testing.T, s store.Store, id string, p int) {
	t.Helper()
	var mine *store.Job
	for _, c := range claimTasks(t, s, time.Now(), 16) {
		if c.Ref == id {
			mine = &c
			continue
		}
		if err := s.Transact(context.Background(), func(tx store.Tx) error {
			return tx.UpdateJob(context.Background(), store.JobUpdate{ID: c.ID, Token: c.Token, RunAt: c.RunAt})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if mine == nil {
		t.Fatalf("task %s's job was not due", id)
	}
	if err := advance(s, store.JobUpdate{ID: mine.ID, Token: mine.Token, RunAt: time.Now().Add(-time.Millisecond)},
		store.Advance{ID: id, Status: store.StatusInProgress, Progress: p, Step: "poll"}); err != nil {
		t.Fatal(err)
	}
}

// pollers read a task over and over from several goroutines, as clients poll it; a poller
// that sees progress go back reports it and stops. They also stop when ctx ends.
type pollers struct {
	stop  chan struct{}
	wg    sync.WaitGroup
	reads atomic.Int64
	errs  chan error
}

func startPollers(ctx context.Context, s store.Store, id string, n int) *pollers {
	p := &pollers{stop: make(chan struct{}), errs: make(chan error, n)}
	for range n {
		p.wg.Go(func() {
			last := -1
			for {
				select {
				case <-p.stop:
					return
				default:
				}
				got, err := s.Task(ctx, id)
				if err != nil {
					p.errs <- err
					return
				}
				if got.Progress < last {
					p.errs <- fmt.Errorf("progress went back from %d to %d", last, got.Progress)
					return
				}
				last = got.Progress
				p.reads.Add(1)
				readPause()
			}
		})
	}
	return p
}

// readPause spaces a reader's reads: each reader still reads thousands of times a second,
// interleaving with every write, but does not spin a core away from the writers it races
// (and from the other packages make test runs at once: the spinning readers took about 30 s
// of CPU per run).
func readPause() { time.Sleep(50 * time.Microsecond) }

// finish stops the pollers and returns what they found.
func (p *pollers) finish() []error {
	close(p.stop)
	p.wg.Wait()
	close(p.errs)
	var errs []error
	for err := range p.errs {
		errs = append(errs, err)
	}
	return errs
}

// A completed task's result can be rewritten (the deletion mark of DELETE /v1/videos/{id})
// and the next read sees it, through any cache; a task not completed cannot, and its result
// stays as it was.
func testTaskResultReplacedOnlyWhenCompleted(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	done, running := newTask(k, ""), newTask(k, "")
	for _, task := range []store.Task{done, running} {
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateTask(ctx, task) }); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.AdvanceTask(ctx, store.Advance{ID: done.ID, Status: store.StatusCompleted, Progress: 100, FinishedAt: time.Now(), Result: []byte(`{"video_key":"r/a.mp4"}`)})
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Task(ctx, done.ID); err != nil { // fills any cache
		t.Fatal(err)
	}
	marked := []byte(`{"video_key":"r/a.mp4","deleted_at":1}`)
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.ReplaceTaskResult(ctx, done.ID, marked) }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Task(ctx, done.ID)
	if err != nil || string(got.Result) != string(marked) || got.Status != store.StatusCompleted {
		t.Fatalf("after replace: %s %s %v", got.Status, got.Result, err)
	}
	err = s.Transact(ctx, func(tx store.Tx) error { return tx.ReplaceTaskResult(ctx, running.ID, marked) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("replace on a queued task: %v, want ErrNotFound", err)
	}
	if got, _ := s.Task(ctx, running.ID); len(got.Result) != 0 {
		t.Fatalf("queued task's result became %s", got.Result)
	}
}
