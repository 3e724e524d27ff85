package video

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/go-json-experiment/json"

	"mediagen/internal/billing"
	"mediagen/internal/blob"
	"mediagen/internal/contract"
	"mediagen/internal/logctx"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// Upstream is one engine, by the name aliases bind to in the catalog.
type Upstream struct {
	Generator provider.Generator
	Enhancer  provider.Enhancer
}

// Pipeline runs the steps of video tasks for the worker: generation, enhancement, or
// generation → enhancement → optional last frame for production, as one public task.
type Pipeline struct {
	Upstreams map[string]Upstream
	// Lookup, when set, finds an engine by account name instead of Upstreams: a catalog
	// reload swaps the engines it answers from (new accounts, rebuilt clients) while steps
	// run. A step looks its engines up once, at its start.
	Lookup func(name string) (Upstream, bool)
	Blobs  blob.Store
	Tools  ffmpeg.Tools
	Fetch  *safefetch.Client // copies results a remote upstream hands back as URLs
	// LinkTTL is how long the links handed to upstreams (intermediate outputs) stay valid.
	LinkTTL time.Duration
	// PollMin and PollMax bound the upstream polling interval: fast at first, backing off.
	PollMin, PollMax time.Duration
	// UpstreamErrors, when set, counts what went wrong upstream, by route, upstream, call
	// (submit, poll) and kind: transient (retried), rejected (a permanent error), job_failed
	// and job_expired (the upstream's job ended without a result). See NewUpstreamErrors.
	UpstreamErrors *prometheus.CounterVec
	// MaxInFlight is the bound on upstream jobs in flight of an account (0: none). A task
	// takes its account's slot with its first submit and keeps it until it ends.
	MaxInFlight func(upstream string) int
	// SlotWait is how long a task whose account is full waits before trying again (1 s).
	SlotWait time.Duration
	// UpstreamWaits, when set, counts the submits that waited for a slot, by upstream.
	UpstreamWaits *prometheus.CounterVec
	// UpstreamCancels, when set, counts the upstream jobs cancelled as their task was given
	// up (cancel.go), by upstream and outcome.
	UpstreamCancels *prometheus.CounterVec
	// UpstreamCalls, when set, times every submit and poll call, by upstream, call and
	// outcome (ok, error): its count of ok submits is the jobs submitted per account.
	UpstreamCalls *prometheus.HistogramVec
	// AccountBroken, when set, is 1 for an upstream whose last call was refused for its
	// credentials (provider.ErrAccount) and 0 once a call succeeds: the operator's alarm.
	AccountBroken *prometheus.GaugeVec
	// AccountWait is how long a task waits after its account refused its credentials (30 s).
	AccountWait time.Duration
	// Logger receives the pipeline's own events (nil: none).
	Logger *slog.Logger
	// ResultHosts, when set, gives an account's check of the hosts its result links may be
	// read from (nil: any the fetch policy allows).
	ResultHosts func(upstream string) func(host string) bool
	// Router is the accounts' health that routed tasks (an alias with several accounts) pick
	// from: circuit breakers and accounts to avoid for a while (router.go). nil: one is made
	// on first use, with the default breaker.
	Router *Router
	// Slots, when set, reads the upstream jobs in flight per account (strategy least_busy).
	Slots func(ctx context.Context) (map[string]int, error)
	// Tracer, when set, makes spans of upstream calls and result probes (trace.go); nil:
	// none. Stored results are traced by the blob store (blob.Traced).
	Tracer trace.Tracer

	routerMu sync.Mutex
}

func (p *Pipeline) router() *Router {
	p.routerMu.Lock()
	defer p.routerMu.Unlock()
	if p.Router == nil {
		p.Router = &Router{}
	}
	return p.Router
}

func (p *Pipeline) upstream(name string) (Upstream, bool) {
	if p.Lookup != nil {
		return p.Lookup(name)
	}
	up, ok := p.Upstreams[name]
	return up, ok
}

func (p *Pipeline) logger() *slog.Logger {
	if p.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return p.Logger
}

// NewAccountBroken registers the broken-account gauge on reg.
func NewAccountBroken(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mediagen_upstream_account_broken", Help: "1 while an upstream account's credentials are refused (401/403), by upstream; its tasks wait.",
	}, []string{"upstream"})
	reg.MustRegister(g)
	return g
}

// NewUpstreamCalls registers the histogram of upstream call latencies on reg.
func NewUpstreamCalls(reg prometheus.Registerer) *prometheus.HistogramVec {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "mediagen_upstream_call_duration_seconds", Help: "Upstream submit and poll calls of video tasks, by upstream, call and outcome (ok, error).",
		Buckets: []float64{.01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
	}, []string{"upstream", "call", "outcome"})
	reg.MustRegister(h)
	return h
}

// timed records one upstream call's latency and outcome, and whether the account works.
func (s *stepCtx) timed(ctx context.Context, call string, start time.Time, err error) {
	s.traceUpstream(ctx, call, start, err)
	if s.p.AccountBroken != nil {
		switch {
		case errors.Is(err, provider.ErrAccount):
			s.p.AccountBroken.WithLabelValues(s.account()).Set(1)
		case err == nil:
			s.p.AccountBroken.WithLabelValues(s.account()).Set(0)
		}
	}
	if s.p.UpstreamCalls == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	s.p.UpstreamCalls.WithLabelValues(s.account(), call, outcome).Observe(time.Since(start).Seconds())
}

// slotLineWaits is how many of its SlotWait periods a task refused a slot keeps its place in
// its account's line without asking again. It asks every SlotWait (when the job engine's
// workers are busy, a little later), so ten leaves room for slow rounds; a task that stopped
// asking (it ended, its process died) holds a freed slot back from the next in line for at
// most this long (10 s by default).
const slotLineWaits = 10

// ErrSlotsFull is a submit's checkpoint refused because its account's upstream jobs are at
// the account's max_in_flight: the task waits for a slot.
var ErrSlotsFull = errors.New("upstream account at its in-flight limit")

// NewUpstreamWaits registers the counter of submits that waited for their account's slot.
func NewUpstreamWaits(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_upstream_waits_total", Help: "Upstream submits that waited because their account was at its max_in_flight, by upstream.",
	}, []string{"upstream"})
	reg.MustRegister(c)
	return c
}

// NewUpstreamErrors registers the pipeline's upstream error counter on reg.
func NewUpstreamErrors(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_upstream_errors_total",
		Help: "Upstream errors of video tasks, by route, upstream, call (submit, poll, find) and kind (transient, rejected, account, rate_limited, job_failed, job_expired, result_host, result_unusable).",
	}, []string{"route", "upstream", "call", "kind"})
	reg.MustRegister(c)
	return c
}

// account is the upstream account of the phase being run: the enhancement half of a
// production task may run on another account than its generation half.
func (s *stepCtx) account() string {
	if s.phase == phaseEnhSubmit || s.phase == phaseEnhPoll {
		return enhAccount(s.req, s.st)
	}
	return genAccount(s.req, s.st)
}

// upstreamErr counts one upstream error.
func (s *stepCtx) upstreamErr(call, kind string) {
	if s.p.UpstreamErrors != nil {
		s.p.UpstreamErrors.WithLabelValues(s.c.Route, s.account(), call, kind).Inc()
	}
}

// Phases of the pipeline, kept in the task's step column.
const (
	phaseGenSubmit = "generate_submit"
	phaseGenPoll   = "generate_poll"
	phaseEnhSubmit = "enhance_submit"
	phaseEnhPoll   = "enhance_poll"
)

// pipeState is the task's state column: where the pipeline is and what it has done.
type pipeState struct {
	GenJob     string `json:"gen_job,omitempty"`
	EnhJob     string `json:"enh_job,omitempty"`
	Submitting bool   `json:"submitting,omitempty"` // recorded before an upstream submit
	// SubmitAt is when Submitting was recorded (unix seconds): how far back a search for a
	// job that submit may have started looks (provider.GenerationFinder).
	SubmitAt int64 `json:"submit_at,omitempty"`
	Polls    int   `json:"polls,omitempty"`
	// PollErrors counts the transient failures of polls in a row (reset by an answer).
	PollErrors   int    `json:"poll_errors,omitempty"`
	Intermediate string `json:"intermediate,omitempty"` // blob key of the generation output (production)
	Tokens       int64  `json:"tokens,omitempty"`
	// Seconds are the seconds of output the generation's upstream reported (0: none).
	Seconds float64 `json:"seconds,omitempty"`
	// Excess is what the generation half of a production task did beyond the request (its
	// result cut to the request's bound), kept until the settlement records it.
	Excess []billing.Excess `json:"excess,omitempty"`
	// SlotHeld: the task counts in its account's upstream jobs in flight (released at its end).
	SlotHeld bool `json:"slot_held,omitempty"`
	// Account and EnhAccount are the accounts a routed task's halves were bound to (route.go):
	// every submit, find and poll of the half goes there, and the slot is the Account's.
	// Empty for a one-account alias (its Stored binding) and before a half is routed.
	Account    string `json:"account,omitempty"`
	EnhAccount string `json:"enh_account,omitempty"`
}

// progress bands per route: [start of enhancement, end before finishing].
func bands(route string) (genEnd, enhEnd int) {
	switch route {
	case string(contract.RouteProduction):
		return 45, 95
	case string(contract.RouteEnhancement):
		return 0, 95
	}
	return 95, 95
}

type stepCtx struct {
	p     *Pipeline
	log   *slog.Logger // the pipeline's, with the request id of the job's run (logctx)
	c     store.TaskRun
	req   Stored
	quote billing.Quote
	st    pipeState
	up    Upstream // the generation half's (and standalone enhancement's) engine
	enh   Upstream // the enhancement half's engine: up, or the production alias's enhance_upstream
	phase string
	save  func(Outcome) error
	// note is a routing event's detail waiting for the next checkpoint; moves counts the
	// accounts this step left.
	note  string
	moves int
}

// Step implements Stepper: it runs the task's current phase, and keeps going through
// phases that need no waiting, until it must wait for an upstream or the task is finished.
func (p *Pipeline) Step(ctx context.Context, c store.TaskRun, save func(Outcome) error) (Outcome, error) {
	s := &stepCtx{p: p, c: c, phase: c.Step, save: save, log: logctx.Logger(ctx, p.logger())}
	if err := json.Unmarshal(c.Request, &s.req); err != nil {
		return permanent("video_generation_failed", "The task could not be read."), nil
	}
	if err := json.Unmarshal(c.Pricing, &s.quote); err != nil {
		return permanent("video_generation_failed", "The task could not be read."), nil
	}
	if len(c.State) > 0 {
		if err := json.Unmarshal(c.State, &s.st); err != nil {
			return permanent("video_generation_failed", "The task could not be read."), nil
		}
	}
	if !s.engines() {
		return permanent("video_generation_failed", "The model is not available."), nil
	}
	if s.phase == "" {
		s.phase = phaseGenSubmit
		if c.Route == string(contract.RouteEnhancement) {
			s.phase = phaseEnhSubmit
		}
	}
	for {
		out, next, err := s.run(ctx)
		if err != nil || next == "" {
			return out, err
		}
		s.phase = next
	}
}

// engines looks up the engines of the accounts the halves are bound to.
func (s *stepCtx) engines() bool {
	gen, enh := genAccount(s.req, s.st), enhAccount(s.req, s.st)
	up, ok := s.p.upstream(gen)
	if !ok && gen != "" && len(s.req.Upstreams) == 0 {
		return false
	}
	s.up, s.enh = up, up
	if enh != gen {
		e, ok := s.p.upstream(enh)
		if !ok && len(s.req.EnhanceUpstreams) == 0 {
			return false
		}
		s.enh = e
	}
	return true
}

// run executes one phase. It returns either an outcome to write (next == ""), or the next
// phase to run at once.
func (s *stepCtx) run(ctx context.Context) (Outcome, string, error) {
	switch s.phase {
	case phaseGenSubmit:
		return s.submit(ctx, "gen")
	case phaseGenPoll:
		return s.poll(ctx, "gen")
	case phaseEnhSubmit:
		return s.submit(ctx, "enh")
	case phaseEnhPoll:
		return s.poll(ctx, "enh")
	}
	return permanent("video_generation_failed", "The task could not be read."), "", nil
}

func (s *stepCtx) outcome(progress int, phase string, runIn time.Duration) (Outcome, error) {
	state, err := json.Marshal(s.st)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Status: store.StatusInProgress, Progress: progress, Step: phase, State: state, RunIn: runIn}, nil
}

// submit starts an upstream job. Before calling, it records that it is about to submit (under
// the lease); the call carries an idempotency key made of the task id and the half, so a
// retry after a crash between the call and the record finds the same upstream job.
func (s *stepCtx) submit(ctx context.Context, half string) (Outcome, string, error) {
	routed := len(s.routes(half)) > 1
	// unsure: an earlier create of this half was about to be made and its answer never
	// recorded, so it may have started a paid job on the bound account. A routed task never
	// leaves that account until the account answered that no such job exists.
	unsure := s.st.Submitting
	if s.st.Submitting && half == "gen" {
		// An earlier submit was about to be made and its answer was never recorded: it may
		// have started a paid job. An upstream that can look for it is asked first.
		if job, found, canFind, err := s.findJob(ctx); errors.Is(err, provider.ErrOutcomeUnknown) {
			return s.lostCreate(err), "", nil
		} else if err != nil {
			if routed {
				s.p.router().Failure(s.account())
			}
			return s.upstreamError("find", err)
		} else if found {
			if routed { // the account made the job: it works, only an answer was lost
				s.p.router().Success(s.account())
			}
			s.st.Submitting, s.st.Polls, s.st.GenJob = false, 0, job
			o, err := s.outcome(s.c.Progress+1, phaseGenPoll, 0)
			return o, "", err
		} else if canFind && routed {
			// The account answered that the lost create made no job: the task is free to
			// submit again, there or on another account.
			unsure, s.st.Submitting = false, false
			s.note = "the create's answer was lost; " + s.account() + " answered it has no job for the task"
		}
	}
	if routed && !s.st.Submitting {
		if o, next, err, done := s.route(ctx, half); done {
			return o, next, err
		}
	}
	if !s.st.Submitting {
		s.st.Submitting, s.st.SubmitAt = true, time.Now().Unix()
		limit := 0
		if s.p.MaxInFlight != nil && !s.st.SlotHeld {
			limit = s.p.MaxInFlight(genAccount(s.req, s.st))
		}
		s.st.SlotHeld = s.st.SlotHeld || limit > 0
		o, err := s.outcome(s.c.Progress, s.phase, 0)
		if err != nil {
			return o, "", err
		}
		o.Detail, s.note = s.note, ""
		wait := s.p.slotWait()
		if limit > 0 {
			o.TakeSlot, o.SlotLimit, o.SlotLine = genAccount(s.req, s.st), limit, slotLineWaits*wait
		}
		if err := s.save(o); errors.Is(err, ErrSlotsFull) {
			if s.p.UpstreamWaits != nil {
				s.p.UpstreamWaits.WithLabelValues(genAccount(s.req, s.st)).Inc()
			}
			return Outcome{Status: s.c.Status, Progress: s.c.Progress, RunIn: wait}, "", nil
		} else if err != nil {
			return Outcome{}, "", err
		}
	}
	key := s.c.ID + ":" + half
	var job string
	var err error
	start := time.Now()
	defer func() { s.timed(ctx, "submit", start, err) }()
	if half == "gen" {
		if s.up.Generator == nil {
			return permanent("video_generation_failed", "The model is not available."), "", nil
		}
		job, err = s.up.Generator.SubmitGeneration(ctx, s.generateRequest(key))
	} else {
		if s.enh.Enhancer == nil {
			return permanent("video_generation_failed", "The model is not available."), "", nil
		}
		var r provider.EnhanceRequest
		r, err = s.enhanceRequest(key)
		if err == nil {
			job, err = s.enh.Enhancer.SubmitEnhancement(ctx, r)
		}
	}
	if err != nil {
		if routed {
			if o, next, ferr, moved := s.fallback(half, err, unsure); moved {
				return o, next, ferr
			}
		}
		if ferr := s.madeNoJob(err, unsure); ferr != nil {
			return Outcome{}, "", ferr
		}
		return s.upstreamError("submit", err)
	}
	if routed {
		s.p.router().Success(s.account())
	}
	s.st.Submitting, s.st.Polls = false, 0
	if half == "gen" {
		s.st.GenJob = job
		o, err := s.outcome(s.c.Progress+1, phaseGenPoll, s.p.pollDelay(0))
		return o, "", err
	}
	s.st.EnhJob = job
	o, err := s.outcome(s.c.Progress+1, phaseEnhPoll, s.p.pollDelay(0))
	return o, "", err
}

// findJob asks an upstream that can (provider.GenerationFinder) for the job an unrecorded
// submit of this task's generation started.
func (s *stepCtx) findJob(ctx context.Context) (job string, found, canFind bool, err error) {
	f, ok := s.up.Generator.(provider.GenerationFinder)
	if !ok {
		return "", false, false, nil
	}
	start := time.Now()
	var since time.Time
	if s.st.SubmitAt > 0 {
		since = time.Unix(s.st.SubmitAt, 0)
	}
	job, found, err = f.FindGeneration(ctx, s.generateRequest(s.c.ID+":gen"), since)
	s.timed(ctx, "find", start, err)
	if found {
		s.log.Info("found the upstream job an unrecorded submit started", "task_id", s.c.ID, "upstream", s.account(), "job", job)
	}
	return job, found, err == nil, err
}

// upstreamError turns a submit/poll error into a retry (transient) or a terminal failure.
func (s *stepCtx) upstreamError(call string, err error) (Outcome, string, error) {
	if errors.Is(err, provider.ErrAccount) {
		// The account, not the task, is broken: wait without spending an attempt. The state
		// written is this step's (a submit checkpoint may have recorded a slot).
		s.upstreamErr(call, "account")
		wait := s.p.AccountWait
		if wait <= 0 {
			wait = 30 * time.Second
		}
		o, oerr := s.outcome(s.c.Progress, s.phase, wait)
		o.Status = s.c.Status
		return o, "", oerr
	}
	var pe *provider.Error
	if errors.As(err, &pe) && errors.Is(err, provider.ErrPermanent) {
		s.upstreamErr(call, "rejected")
		return permanent(pe.Code, pe.Message).because(s.account() + " " + call + ": " + err.Error()), "", nil
	}
	if errors.Is(err, provider.ErrPermanent) {
		s.upstreamErr(call, "rejected")
		return permanent("video_generation_failed", "The video could not be generated.").because(s.account() + " " + call + ": " + err.Error()), "", nil
	}
	s.upstreamErr(call, "transient")
	return Outcome{}, "", fmt.Errorf("upstream: %w", err)
}

func (s *stepCtx) poll(ctx context.Context, half string) (Outcome, string, error) {
	var job provider.Job
	var err error
	start := time.Now()
	if half == "gen" {
		job, err = s.up.Generator.PollGeneration(ctx, s.st.GenJob)
	} else {
		job, err = s.enh.Enhancer.PollEnhancement(ctx, s.st.EnhJob)
	}
	s.timed(ctx, "poll", start, err)
	if errors.Is(err, provider.ErrUnknownJob) {
		// The upstream lost the job: submit again under the same idempotency key.
		if half == "gen" {
			return Outcome{}, phaseGenSubmit, nil
		}
		return Outcome{}, phaseEnhSubmit, nil
	}
	if err != nil && !errors.Is(err, provider.ErrAccount) && !errors.Is(err, provider.ErrPermanent) {
		return s.pollAgain(err)
	}
	if err != nil {
		return s.upstreamError("poll", err)
	}
	s.st.PollErrors = 0
	genEnd, enhEnd := bands(s.c.Route)
	lo, hi := 0, genEnd
	if half == "enh" {
		lo, hi = genEnd, enhEnd
	}
	switch job.Status {
	case provider.StatusQueued, provider.StatusRunning:
		s.st.Polls++
		phase := phaseGenPoll
		if half == "enh" {
			phase = phaseEnhPoll
		}
		o, err := s.outcome(lo+(hi-lo)*job.Progress/100, phase, s.p.pollDelay(s.st.Polls))
		return o, "", err
	case provider.StatusFailed, provider.StatusExpired:
		code, msg := job.ErrorCode, job.ErrorMessage
		if code == "" {
			code = "video_generation_failed"
		}
		if msg == "" {
			msg = "The video could not be generated."
		}
		status := store.StatusFailed
		// Expired applies to the generation routes; standalone enhancement only fails.
		if job.Status == provider.StatusExpired && s.c.Route != string(contract.RouteEnhancement) {
			status = store.StatusExpired
		}
		if job.Status == provider.StatusExpired {
			s.upstreamErr("poll", "job_expired")
		} else {
			s.upstreamErr("poll", "job_failed")
		}
		return Outcome{Final: &Final{Status: status, ErrorCode: code, ErrorMessage: msg,
			Internal: fmt.Sprintf("%s %s job ended %s: code %q, message %q", s.account(), half, job.Status, job.ErrorCode, job.ErrorMessage)}}, "", nil
	case provider.StatusSucceeded:
		if job.Output == nil {
			return Outcome{}, "", errors.New("upstream reported success without output")
		}
		if half == "gen" {
			s.st.Tokens, s.st.Seconds = job.Output.CompletionTokens, job.Output.UsageSeconds
			if s.c.Route == string(contract.RouteProduction) {
				return s.keepIntermediate(ctx, job.Output)
			}
		}
		return s.finish(ctx, job.Output)
	}
	return Outcome{}, "", fmt.Errorf("upstream status %q", job.Status)
}

// pollAgain answers a transient poll failure. The upstream job is running and paid for, so a
// flaky status call must not use up the task's attempts and abandon it: the task polls again
// after a backoff (at least the upstream's Retry-After), without an attempt, until it gets an
// answer or the task's deadline ends it (expired, refunded).
func (s *stepCtx) pollAgain(err error) (Outcome, string, error) {
	s.upstreamErr("poll", "transient")
	s.st.PollErrors++
	wait := max(s.p.pollDelay(s.st.PollErrors+1), provider.RetryDelay(err))
	s.log.Warn("upstream poll failed; polling again", "task_id", s.c.ID, "upstream", s.account(),
		"in", wait, "failures_in_a_row", s.st.PollErrors, "err", err)
	o, oerr := s.outcome(s.c.Progress, s.phase, wait)
	return o, "", oerr
}

// keepIntermediate stores the generation output of a production task where the enhancement
// half can read it, cut to the request's bound when the upstream returned more: the
// enhancement half then never processes (nor bills) more than the request allows. It is
// never shown to the client.
func (s *stepCtx) keepIntermediate(ctx context.Context, out *provider.Output) (Outcome, string, error) {
	key := KeyPrefix + s.c.ID + "/intermediate" + extOf(out.ContentType)
	if err := s.copyOutput(ctx, key, out.Source); err != nil {
		return s.outputError(err)
	}
	path, release, err := s.blobFile(ctx, key)
	if err != nil {
		return Outcome{}, "", fmt.Errorf("read the stored intermediate: %w", err)
	}
	defer release()
	_, _, cut, releaseCut, err := s.bounded(ctx, key, path, genAccount(s.req, s.st))
	defer releaseCut()
	if errors.Is(err, errUnusable) {
		return s.unusable(err)
	}
	if err != nil {
		return Outcome{}, "", err
	}
	if cut != nil {
		s.st.Excess = append(s.st.Excess, *cut)
	}
	s.st.Intermediate = key
	return Outcome{}, phaseEnhSubmit, nil
}

func (p *Pipeline) pollDelay(polls int) time.Duration {
	lo, hi := p.PollMin, p.PollMax
	if lo <= 0 {
		lo = 500 * time.Millisecond
	}
	if hi <= 0 {
		hi = 15 * time.Second
	}
	d := lo
	for i := 0; i < polls && d < hi; i++ {
		d = d * 3 / 2
	}
	return min(d, hi)
}

func permanent(code, msg string) Outcome {
	return Outcome{Final: &Final{Status: store.StatusFailed, ErrorCode: code, ErrorMessage: msg}}
}

// because records the internal reason behind a terminal outcome (Final.Internal).
func (o Outcome) because(reason string) Outcome {
	if o.Final != nil {
		f := *o.Final
		f.Internal = reason
		o.Final = &f
	}
	return o
}

// Expired implements Stepper: a task past the service's deadline.
func (p *Pipeline) Expired(c store.TaskRun) Final {
	if c.Route == string(contract.RouteEnhancement) {
		return Final{Status: store.StatusFailed, ErrorCode: "task_timeout", ErrorMessage: "The enhancement did not finish within the service's time limit."}
	}
	return Final{Status: store.StatusExpired, ErrorCode: "task_expired", ErrorMessage: "The video task did not finish within the service's time limit."}
}

func extOf(contentType string) string {
	if contentType == "video/quicktime" {
		return ".mov"
	}
	return ".mp4"
}

// maxOutputBytes bounds an upstream's output file (64 GiB: a long 8K video).
const maxOutputBytes = 64 << 30

// outputError answers a failed copy of an upstream's output. A link the fetch policy refuses
// — a host outside the account's result_hosts, a private, loopback or metadata address,
// another scheme, credentials in the URL, a redirect to any of them — is refused the same
// way on every try, so the task fails at once (refunded by its terminal state; the upstream
// handed out a link this service must not read) instead of re-polling the upstream through
// every attempt. Anything else (a timeout, a 5xx, an expired link) is retried.
func (s *stepCtx) outputError(err error) (Outcome, string, error) {
	if safefetch.Refused(err) {
		s.upstreamErr("poll", "result_host")
		msg := "the upstream's result link is refused by the fetch policy; failing the task"
		if errors.Is(err, safefetch.ErrForbiddenHost) {
			msg = "the upstream's result link is outside the account's result_hosts; failing the task"
		}
		s.log.Error(msg, "task_id", s.c.ID, "upstream", s.account(), "err", err)
		return permanent("video_generation_failed", "The video could not be generated.").because(msg + ": " + err.Error()), "", nil
	}
	return Outcome{}, "", err
}

// copyOutput streams an upstream output into the service's storage, under the account's
// result hosts.
func (s *stepCtx) copyOutput(ctx context.Context, key string, src provider.Source) error {
	var hosts func(string) bool
	if s.p.ResultHosts != nil {
		hosts = s.p.ResultHosts(s.account())
	}
	return s.p.copyOutput(ctx, key, src, hosts)
}

// copyOutput streams an upstream output into the service's storage: from a local file, or
// from a URL through the SSRF-safe client (on hosts, when set). Nothing is held whole in
// memory.
func (p *Pipeline) copyOutput(ctx context.Context, key string, src provider.Source, hosts func(string) bool) error {
	if src.Path != "" {
		f, err := os.Open(src.Path)
		if err != nil {
			return fmt.Errorf("open output: %w", err)
		}
		defer f.Close()
		_, err = p.Blobs.Put(ctx, key, f)
		return err
	}
	if src.Open != nil {
		rc, err := src.Open(ctx)
		if err != nil {
			return fmt.Errorf("open output: %w", err)
		}
		defer rc.Close()
		_, err = p.Blobs.Put(ctx, key, provider.Capped(rc, maxOutputBytes))
		return err
	}
	if p.Fetch == nil || src.URL == "" {
		return errors.New("output has no readable source")
	}
	res, err := p.Fetch.Get(ctx, src.URL, safefetch.RequestOptions{MaxBytes: maxOutputBytes, Hosts: hosts})
	if err != nil {
		return fmt.Errorf("fetch output: %w", err)
	}
	defer res.Body.Close()
	_, err = p.Blobs.Put(ctx, key, res.Body)
	return err
}
