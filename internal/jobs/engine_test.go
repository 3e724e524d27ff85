package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/jobs"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

func openDB(t *testing.T) store.Store { t.Helper(); return testkit.SQLite(t) }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// start runs an engine with the kind until the test ends.
func start(t *testing.T, db store.Store, now func() time.Time, reg prometheus.Registerer, kinds ...jobs.Kind) *jobs.Engine {
	t.Helper()
	e := jobs.New(jobs.Config{Store: db, Logger: quiet(), Now: now, Registry: reg})
	for _, k := range kinds {
		if err := e.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return e
}

func enqueue(t *testing.T, db store.Store, j store.Job) {
	t.Helper()
	if j.RunAt.IsZero() {
		j.RunAt = time.Now()
	}
	if j.CreatedAt.IsZero() {
		j.CreatedAt = j.RunAt
	}
	if err := db.Transact(t.Context(), func(tx store.Tx) error { return tx.EnqueueJob(t.Context(), j) }); err != nil {
		t.Fatal(err)
	}
}

// handler is a scripted Handler: run decides each run; gaveUp records GiveUp's causes.
type handler struct {
	run    func(ctx context.Context, j jobs.Job, cp jobs.Checkpoint) (jobs.Outcome, error)
	mu     sync.Mutex
	causes []error
	runs   atomic.Int64
}

func (h *handler) Run(ctx context.Context, j jobs.Job, cp jobs.Checkpoint) (jobs.Outcome, error) {
	h.runs.Add(1)
	return h.run(ctx, j, cp)
}

func (h *handler) GiveUp(_ context.Context, j jobs.Job, cause error) jobs.Outcome {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.causes = append(h.causes, cause)
	return jobs.Outcome{Done: true, Apply: setMeta("gave_up:"+j.ID, cause.Error())}
}

func (h *handler) gaveUp() []error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]error(nil), h.causes...)
}

// setMeta is a domain write for Apply: it records name=value once.
func setMeta(name, value string) jobs.Apply {
	return func(ctx context.Context, tx store.Tx) error {
		_, err := tx.SetMetaOnce(ctx, name, value)
		return err
	}
}

func meta(t *testing.T, db store.Store, name string) (string, bool) {
	t.Helper()
	v, ok, err := db.Meta(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	return v, ok
}

func jobCount(t *testing.T, db store.Store, kind string) int {
	t.Helper()
	counts, err := db.CountJobs(t.Context(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range counts {
		if c.Kind == kind {
			n += c.N
		}
	}
	return n
}

func TestDoneJobCommitsItsApplyAndIsDeleted(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	h := &handler{run: func(_ context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
		return jobs.Outcome{Done: true, Apply: setMeta("done:"+j.Ref, string(j.Payload))}, nil
	}}
	// Enqueueing the same job again while it exists is a no-op (a finished job is deleted, so
	// both enqueues come before the engine starts).
	enqueue(t, db, store.Job{ID: jobs.ID("k", "r1"), Kind: "k", Ref: "r1", Payload: []byte("p1")})
	enqueue(t, db, store.Job{ID: jobs.ID("k", "r1"), Kind: "k", Ref: "r1", Payload: []byte("p2")})
	reg := prometheus.NewRegistry()
	start(t, db, time.Now, reg, jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond})
	testkit.WaitFor(t, 10*time.Second, "still waiting for the job's write", func() bool { v, _ := meta(t, db, "done:r1"); return v == "p1" })
	testkit.WaitFor(t, 10*time.Second, "still waiting for the job's deletion", func() bool { return jobCount(t, db, "k") == 0 })
	if n := h.runs.Load(); n != 1 {
		t.Errorf("runs %d, want 1", n)
	}
	// The run is counted after its commit, so the deletion can be seen a moment before it.
	testkit.WaitFor(t, 10*time.Second, "still waiting for the done run's metric", func() bool {
		_, ok := findCounter(t, reg, "mediagen_job_runs_total", "k", "done")
		return ok
	})
	if got := counter(t, reg, "mediagen_job_runs_total", "k", "done"); got != 1 {
		t.Errorf("done runs metric %v, want 1", got)
	}
}

// On virtual time (synctest), as the other backoff, deadline and lease tests here: the
// engine's timers cost no wall time and fire in order on a loaded machine.
func TestFailingJobIsRetriedWithBackoffThenGivenUp(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		db := openDB(t)
		h := &handler{run: func(context.Context, jobs.Job, jobs.Checkpoint) (jobs.Outcome, error) {
			return jobs.Outcome{}, errors.New("upstream 503")
		}}
		start(t, db, time.Now, nil, jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond, MaxAttempts: 3,
			Backoff: jobs.Exponential(time.Millisecond, 4*time.Millisecond)})
		enqueue(t, db, store.Job{ID: "k:1", Kind: "k", Ref: "1"})
		testkit.WaitFor(t, 10*time.Second, "still waiting for give-up", func() bool { _, ok := meta(t, db, "gave_up:k:1"); return ok })
		if n := h.runs.Load(); n != 3 {
			t.Errorf("runs %d, want 3", n)
		}
		if c := h.gaveUp(); len(c) != 1 || !strings.Contains(c[0].Error(), "upstream 503") {
			t.Errorf("gave up with %v, want the last error", c)
		}
	})
}

func TestProgressResetsAttempts(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	// fail, progress, fail, fail, done: never 3 failures in a row, so never given up.
	script := []string{"err", "again", "err", "err", "done"}
	var i atomic.Int64
	h := &handler{run: func(_ context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
		switch script[i.Add(1)-1] {
		case "err":
			return jobs.Outcome{}, errors.New("transient")
		case "again":
			return jobs.Outcome{RunIn: time.Millisecond}, nil
		}
		return jobs.Outcome{Done: true, Apply: setMeta("done", "yes")}, nil
	}}
	start(t, db, time.Now, nil, jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond, MaxAttempts: 3,
		Backoff: jobs.Exponential(time.Millisecond, 2*time.Millisecond)})
	enqueue(t, db, store.Job{ID: "k:1", Kind: "k", Ref: "1"})
	testkit.WaitFor(t, 10*time.Second, "still waiting for done", func() bool { _, ok := meta(t, db, "done"); return ok })
	if c := h.gaveUp(); len(c) != 0 {
		t.Errorf("given up: %v", c)
	}
}

func TestDeadlineGivesUpWithoutRunning(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		db := openDB(t)
		h := &handler{run: func(context.Context, jobs.Job, jobs.Checkpoint) (jobs.Outcome, error) {
			return jobs.Outcome{Done: true}, nil
		}}
		start(t, db, time.Now, nil, jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond, Deadline: time.Hour})
		old := time.Now().Add(-2 * time.Hour)
		enqueue(t, db, store.Job{ID: "k:old", Kind: "k", Ref: "old", RunAt: old, CreatedAt: old})
		enqueue(t, db, store.Job{ID: "k:due", Kind: "k", Ref: "due", Deadline: time.Now().Add(-time.Second)})
		testkit.WaitFor(t, 10*time.Second, "still waiting for both given up", func() bool { return len(h.gaveUp()) == 2 })
		for _, c := range h.gaveUp() {
			if !errors.Is(c, jobs.ErrDeadline) {
				t.Errorf("cause %v, want ErrDeadline", c)
			}
		}
		if n := h.runs.Load(); n != 0 {
			t.Errorf("a job past its deadline ran %d times", n)
		}
	})
}

// A job whose runs keep dying (their process killed before recording anything) is given up
// once its attempts are spent, instead of taking down every process that claims it.
func TestJobWhoseRunsKeepDyingIsGivenUp(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clk := testkit.RunningClock()
	enqueue(t, db, store.Job{ID: "k:1", Kind: "k", Ref: "1"})
	for range 2 { // two dead processes: claims whose leases run out
		if c, err := db.ClaimJobs(t.Context(), "k", "", clk.Now(), time.Minute, 10, nil); err != nil || len(c) != 1 {
			t.Fatalf("dead claim: %v %v", c, err)
		}
		clk.Advance(2 * time.Minute)
	}
	h := &handler{run: func(context.Context, jobs.Job, jobs.Checkpoint) (jobs.Outcome, error) {
		return jobs.Outcome{Done: true}, nil
	}}
	start(t, db, clk.Now, nil, jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond, MaxAttempts: 2})
	testkit.WaitFor(t, 10*time.Second, "still waiting for give-up", func() bool { return len(h.gaveUp()) == 1 })
	if c := h.gaveUp(); !errors.Is(c[0], jobs.ErrInterrupted) {
		t.Errorf("cause %v, want ErrInterrupted", c[0])
	}
	if n := h.runs.Load(); n != 0 {
		t.Errorf("ran %d times", n)
	}
}

// A run that lost its lease (its process stalled past it and another took the job over)
// commits nothing, and its side effects are discarded.
func TestLostLeaseCommitsNothingAndDiscards(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clk := testkit.RunningClock()
	release := make(chan struct{})
	started := make(chan struct{})
	var discarded atomic.Bool
	h := &handler{run: func(ctx context.Context, j jobs.Job, cp jobs.Checkpoint) (jobs.Outcome, error) {
		close(started)
		<-release
		return jobs.Outcome{Done: true, Apply: setMeta("stale", "written"), Discard: func() { discarded.Store(true) }}, nil
	}}
	// A heartbeat far slower than the test, so the takeover below is not noticed early.
	start(t, db, clk.Now, nil, jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond, Lease: time.Hour})
	enqueue(t, db, store.Job{ID: "k:1", Kind: "k", Ref: "1"})
	<-started
	clk.Advance(2 * time.Hour)
	taken, err := db.ClaimJobs(t.Context(), "k", "", clk.Now(), time.Hour, 10, nil)
	if err != nil || len(taken) != 1 {
		t.Fatalf("takeover: %v %v", taken, err)
	}
	close(release)
	testkit.WaitFor(t, 10*time.Second, "still waiting for discard", discarded.Load)
	if _, ok := meta(t, db, "stale"); ok {
		t.Error("a run that lost its lease committed its write")
	}
	if jobCount(t, db, "k") != 1 {
		t.Error("the job was deleted by a run that lost its lease")
	}
}

// A checkpoint after a takeover is refused, and the run is told to stop.
func TestCheckpointAfterTakeoverIsRefused(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	clk := testkit.RunningClock()
	taken := make(chan struct{})
	cpErr := make(chan error, 1)
	h := &handler{run: func(ctx context.Context, j jobs.Job, cp jobs.Checkpoint) (jobs.Outcome, error) {
		if err := cp(ctx, setMeta("first", "ok")); err != nil {
			return jobs.Outcome{}, err
		}
		<-taken
		err := cp(ctx, setMeta("second", "stale"))
		cpErr <- err
		return jobs.Outcome{}, err
	}}
	start(t, db, clk.Now, nil, jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond, Lease: time.Hour})
	enqueue(t, db, store.Job{ID: "k:1", Kind: "k", Ref: "1"})
	testkit.WaitFor(t, 10*time.Second, "still waiting for first checkpoint", func() bool { _, ok := meta(t, db, "first"); return ok })
	clk.Advance(2 * time.Hour)
	if c, err := db.ClaimJobs(t.Context(), "k", "", clk.Now(), time.Hour, 10, nil); err != nil || len(c) != 1 {
		t.Fatalf("takeover: %v %v", c, err)
	}
	close(taken)
	if err := <-cpErr; !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("checkpoint after takeover: %v, want ErrLeaseLost", err)
	}
	if _, ok := meta(t, db, "second"); ok {
		t.Error("the stale checkpoint wrote")
	}
}

// Stop lets a run within its grace finish; a run cut short is handed back due at once with
// its attempt uncounted.
func TestStopHandsBackRunsCutShort(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	started := make(chan struct{})
	h := &handler{run: func(ctx context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
		close(started)
		<-ctx.Done() // runs until Stop cancels it
		return jobs.Outcome{}, ctx.Err()
	}}
	e := jobs.New(jobs.Config{Store: db, Logger: quiet()})
	if err := e.Register(jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond, Lease: time.Hour}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	enqueue(t, db, store.Job{ID: "k:1", Kind: "k", Ref: "1"})
	<-started
	e.Stop()
	e.Stop() // idempotent
	c, err := db.ClaimJobs(t.Context(), "k", "", time.Now(), time.Minute, 10, nil)
	if err != nil || len(c) != 1 {
		t.Fatalf("not claimable right after Stop: %v %v", c, err)
	}
	if c[0].Attempt != 1 {
		t.Errorf("this claim is attempt %d, want 1: the cut-short run was counted", c[0].Attempt)
	}
}

// One periodic job exists per kind and queue however many processes run it, and one of them
// runs it at a time.
func TestPeriodicJobRunsOnceAtATimeAcrossEngines(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	var running, overlap, runs atomic.Int64
	pass := jobs.Periodic(func(ctx context.Context) error {
		if running.Add(1) > 1 {
			overlap.Add(1)
		}
		time.Sleep(2 * time.Millisecond) // fixed: simulated work, so two passes would overlap
		running.Add(-1)
		runs.Add(1)
		return nil
	})
	k := jobs.Kind{Name: "sweep", Queue: "disk-a", Handler: pass, Every: 10 * time.Millisecond, Poll: 2 * time.Millisecond}
	start(t, db, time.Now, nil, k)
	start(t, db, time.Now, nil, k)
	testkit.WaitFor(t, 10*time.Second, "still waiting for several passes", func() bool { return runs.Load() >= 5 })
	if n := overlap.Load(); n != 0 {
		t.Errorf("%d passes overlapped", n)
	}
	if n := jobCount(t, db, "sweep"); n != 1 {
		t.Errorf("%d periodic jobs, want 1", n)
	}
}

// A periodic pass that fails is tried again, and never given up.
func TestPeriodicFailureIsRetriedNotGivenUp(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	var runs atomic.Int64
	pass := jobs.Periodic(func(ctx context.Context) error {
		if runs.Add(1) <= 3 {
			return errors.New("disk busy")
		}
		return nil
	})
	start(t, db, time.Now, nil, jobs.Kind{Name: "sweep", Handler: pass, Every: 5 * time.Millisecond, Poll: 2 * time.Millisecond,
		MaxAttempts: 1, Backoff: jobs.Exponential(time.Millisecond, 2*time.Millisecond)})
	testkit.WaitFor(t, 10*time.Second, "still waiting for passes after failures", func() bool { return runs.Load() >= 5 })
	if n := jobCount(t, db, "sweep"); n != 1 {
		t.Errorf("%d periodic jobs, want 1", n)
	}
}

func TestRegisterRefusesBadKinds(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	h := &handler{}
	e := jobs.New(jobs.Config{Store: db, Logger: quiet()})
	if err := e.Register(jobs.Kind{Handler: h}); err == nil {
		t.Error("a kind without a name was registered")
	}
	if err := e.Register(jobs.Kind{Name: "k"}); err == nil {
		t.Error("a kind without a handler was registered")
	}
	if err := e.Register(jobs.Kind{Name: "k", Handler: h}); err != nil {
		t.Fatal(err)
	}
	if err := e.Register(jobs.Kind{Name: "k", Handler: h}); err == nil {
		t.Error("a kind was registered twice")
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	if err := e.Register(jobs.Kind{Name: "late", Handler: h}); err == nil {
		t.Error("a kind was registered after Start")
	}
}

func TestExponentialBackoffGrowsAndIsCapped(t *testing.T) {
	t.Parallel()
	backoff := jobs.Exponential(time.Second, 30*time.Second)
	for attempt := 1; attempt < 12; attempt++ {
		d := backoff(attempt)
		want := time.Second << (attempt - 1)
		if want > 30*time.Second || want <= 0 {
			want = 30 * time.Second
		}
		if d < want/2 || d > want {
			t.Errorf("attempt %d: %v outside [%v, %v]", attempt, d, want/2, want)
		}
	}
}

// counter is the value of the counter with exactly these label values (in label order).
func counter(t *testing.T, reg *prometheus.Registry, name string, values ...string) float64 {
	t.Helper()
	v, ok := findCounter(t, reg, name, values...)
	if !ok {
		t.Fatalf("no %s%v", name, values)
	}
	return v
}

// findCounter is the counter's value, and false while it has not been recorded.
func findCounter(t *testing.T, reg *prometheus.Registry, name string, values ...string) (float64, bool) {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != len(values) {
				continue
			}
			for i, l := range m.GetLabel() {
				if l.GetValue() != values[i] {
					continue next
				}
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// A periodic pass of a process that died (its claim's lease runs out) is run again by
// another process, and the job stays one row. On virtual time (synctest): the engine keeps
// polling through the 20 ms the test watches, however loaded the machine.
func TestPeriodicJobOfADeadProcessRunsAgain(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		db := openDB(t)
		clk := testkit.RunningClock()
		if err := db.EnsureJob(t.Context(), store.Job{ID: "sweep", Kind: "sweep", RunAt: clk.Now(), CreatedAt: clk.Now()}); err != nil {
			t.Fatal(err)
		}
		if c, err := db.ClaimJobs(t.Context(), "sweep", "", clk.Now(), time.Minute, 1, nil); err != nil || len(c) != 1 {
			t.Fatalf("the dead process's claim: %v %v", c, err)
		}
		var runs atomic.Int64
		start(t, db, clk.Now, nil, jobs.Kind{Name: "sweep", Handler: jobs.Periodic(func(context.Context) error { runs.Add(1); return nil }),
			Every: time.Hour, Poll: 2 * time.Millisecond})
		time.Sleep(20 * time.Millisecond) // fixed: a negative check, no pass while the lease holds
		if n := runs.Load(); n != 0 {
			t.Fatalf("ran %d times while the dead process's lease held", n)
		}
		clk.Advance(2 * time.Minute)
		testkit.WaitFor(t, 10*time.Second, "still waiting for the pass after the lease", func() bool { return runs.Load() == 1 })
		if n := jobCount(t, db, "sweep"); n != 1 {
			t.Errorf("%d periodic jobs, want 1", n)
		}
	})
}
