package video

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/billing"
	"mediagen/internal/idgen"
	"mediagen/internal/jobs"
	"mediagen/internal/logctx"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// TaskKind is the job kind of a video task: one job per task, enqueued with it.
const TaskKind = "video.task"

// TaskJob is the job that runs a task, enqueued in the task's own transaction.
func TaskJob(t store.Task) store.Job {
	return store.Job{ID: jobs.ID(TaskKind, t.ID), Kind: TaskKind, Ref: t.ID, TenantID: t.TenantID, KeyID: t.KeyID,
		RunAt: t.CreatedAt, CreatedAt: t.CreatedAt}
}

// Outcome is what one step of a task decided.
type Outcome struct {
	Status   string // queued or in_progress while running
	Progress int
	Step     string
	State    []byte
	RunIn    time.Duration // when the task is due again
	Final    *Final        // set when the task reaches a terminal state
	// TakeSlot, on a checkpoint, takes a slot of this upstream account (at most SlotLimit
	// in flight) with the write; ErrSlotsFull when none is free for this task, which then
	// waits in the account's line (store.QueueTx.TakeSlot) for up to SlotLine without
	// asking again.
	TakeSlot  string
	SlotLimit int
	SlotLine  time.Duration
	// ReleaseSlot, on a checkpoint, gives back the slot the task held of this account (a
	// routed task moving to another account), before any TakeSlot.
	ReleaseSlot string
	// LeaveLine, on a checkpoint, takes the task out of any account's line (a routed task
	// bound to an account without a limit).
	LeaveLine bool
	// Detail is written as the step's event (why a routed task chose or left an account).
	Detail string
}

// Final is a terminal outcome.
type Final struct {
	Status       string // completed, failed, expired
	Result       []byte
	ErrorCode    string
	ErrorMessage string
	Charge       money.Micros // the settled amount; 0 releases the whole reservation
	// Internal is the reason behind a failure, for operators only (the task's event): the
	// upstream's own answer or the error, where ErrorMessage is what the client may read.
	Internal string
	// Excess is what the task's upstreams did beyond its request, recorded with the
	// settlement (store.UpstreamExcess); only a completed task has any, but for a failed
	// task's lost create (billing.ExcessLostCreate).
	Excess []billing.Excess
	// UpstreamTokens are the completion tokens the upstream reported for the job it ran
	// (production: the generation half's), 0 when it reported none: what the operator's cost
	// is priced on (billing.WithTaskCost), which may differ from the tokens billed.
	UpstreamTokens int64
	// UpstreamSeconds are the seconds of output the upstream reported (0: none): the
	// operator's cost on an account priced per second (billing.WithTaskCostSeconds).
	UpstreamSeconds float64
}

// Stepper runs the steps of tasks (the Pipeline; a script in tests). Step returns an error
// for a transient failure (retried with backoff by the job engine); a permanent failure is a
// Final outcome. save records progress within a step under the job's lease (for example
// "about to submit" before an upstream call).
type Stepper interface {
	Step(ctx context.Context, c store.TaskRun, save func(Outcome) error) (Outcome, error)
	// Expired is the terminal outcome of a task past the deadline.
	Expired(c store.TaskRun) Final
}

// Abandoner is a Stepper that can stop what a task it gives up still runs upstream
// (Pipeline.Abandon cancels the job of an engine that can cancel).
type Abandoner interface {
	Abandon(ctx context.Context, c store.TaskRun)
}

// TaskRuns is what the task handler reads.
type TaskRuns interface {
	TaskRun(ctx context.Context, id string) (store.TaskRun, error)
}

// Tasks is the job handler of video tasks: it runs a task's step and turns the outcome into
// the task's update, and a terminal outcome into the task's settlement, committed with the
// job's outcome, so a task is settled exactly once.
type Tasks struct {
	Store    TaskRuns
	Steps    Stepper
	Logger   *slog.Logger
	Metrics  *TaskMetrics      // may be nil
	Overages *billing.Overages // counts settlements above their reservation (may be nil)
	// Excess counts the upstream excess settled (may be nil: logged only).
	Excess *billing.ExcessMetrics
	Now    func() time.Time // nil: time.Now
	// Accounts looks up the upstream account a task ran on, for the operator's cost stored
	// at settlement (billing.WithTaskCost; nil: every cost unknown).
	Accounts billing.Accounts
	// Workers is how many task steps this process runs at once (0: the engine's default);
	// Deadline gives up a task this long after it was created (0: never).
	Workers  int
	Deadline time.Duration
	// RetryMax is the longest wait between two attempts of a step that failed transiently:
	// the wait doubles from 1 s up to it (with jitter). 0: the engine's default, 2 minutes.
	RetryMax time.Duration
	// Tracer, when set, makes the terminal update and settlement a span "task.settle"
	// inside the job's final transaction (trace.go); nil: none.
	Tracer trace.Tracer
	// Events announces a task's terminal state to the tenant's webhook endpoints, written in
	// the settlement's transaction (nil: none; internal/webhook).
	Events Announcer
}

// Announcer writes an event in the transaction of the state change it announces, and wakes
// its sender once that committed (webhook.Service).
type Announcer interface {
	Announce(ctx context.Context, tx store.Tx, e webhook.Event) (string, error)
	Wake()
}

// outcomeEvent is the webhook event type of a terminal status.
func outcomeEvent(status string) string {
	if status == store.StatusCompleted {
		return webhook.VideoCompleted
	}
	return webhook.VideoFailed
}

// Kinds are the video tasks' job kinds, to register with the engine of the processes that
// run tasks (the worker role).
func (h *Tasks) Kinds() []jobs.Kind {
	// A step is never cut short by shutdown before its own timeout: steps checkpoint before
	// upstream calls, but a finished upstream call is cheaper to record than to repeat.
	k := jobs.Kind{Name: TaskKind, Handler: h, Workers: h.Workers, Deadline: h.Deadline, Grace: time.Minute}
	if h.RetryMax > 0 {
		k.Backoff = jobs.Exponential(time.Second, h.RetryMax)
	}
	return []jobs.Kind{k}
}

// gaveUpMessage is the failure of a task whose step kept failing.
const gaveUpMessage = "The video could not be generated. Start a new task deliberately if you still need it."

// Run implements jobs.Handler.
func (h *Tasks) Run(ctx context.Context, j jobs.Job, cp jobs.Checkpoint) (jobs.Outcome, error) {
	c, err := h.Store.TaskRun(ctx, j.Ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return jobs.Outcome{Done: true}, nil
	case err != nil:
		return jobs.Outcome{}, err
	case store.Terminal(c.Status):
		return jobs.Outcome{Done: true}, nil
	}
	// latest is the task as this run last wrote it: c, then each committed checkpoint. The
	// step's outcome applies on top of it, not on c: a checkpoint may have taken an upstream
	// slot (recorded in its state), and an outcome without a state of its own, such as a
	// create refused right after that checkpoint, must neither write c's older state over it
	// nor settle without releasing the slot it records.
	latest := c
	save := func(o Outcome) error {
		a := advance(latest, o, j.Attempt)
		full := false
		err := cp(ctx, func(ctx context.Context, tx store.Tx) error {
			full = false
			if o.ReleaseSlot != "" {
				if err := tx.ReleaseSlot(ctx, store.SlotHolder{Account: o.ReleaseSlot, TaskID: latest.ID, TenantID: latest.TenantID, KeyID: latest.KeyID}); err != nil {
					return err
				}
			}
			if o.LeaveLine {
				if err := tx.LeaveSlotLine(ctx, latest.ID); err != nil {
					return err
				}
			}
			if o.TakeSlot != "" {
				ok, err := tx.TakeSlot(ctx, store.SlotTaker{
					SlotHolder: store.SlotHolder{Account: o.TakeSlot, TaskID: latest.ID, TenantID: latest.TenantID, KeyID: latest.KeyID},
					Limit:      o.SlotLimit, Now: h.now(), WaitFor: o.SlotLine})
				if err != nil {
					return err
				}
				if !ok {
					// The task's place in line commits; its state does not change.
					full = true
					return nil
				}
			}
			return tx.AdvanceTask(ctx, a)
		})
		switch {
		case err != nil:
			return err
		case full:
			return ErrSlotsFull
		}
		latest = advanced(latest, a)
		return nil
	}
	start := time.Now()
	out, err := h.Steps.Step(ctx, c, save)
	h.Metrics.stepDone(c.Route, c.Step, time.Since(start), err)
	if err != nil {
		if !errors.Is(err, store.ErrLeaseLost) {
			h.Metrics.retried(c.Route, c.Step)
		}
		return jobs.Outcome{}, err
	}
	if out.Final != nil {
		return h.final(ctx, latest, out, j.Attempt), nil
	}
	a := advance(latest, out, j.Attempt)
	return jobs.Outcome{RunIn: out.RunIn, Apply: func(ctx context.Context, tx store.Tx) error { return tx.AdvanceTask(ctx, a) }}, nil
}

// GiveUp implements jobs.Handler: a task past its deadline gets the stepper's expiry; a task
// whose step kept failing (or kept dying) fails with a full refund.
func (h *Tasks) GiveUp(ctx context.Context, j jobs.Job, cause error) jobs.Outcome {
	c, err := h.Store.TaskRun(ctx, j.Ref)
	if err != nil || store.Terminal(c.Status) {
		return jobs.Outcome{Done: true}
	}
	f := Final{Status: store.StatusFailed, ErrorCode: "video_generation_failed", ErrorMessage: gaveUpMessage}
	if errors.Is(cause, jobs.ErrDeadline) {
		f = h.Steps.Expired(c)
	} else {
		logctx.Logger(ctx, h.log()).Error("task step keeps failing; failing the task", "task", c.ID, "attempts", j.Attempt, "err", cause)
	}
	if f.Internal == "" && cause != nil {
		f.Internal = "gave up after attempt " + strconv.Itoa(j.Attempt) + ": " + cause.Error()
	}
	if a, ok := h.Steps.(Abandoner); ok {
		a.Abandon(ctx, c)
	}
	return h.final(ctx, c, Outcome{Final: &f}, j.Attempt)
}

// Failed implements jobs.FailureRecorder: a failed attempt of a task's step is an event of
// the task, committed with the retry's schedule, so an operator sees every attempt and the
// error behind it (the job row that also holds it is deleted when the task ends).
func (h *Tasks) Failed(j jobs.Job, cause error) jobs.Apply {
	return func(ctx context.Context, tx store.Tx) error {
		return tx.AppendTaskEvent(ctx, store.TaskEvent{TaskID: j.Ref, At: h.now(), Attempt: j.Attempt,
			Detail: "attempt " + strconv.Itoa(j.Attempt) + " failed: " + truncate(cause.Error(), maxDetail)})
	}
}

// maxDetail bounds an event's internal reason: errors can quote whole upstream answers.
const maxDetail = 1000

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// advance is the update of a step that keeps the task running.
func advance(c store.TaskRun, o Outcome, attempt int) store.Advance {
	status := o.Status
	if status == "" {
		status = c.Status
	}
	progress := max(o.Progress, c.Progress) // progress never goes back
	if progress > 99 {
		progress = 99 // 100 belongs to completed
	}
	step := o.Step
	if step == "" {
		step = c.Step
	}
	state := o.State
	if state == nil {
		state = c.State
	}
	account, job := upstreamOf(c.Request, state)
	return store.Advance{ID: c.ID, Status: status, Progress: progress, Step: step, State: state,
		Attempt: attempt, Upstream: account, UpstreamJob: job, Detail: truncate(o.Detail, maxDetail)}
}

// upstreamOf is the account and the upstream job id a task waits on, read from its stored
// request's binding and its pipeline state: the enhancement half's once it has one.
func upstreamOf(request, state []byte) (account, job string) {
	var req Stored
	if json.Unmarshal(request, &req) != nil {
		return "", ""
	}
	var st pipeState
	if len(state) > 0 && json.Unmarshal(state, &st) != nil {
		return req.Upstream, ""
	}
	if st.EnhJob != "" {
		return enhAccount(req, st), st.EnhJob
	}
	return genAccount(req, st), st.GenJob
}

// genAccount is the account of the task's generation half (or of its one half): the one a
// routed task chose (its state), or the alias's.
func genAccount(req Stored, st pipeState) string {
	if st.Account != "" {
		return st.Account
	}
	return req.Upstream
}

// enhAccount is the account of the task's enhancement half: a production task's own
// (chosen, or enhance_upstream, or the alias's upstream); a standalone enhancement's one half.
func enhAccount(req Stored, st pipeState) string {
	if req.Request == nil || req.Request.Production == nil {
		return genAccount(req, st)
	}
	if st.EnhAccount != "" {
		return st.EnhAccount
	}
	if req.EnhanceUpstream != "" {
		return req.EnhanceUpstream
	}
	return req.Upstream
}

// advanced is c once the update a committed.
func advanced(c store.TaskRun, a store.Advance) store.TaskRun {
	c.Status, c.Progress, c.Step, c.State = a.Status, a.Progress, a.Step, a.State
	return c
}

// final is the terminal update and the settlement, in one transaction with the job's end.
// The task update is a compare-and-swap on a non-terminal status, so if it does not apply,
// neither does the settlement: money moves once.
func (h *Tasks) final(ctx context.Context, c store.TaskRun, o Outcome, attempt int) jobs.Outcome {
	f := o.Final
	progress := c.Progress
	if f.Status == store.StatusCompleted {
		progress = 100
	}
	charge, excess := f.Charge, f.Excess
	if f.Status != store.StatusCompleted {
		charge, excess = 0, lostCreates(excess)
	}
	currency := billing.QuoteCurrency(c.Pricing)
	state := o.State
	if state == nil {
		state = c.State
	}
	account, job := upstreamOf(c.Request, state)
	var overage bool
	var announced string
	return jobs.Outcome{
		Done: true,
		Apply: h.traceSettle(c.ID, f.Status, func(ctx context.Context, tx store.Tx) error {
			now := h.now()
			a := store.Advance{ID: c.ID, Status: f.Status, Progress: progress, Step: "done", State: state,
				Result: f.Result, ErrorCode: f.ErrorCode, ErrorMessage: f.ErrorMessage, Charged: charge, FinishedAt: now,
				Attempt: attempt, Upstream: account, UpstreamJob: job, Detail: truncate(f.Internal, maxDetail)}
			if err := tx.AdvanceTask(ctx, a); err != nil {
				return err
			}
			if h.Events != nil {
				// After the compare-and-swap: an outcome is announced once, with its commit.
				var err error
				announced, err = h.Events.Announce(ctx, tx, webhook.Event{TenantID: c.TenantID, KeyID: c.KeyID,
					RequestID: logctx.RequestID(ctx), Type: outcomeEvent(f.Status), ObjectID: c.ID, At: now})
				if err != nil {
					return err
				}
			}
			if account := heldSlot(c.Request, state); account != "" {
				if err := tx.ReleaseSlot(ctx, store.SlotHolder{Account: account, TaskID: c.ID, TenantID: c.TenantID, KeyID: c.KeyID}); err != nil {
					return err
				}
			}
			settled := c.Task
			settled.Status, settled.Charged, settled.Result, settled.FinishedAt = f.Status, charge, f.Result, now
			usage := billing.TaskUsage(settled)
			if ran := ranOn(c.Request, state); ran != "" {
				usage.Upstream = ran // a routed task counts, and is costed, on the account it ran on
			}
			over, err := billing.SettleUsage(ctx, tx, c.ID, billing.WithTaskCostSeconds(usage, settled, f.UpstreamTokens, f.UpstreamSeconds, h.Accounts), now)
			if err != nil {
				return err
			}
			overage = over > 0
			for _, e := range excess {
				err := tx.RecordUpstreamExcess(ctx, store.UpstreamExcess{ID: idgen.New("uex"), Upstream: e.Upstream, Route: c.Route,
					Ref: c.ID, KeyID: c.KeyID, TenantID: c.TenantID, Kind: e.Kind, Claimed: e.Claimed, Charged: charge, Amount: e.Amount,
					Currency: currency, Detail: e.Detail, CreatedAt: now})
				if err != nil {
					return err
				}
			}
			return nil
		}),
		After: func() {
			if announced != "" {
				h.Events.Wake()
			}
			// The settlement's line names whose money moved: key, tenant and alias, and the
			// request that started the task.
			log := logctx.Logger(ctx, h.log()).With("task", c.ID, "route", c.Route, "key_id", c.KeyID, "tenant_id", c.TenantID, "alias", c.Model)
			h.Metrics.finished(c.Route, f.Status, c.Reserved, charge)
			if overage || charge > c.Reserved {
				h.Overages.Record(log, c.Route, currency, c.KeyID, c.ID, c.Reserved, charge)
			}
			h.Excess.Record(log, c.Route, currency, c.ID, c.KeyID, charge, excess)
			log.Info("task finished", "status", f.Status, "code", f.ErrorCode, "reserved", c.Reserved.String(), "charged", charge.String())
		},
	}
}

func (h *Tasks) now() time.Time {
	if h.Now == nil {
		return time.Now()
	}
	return h.Now()
}

func (h *Tasks) log() *slog.Logger {
	if h.Logger == nil {
		return slog.Default()
	}
	return h.Logger
}

// heldSlot is the upstream account whose slot the task holds, or "": read from the task's
// state (pipeState.SlotHeld) and its stored request's binding.
// ranOn is the account a routed task's generation half ran on ("" for a one-account alias,
// whose Stored binding says it): the usage rollups and the operator's cost count it there.
func ranOn(request, state []byte) string {
	var st pipeState
	if len(state) == 0 || json.Unmarshal(state, &st) != nil || st.Account == "" {
		return ""
	}
	var req Stored
	if json.Unmarshal(request, &req) != nil {
		return ""
	}
	return genAccount(req, st)
}

func heldSlot(request, state []byte) string {
	var st pipeState
	if len(state) == 0 || json.Unmarshal(state, &st) != nil || !st.SlotHeld {
		return ""
	}
	var req Stored
	if json.Unmarshal(request, &req) != nil {
		return ""
	}
	return genAccount(req, st)
}
