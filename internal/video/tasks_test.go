package video

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/jobs"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// scripted is a Handler whose steps follow a script per task: "ok" advances, "err" fails
// transiently, "done" completes with the charge, "fail" fails permanently.
type scripted struct {
	mu     sync.Mutex
	script []string
	charge money.Micros
	calls  map[string]int
	runs   atomic.Int64
}

func (h *scripted) Step(ctx context.Context, c store.TaskRun, save func(Outcome) error) (Outcome, error) {
	h.runs.Add(1)
	h.mu.Lock()
	i := h.calls[c.ID]
	h.calls[c.ID]++
	h.mu.Unlock()
	if i >= len(h.script) {
		return Outcome{}, fmt.Errorf("script exhausted")
	}
	switch h.script[i] {
	case "ok":
		if err := save(Outcome{Status: store.StatusInProgress, Progress: 10 * (i + 1), Step: "save"}); err != nil {
			return Outcome{}, err
		}
		return Outcome{Status: store.StatusInProgress, Progress: 10*(i+1) + 5, Step: fmt.Sprintf("s%d", i+1), State: []byte(`{}`)}, nil
	case "err":
		return Outcome{}, errors.New("upstream 503")
	case "done":
		return Outcome{Final: &Final{Status: store.StatusCompleted, Result: []byte(`{"ok":true}`), Charge: h.charge}}, nil
	case "fail":
		return Outcome{Final: &Final{Status: store.StatusFailed, ErrorCode: "InvalidParameter.TaskTypeMismatch", ErrorMessage: "mismatch"}}, nil
	}
	return Outcome{}, nil
}

func (h *scripted) Expired(c store.TaskRun) Final {
	return Final{Status: store.StatusExpired, ErrorCode: "task_expired", ErrorMessage: "too slow"}
}

type env struct {
	t   *testing.T
	db  store.Store
	key store.Key
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db := testkit.SQLite(t)
	_, k := testkit.Key(t, db, "acme", 10_000_000, false)
	return &env{t: t, db: db, key: k}
}

var taskSeq atomic.Int64

func (e *env) task(reserve money.Micros, created time.Time) string {
	e.t.Helper()
	ctx := context.Background()
	// Unique without the clock: on virtual time (synctest) the clock stands still between calls.
	id := fmt.Sprintf("video_%d", taskSeq.Add(1))
	task := store.Task{ID: id, KeyID: e.key.ID, TenantID: "acme", Route: "native", Model: "m", Status: store.StatusQueued,
		PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`), Reserved: reserve, CreatedAt: created, UpdatedAt: created}
	err := e.db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateTask(ctx, task); err != nil {
			return err
		}
		if err := tx.EnqueueJob(ctx, TaskJob(task)); err != nil {
			return err
		}
		return billing.Reserve(ctx, tx, keys.Caller{Key: e.key}, id, reserve, created)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return id
}

func (e *env) waitTerminal(id string) store.Task {
	e.t.Helper()
	var task store.Task
	testkit.WaitFor(e.t, 10*time.Second, fmt.Sprintf("task %s not terminal in time", id), func() bool {
		var err error
		if task, err = e.db.Task(context.Background(), id); err != nil {
			e.t.Fatal(err)
		}
		return store.Terminal(task.Status)
	})
	return task
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// runTasks starts a job engine that runs the env's tasks with the stepper; k tunes the kind.
func (e *env) runTasks(steps Stepper, k jobs.Kind) *jobs.Engine {
	e.t.Helper()
	eng := jobs.New(jobs.Config{Store: e.db, Logger: quiet()})
	k.Name, k.Handler = TaskKind, &Tasks{Store: e.db, Steps: steps, Logger: quiet()}
	if err := eng.Register(k); err != nil {
		e.t.Fatal(err)
	}
	if err := eng.Start(e.t.Context()); err != nil {
		e.t.Fatal(err)
	}
	return eng
}

func TestTasksCompletesAndSettlesOnce(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		h := &scripted{script: []string{"ok", "err", "ok", "done"}, charge: 700_000, calls: map[string]int{}}
		r := e.runTasks(h, jobs.Kind{Poll: 5 * time.Millisecond, Backoff: jobs.Exponential(2*time.Millisecond, 10*time.Millisecond)})
		defer r.Stop()
		id := e.task(1_000_000, time.Now())
		got := e.waitTerminal(id)
		if got.Status != store.StatusCompleted || got.Progress != 100 || got.Charged != 700_000 || string(got.Result) != `{"ok":true}` {
			t.Fatalf("task = %+v", got)
		}
		b, _ := e.db.Balance(context.Background(), e.key.ID)
		if b.Available != 9_300_000 || b.Used != 700_000 || b.Reserved != 0 {
			t.Fatalf("balance %+v", b)
		}
		time.Sleep(30 * time.Millisecond) // a terminal task is never claimed again
		if n := h.runs.Load(); n != 4 {
			t.Errorf("steps run %d, want 4", n)
		}
		if err := e.db.CheckLedger(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTasksFailsAfterMaxAttemptsAndRefunds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		h := &scripted{script: []string{"err", "err", "err", "err"}, calls: map[string]int{}}
		r := e.runTasks(h, jobs.Kind{Poll: 5 * time.Millisecond, MaxAttempts: 3, Backoff: jobs.Exponential(time.Millisecond, 4*time.Millisecond)})
		defer r.Stop()
		id := e.task(1_000_000, time.Now())
		got := e.waitTerminal(id)
		if got.Status != store.StatusFailed || got.ErrorCode != "video_generation_failed" || got.Charged != 0 {
			t.Fatalf("task %+v", got)
		}
		if n := h.runs.Load(); n != 3 {
			t.Errorf("attempts %d, want 3", n)
		}
		b, _ := e.db.Balance(context.Background(), e.key.ID)
		if b.Available != 10_000_000 || b.Reserved != 0 || b.Used != 0 {
			t.Fatalf("not fully refunded: %+v", b)
		}
	})
}

func TestTasksPermanentFailureAndExpiryRefund(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		h := &scripted{script: []string{"fail"}, calls: map[string]int{}}
		r := e.runTasks(h, jobs.Kind{Poll: 5 * time.Millisecond, Deadline: time.Hour})
		defer r.Stop()
		failed := e.task(500_000, time.Now())
		old := e.task(300_000, time.Now().Add(-2*time.Hour))
		if got := e.waitTerminal(failed); got.Status != store.StatusFailed || got.ErrorCode != "InvalidParameter.TaskTypeMismatch" {
			t.Fatalf("failed task %+v", got)
		}
		if got := e.waitTerminal(old); got.Status != store.StatusExpired || got.ErrorCode != "task_expired" {
			t.Fatalf("expired task %+v", got)
		}
		b, _ := e.db.Balance(context.Background(), e.key.ID)
		if b.Available != 10_000_000 || b.Reserved != 0 {
			t.Fatalf("balance %+v", b)
		}
	})
}

func TestTwoEnginesNeverRunATaskTwice(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		h := &scripted{script: []string{"ok", "done"}, charge: 1, calls: map[string]int{}}
		var ids []string
		for i := 0; i < 30; i++ {
			ids = append(ids, e.task(10, time.Now()))
		}
		a := e.runTasks(h, jobs.Kind{Poll: 2 * time.Millisecond, Batch: 3})
		b := e.runTasks(h, jobs.Kind{Poll: 2 * time.Millisecond, Batch: 3})
		for _, id := range ids {
			e.waitTerminal(id)
		}
		a.Stop()
		b.Stop()
		for id, n := range h.calls {
			if n != 2 {
				t.Errorf("task %s ran %d steps, want 2", id, n)
			}
		}
		if err := e.db.CheckLedger(context.Background()); err != nil {
			t.Fatal(err)
		}
	})
}

// slowStep blocks each step until released, then fails transiently once the runner stops.
type slowStep struct {
	started chan struct{}
}

func (h *slowStep) Step(ctx context.Context, c store.TaskRun, save func(Outcome) error) (Outcome, error) {
	close(h.started)
	time.Sleep(50 * time.Millisecond) // fixed: simulated work, still running when the engine stops
	return Outcome{}, errors.New("interrupted by shutdown")
}

func (h *slowStep) Expired(store.TaskRun) Final { return Final{Status: store.StatusExpired} }

func TestStopHandsLeasesBack(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		h := &slowStep{started: make(chan struct{})}
		r := e.runTasks(h, jobs.Kind{Poll: 5 * time.Millisecond, Lease: time.Hour})
		id := e.task(100, time.Now())
		<-h.started
		r.Stop() // the running step ends with an error while stopping: its lease goes back, no attempt counted
		claimed, err := e.db.ClaimJobs(context.Background(), TaskKind, "", time.Now().Add(time.Second), time.Minute, 10, nil)
		if err != nil || len(claimed) != 1 || claimed[0].Ref != id {
			t.Fatalf("task not claimable right after Stop (lease not handed back): %+v %v", claimed, err)
		}
		if claimed[0].Attempt != 1 {
			t.Errorf("shutdown counted as a failed attempt: this claim is attempt %d, want 1", claimed[0].Attempt)
		}
	})
}

// leaseSpanningStep takes several leases to finish; it counts how often each task's step started.
type leaseSpanningStep struct {
	d      time.Duration
	starts sync.Map // id → *atomic.Int64
}

func (h *leaseSpanningStep) Step(ctx context.Context, c store.TaskRun, _ func(Outcome) error) (Outcome, error) {
	n, _ := h.starts.LoadOrStore(c.ID, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	select {
	case <-time.After(h.d):
	case <-ctx.Done():
		return Outcome{}, ctx.Err()
	}
	return Outcome{Final: &Final{Status: store.StatusCompleted, Result: []byte(`{}`), Charge: 1}}, nil
}

func (h *leaseSpanningStep) Expired(store.TaskRun) Final { return Final{Status: store.StatusExpired} }

// A step longer than the lease keeps its task through the heartbeat: a second engine on the
// same store never takes it over while the first is alive.
//
// It runs on virtual time (synctest): the step's 2.5 s, the leases and the renewals cost no
// wall time, and a loaded machine's scheduling cannot make a renewal late.
func TestHeartbeatKeepsALiveStepsTask(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		// The step spans several leases, renewed every third of a lease.
		h := &leaseSpanningStep{d: 2500 * time.Millisecond}
		k := jobs.Kind{Poll: 5 * time.Millisecond, Lease: time.Second}
		a := e.runTasks(h, k)
		defer a.Stop()
		id := e.task(1_000, time.Now())
		// a claims it first
		testkit.WaitFor(t, 5*time.Second, "the first engine never started the step", func() bool {
			_, ok := h.starts.Load(id)
			return ok
		})
		b := e.runTasks(h, k)
		defer b.Stop()
		if got := e.waitTerminal(id); got.Status != store.StatusCompleted {
			t.Fatalf("task = %+v", got)
		}
		n, _ := h.starts.Load(id)
		if starts := n.(*atomic.Int64).Load(); starts != 1 {
			t.Fatalf("the step started %d times; the heartbeat should have kept the lease", starts)
		}
	})
}

// refusedAfterCheckpoint takes its account's slot with a checkpoint, as a submit does, then
// fails for good without a state of its own, as a create the upstream refuses does.
type refusedAfterCheckpoint struct{ state []byte }

func (h refusedAfterCheckpoint) Step(ctx context.Context, c store.TaskRun, save func(Outcome) error) (Outcome, error) {
	if err := save(Outcome{Status: store.StatusInProgress, Step: phaseGenSubmit, State: h.state, TakeSlot: slotAccount, SlotLimit: 1}); err != nil {
		return Outcome{}, err
	}
	return permanent("video_generation_failed", "refused"), nil
}

func (refusedAfterCheckpoint) Expired(store.TaskRun) Final { return Final{Status: store.StatusExpired} }

// The final outcome of a first run applies on top of the run's checkpoint, not of the task as
// the run read it: the checkpoint's state stays, and the slot it records is released with the
// refund.
func TestFinalAfterACheckpointReleasesTheSlotItTook(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		h := refusedAfterCheckpoint{state: []byte(`{"submitting":true,"submit_at":1,"slot_held":true}`)}
		r := e.runTasks(h, jobs.Kind{Poll: 5 * time.Millisecond})
		defer r.Stop()
		ctx := context.Background()
		task := nativeTask("p", 1)
		id := e.storedTask(task.req, task.quote, 1_000_000)
		if got := e.waitTerminal(id); got.Status != store.StatusFailed || got.Charged != 0 {
			t.Fatalf("task %+v", got)
		}
		run, err := e.db.TaskRun(ctx, id)
		if err != nil || string(run.State) != string(h.state) {
			t.Errorf("final state %s %v; want the checkpoint's %s", run.State, err, h.state)
		}
		if slots, err := e.db.UpstreamSlots(ctx); err != nil || slots[slotAccount] != 0 {
			t.Errorf("slots %v %v; want %s's released", slots, err, slotAccount)
		}
		if b, err := e.db.Balance(ctx, e.key.ID); err != nil || b.Available != 10_000_000 || b.Reserved != 0 || b.Used != 0 {
			t.Errorf("balance %+v %v; want the reservation refunded", b, err)
		}
		if err := e.db.CheckLedger(ctx); err != nil {
			t.Fatal(err)
		}
	})
}
