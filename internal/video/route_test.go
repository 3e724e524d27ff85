package video

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/blob"
	"mediagen/internal/contract"
	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
	"mediagen/internal/store"
)

// Answers of a scripted account's creates.
const (
	ansOK       = "ok"       // the job is made and answered
	ansRefused  = "401"      // the key is refused: no job
	ansLimited  = "429"      // rate-limited with Retry-After 2 s: no job
	ansLost     = "lost"     // the job is made, the answer is a 500
	ans500      = "500"      // a 500, no job made
	ansRejected = "rejected" // the request is refused (content policy): no job
)

// scriptAccount is one upstream account whose creates answer from a script (then ok).
type scriptAccount struct {
	mu     sync.Mutex
	script []string
	// idempotent: a create repeated under the same idempotency key makes no second job
	// (as openai's Idempotency-Key); an account without it (ark) is a finder instead.
	idempotent bool
	jobs       map[string]int // idempotency key → jobs made
	creates    int
	models     []string // the model of each create, in order
}

func (a *scriptAccount) SubmitGeneration(_ context.Context, r provider.GenerateRequest) (string, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.creates++
	a.models = append(a.models, r.Model)
	ans := ansOK
	if len(a.script) > 0 {
		ans, a.script = a.script[0], a.script[1:]
	}
	if a.jobs == nil {
		a.jobs = map[string]int{}
	}
	switch ans {
	case ansRefused:
		return "", fmt.Errorf("HTTP 401: %w", provider.ErrAccount)
	case ansLimited:
		se := &rest.StatusError{Call: "POST", Status: 429, RetryAfter: 2 * time.Second}
		return "", &provider.RetryAfter{After: 2 * time.Second, Err: fmt.Errorf("%w: %w", se, provider.ErrTransient)}
	case ans500:
		return "", fmt.Errorf("HTTP 500: %w", provider.ErrTransient)
	case ansRejected:
		return "", &provider.Error{Kind: provider.ErrPermanent, Code: "content_policy", Message: "refused"}
	case ansLost:
		a.made(r.IdempotencyKey)
		return "", fmt.Errorf("HTTP 500 after the job was made: %w", provider.ErrTransient)
	}
	a.made(r.IdempotencyKey)
	return "job-" + r.IdempotencyKey, nil
}

func (a *scriptAccount) made(key string) {
	if !a.idempotent || a.jobs[key] == 0 {
		a.jobs[key]++
	}
}

func (a *scriptAccount) PollGeneration(context.Context, string) (provider.Job, error) {
	return provider.Job{Status: provider.StatusRunning}, nil
}

// finderAccount is a scriptAccount that can look for a job by the task's key (as ark can).
type finderAccount struct{ *scriptAccount }

func (f finderAccount) FindGeneration(_ context.Context, r provider.GenerateRequest, _ time.Time) (string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.jobs[r.IdempotencyKey] > 0 {
		return "job-" + r.IdempotencyKey, true, nil
	}
	return "", false, nil
}

// routeRun is a routed task stepped by hand, with the slots of its accounts counted.
type routeRun struct {
	t      *testing.T
	p      *Pipeline
	c      store.TaskRun
	full   map[string]bool // accounts that refuse a slot
	held   map[string]int
	events []string
}

func newRouteRun(t *testing.T, accounts map[string]provider.Generator, order []string, now *time.Time) *routeRun {
	t.Helper()
	ups := map[string]Upstream{}
	for name, g := range accounts {
		ups[name] = Upstream{Generator: g}
	}
	r := &routeRun{t: t, full: map[string]bool{}, held: map[string]int{}}
	r.p = &Pipeline{Upstreams: ups, PollMin: time.Second, PollMax: time.Second, AccountWait: 30 * time.Second,
		MaxInFlight: func(string) int { return 10 },
		Router:      &Router{Now: func() time.Time { return *now }, Policy: func(string) (int, time.Duration) { return 2, time.Minute }}}
	req, _ := json.Marshal(Stored{Request: &contract.VideoRequest{Route: contract.RouteNative, Prompt: "p",
		Native: &contract.NativeParams{Duration: 5, Resolution: "480p", Ratio: "16:9"}}, Upstream: order[0], Upstreams: order, Strategy: "priority", Model: "m"})
	r.c = store.TaskRun{Task: store.Task{ID: "video_1", Route: "native", Status: store.StatusQueued, Request: req, Pricing: []byte(`{}`)}}
	return r
}

func (r *routeRun) save(o Outcome) error {
	if o.ReleaseSlot != "" {
		r.held[o.ReleaseSlot]--
	}
	if o.TakeSlot != "" {
		if r.full[o.TakeSlot] {
			return ErrSlotsFull
		}
		r.held[o.TakeSlot]++
	}
	if o.Detail != "" {
		r.events = append(r.events, o.Detail)
	}
	r.apply(o)
	return nil
}

func (r *routeRun) apply(o Outcome) {
	if o.State != nil {
		r.c.State = o.State
	}
	if o.Step != "" {
		r.c.Step = o.Step
	}
}

// step runs one step; it returns the outcome and the step's error.
func (r *routeRun) step() (Outcome, error) {
	r.t.Helper()
	out, err := r.p.Step(r.t.Context(), r.c, r.save)
	if err == nil && out.Final == nil {
		r.apply(out)
	}
	return out, err
}

func (r *routeRun) state() pipeState {
	r.t.Helper()
	var st pipeState
	if err := json.Unmarshal(r.c.State, &st); err != nil {
		r.t.Fatal(err)
	}
	return st
}

func TestRoutedTaskFallsBackOnlyWhenNoJobWasMade(t *testing.T) {
	t.Parallel()
	type want struct {
		account string // where the task's job is (or the task is bound)
		polling bool   // the task polls its job
		failed  bool   // the task failed (a refusal of the request)
		event   string // in the task's events
	}
	tests := []struct {
		name   string
		a, b   []string
		finder bool
		full   []string
		steps  int
		want   want
	}{
		{"a refused key moves the task to the next account at once", []string{ansRefused}, nil, false, nil, 1,
			want{"b", true, false, "left a: its key was refused (401/403)"}},
		{"a 429 moves the task to the next account at once", []string{ansLimited}, nil, false, nil, 1,
			want{"b", true, false, "left a: rate-limited (429, Retry-After 2s)"}},
		{"a full account is skipped for one with capacity", nil, nil, false, []string{"a"}, 1,
			want{"b", true, false, "routed to b (skipped: a full)"}},
		{"a refusal of the request fails the task, not tried elsewhere", []string{ansRejected}, nil, false, nil, 1,
			want{"a", false, true, "routed to a"}},
		{"a lost answer on a finder is found there, never made again elsewhere", []string{ansLost}, nil, true, nil, 2,
			want{"a", true, false, "routed to a"}},
		{"a lost answer on an account that cannot be asked is made again there only", []string{ansLost, ansRefused}, nil, false, nil, 3,
			want{"a", true, false, "routed to a"}},
		{"a 500 that made no job moves once the account says it has none and its breaker opened", []string{ans500, ans500}, nil, true, nil, 3,
			want{"b", true, false, "answered it has no job for the task"}},
		{"both accounts refusing keys leave the task waiting, not failed", []string{ansRefused}, []string{ansRefused}, false, nil, 1,
			want{"", false, false, "left b: its key was refused"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Unix(1_800_000_000, 0)
			a := &scriptAccount{script: tt.a, idempotent: !tt.finder}
			b := &scriptAccount{script: tt.b, idempotent: !tt.finder}
			var ga, gb provider.Generator = a, b
			if tt.finder {
				ga, gb = finderAccount{a}, finderAccount{b}
			}
			r := newRouteRun(t, map[string]provider.Generator{"a": ga, "b": gb}, []string{"a", "b"}, &now)
			for _, f := range tt.full {
				r.full[f] = true
			}
			var out Outcome
			var err error
			for i := 0; i < tt.steps; i++ {
				out, err = r.step()
				if out.Final != nil {
					break
				}
			}
			if tt.want.failed {
				if out.Final == nil || out.Final.Status != store.StatusFailed {
					t.Fatalf("outcome %+v %v, want failed", out, err)
				}
			} else if out.Final != nil {
				t.Fatalf("the task ended %+v", out.Final)
			}
			st := r.state()
			if tt.want.polling && (r.c.Step != phaseGenPoll || st.GenJob == "") {
				t.Errorf("step %q job %q err %v, want polling", r.c.Step, st.GenJob, err)
			}
			if !tt.want.failed && st.Account != tt.want.account {
				t.Errorf("bound to %q, want %q", st.Account, tt.want.account)
			}
			if u := Upstreams(r.c.Request, r.c.State); st.Account != "" && u.Account != st.Account {
				t.Errorf("the operator's view names %q, the task is bound to %q", u.Account, st.Account)
			}
			total := 0
			for _, acc := range []*scriptAccount{a, b} {
				for _, n := range acc.jobs {
					total += n
				}
			}
			if tt.want.polling && total != 1 {
				t.Errorf("%d paid jobs for one task (a %v, b %v)", total, a.jobs, b.jobs)
			}
			if !tt.want.polling && total != 0 {
				t.Errorf("%d jobs made, want none", total)
			}
			if ev := strings.Join(r.events, " | "); !strings.Contains(ev, tt.want.event) {
				t.Errorf("events %q, want %q", ev, tt.want.event)
			}
			// The slot follows the task: held on the account it is bound to, given back
			// where it left.
			for acct, n := range r.held {
				if want := map[bool]int{true: 1}[acct == st.Account && st.SlotHeld]; n != want {
					t.Errorf("slots of %s: %d, want %d", acct, n, want)
				}
			}
		})
	}
}

// With every account full the task waits queued, as a one-account task waits for its slot.
func TestRoutedTaskWaitsQueuedWhenEveryAccountIsFull(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	a, b := &scriptAccount{}, &scriptAccount{}
	r := newRouteRun(t, map[string]provider.Generator{"a": a, "b": b}, []string{"a", "b"}, &now)
	r.full["a"], r.full["b"] = true, true
	out, err := r.step()
	if err != nil || out.Final != nil || out.Status != store.StatusQueued || out.RunIn != time.Second {
		t.Fatalf("outcome %+v %v, want queued again in 1 s", out, err)
	}
	if a.creates+b.creates != 0 {
		t.Errorf("%d creates while every account was full", a.creates+b.creates)
	}
	r.full["b"] = false
	if _, err := r.step(); err != nil || r.state().Account != "b" || b.creates != 1 {
		t.Fatalf("once b has room: account %q, creates %d, %v", r.state().Account, b.creates, err)
	}
}

// The breaker opens after the account's failures in a row, lets one task through after its
// cooldown (half-open), and closes on a success; its state is the metric.
func TestBreakerOpensHalfOpensAndCloses(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	now := time.Unix(1_800_000_000, 0)
	r := &Router{State: NewBreakerState(reg), Now: func() time.Time { return now }, Policy: func(string) (int, time.Duration) { return 3, time.Minute }}
	steps := []struct {
		do        string // fail, ok, wait
		admit     bool
		wantState int
	}{
		{"fail", true, BreakerClosed},
		{"fail", true, BreakerClosed},
		{"fail", false, BreakerOpen},
		{"wait", true, BreakerHalfOpen},  // a minute later: one trial
		{"none", false, BreakerHalfOpen}, // a second task is not let through
		{"fail", false, BreakerOpen},     // the trial failed: open again
		{"wait", true, BreakerHalfOpen},
		{"ok", true, BreakerClosed},
	}
	for i, s := range steps {
		switch s.do {
		case "fail":
			r.Failure("a")
		case "ok":
			r.Success("a")
		case "wait":
			now = now.Add(time.Minute)
		}
		ok, why, _ := r.Admit("a")
		if ok != s.admit || r.BreakerState("a") != s.wantState {
			t.Fatalf("step %d (%s): admitted %v (%s), state %d; want %v, %d", i, s.do, ok, why, r.BreakerState("a"), s.admit, s.wantState)
		}
		if got := gaugeValue(t, reg, "a"); int(got) != s.wantState {
			t.Fatalf("step %d: gauge %v, want %d", i, got, s.wantState)
		}
	}
}

func TestStrategiesOrderAccounts(t *testing.T) {
	t.Parallel()
	accts := []string{"a", "b", "c"}
	if got := order(accts, "priority", nil, nil); strings.Join(got, "") != "abc" {
		t.Errorf("priority %v", got)
	}
	busy := func(a string) (int, int) { return map[string]int{"a": 9, "b": 1, "c": 5}[a], 10 }
	if got := order(accts, "least_busy", nil, busy); strings.Join(got, "") != "bca" {
		t.Errorf("least_busy %v", got)
	}
	first := map[string]int{}
	for i := 0; i < 4000; i++ {
		first[order(accts, "weighted", []int{3, 1, 0}, nil)[0]]++
	}
	if first["c"] != 0 || first["a"] < 2700 || first["a"] > 3300 {
		t.Errorf("weighted 3:1:0 put first %v of 4000", first)
	}
}

// scriptEnhancer is an enhancement account whose first creates answer from a script.
type scriptEnhancer struct{ scriptAccount }

func (e *scriptEnhancer) SubmitEnhancement(ctx context.Context, r provider.EnhanceRequest) (string, error) {
	return e.SubmitGeneration(ctx, provider.GenerateRequest{IdempotencyKey: r.IdempotencyKey, Model: r.Model})
}

func (e *scriptEnhancer) PollEnhancement(context.Context, string) (provider.Job, error) {
	return provider.Job{Status: provider.StatusRunning}, nil
}

// A standalone enhancement routes like a generation: a refused key moves it, with its slot,
// to the next account.
func TestRoutedEnhancementMovesWithItsSlot(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	x, y := &scriptEnhancer{scriptAccount{script: []string{ansRefused}}}, &scriptEnhancer{}
	r := &routeRun{t: t, full: map[string]bool{}, held: map[string]int{}}
	r.p = &Pipeline{Upstreams: map[string]Upstream{"x": {Enhancer: x}, "y": {Enhancer: y}}, PollMin: time.Second, PollMax: time.Second,
		MaxInFlight: func(string) int { return 1 }, Router: &Router{Now: func() time.Time { return now }}}
	req, _ := json.Marshal(Stored{Request: &contract.VideoRequest{Route: contract.RouteEnhancement,
		Enhancement: &contract.EnhancementParams{VideoURL: "https://example.com/a.mp4", Resolution: "1080p"}},
		Upstream: "x", Upstreams: []string{"x", "y"}, Model: "m", Models: map[string]string{"y": "m-y"}})
	r.c = store.TaskRun{Task: store.Task{ID: "video_2", Route: "enhancement", Status: store.StatusQueued, Request: req, Pricing: []byte(`{}`)}}
	if _, err := r.step(); err != nil {
		t.Fatal(err)
	}
	st := r.state()
	if st.Account != "y" || st.EnhJob == "" || r.c.Step != phaseEnhPoll || r.held["x"] != 0 || r.held["y"] != 1 {
		t.Fatalf("account %q job %q step %q slots %v: want polling on y, its slot held, x's given back", st.Account, st.EnhJob, r.c.Step, r.held)
	}
	if acct, job := upstreamOf(r.c.Request, r.c.State); acct != "y" || job != st.EnhJob {
		t.Errorf("the task's event names %s %s, want y", acct, job)
	}
	if u := Upstreams(r.c.Request, r.c.State); u.Account != "y" || u.EnhanceAccount != "y" || u.EnhanceJob != st.EnhJob || u.Model != "m-y" {
		t.Errorf("the operator's view of the task's upstreams %+v, want y as m-y", u)
	}
	if !slices.Equal(x.models, []string{"m"}) || !slices.Equal(y.models, []string{"m-y"}) {
		t.Errorf("x was sent %v, y %v: want each account its own model", x.models, y.models)
	}
	if got := heldSlot(r.c.Request, r.c.State); got != "y" {
		t.Errorf("the slot released at the end is %q's, want y's", got)
	}
}

// A production task's enhancement half routes across its alias's enhance_upstreams on its
// own: the generation is done on its account (its slot held there), the first enhancement
// account refuses its key, and the half moves to the next — with no slot taken or given back
// on either enhancement account, because the half runs under the generation's slot.
func TestRoutedProductionEnhancementMovesWithoutASlot(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_800_000_000, 0)
	blobs, err := blob.NewFS(t.TempDir(), []byte(strings.Repeat("s", 32)), "http://files.test")
	if err != nil {
		t.Fatal(err)
	}
	gen := &scriptAccount{}
	x, y := &scriptEnhancer{scriptAccount{script: []string{ansRefused}}}, &scriptEnhancer{}
	r := &routeRun{t: t, full: map[string]bool{}, held: map[string]int{"g": 1}}
	r.p = &Pipeline{Upstreams: map[string]Upstream{"g": {Generator: gen}, "x": {Enhancer: x}, "y": {Enhancer: y}},
		Blobs: blobs, PollMin: time.Second, PollMax: time.Second,
		MaxInFlight: func(string) int { return 1 }, Router: &Router{Now: func() time.Time { return now }}}
	req, _ := json.Marshal(Stored{Request: &contract.VideoRequest{Route: contract.RouteProduction, Prompt: "p",
		Production: &contract.ProductionParams{Duration: 5, Resolution: "1080p"}},
		Upstream: "g", Model: "m", EnhanceUpstream: "x", EnhanceUpstreams: []string{"x", "y"}, EnhanceModel: "e",
		EnhanceModels: map[string]string{"y": "e-y"}})
	state, _ := json.Marshal(pipeState{GenJob: "job-g", Intermediate: "inter/video_3.mp4", SlotHeld: true, Tokens: 100})
	r.c = store.TaskRun{Task: store.Task{ID: "video_3", Route: "production", Status: store.StatusInProgress, Request: req,
		Pricing: []byte(`{}`)}, State: state, Step: phaseEnhSubmit}
	if _, err := r.step(); err != nil {
		t.Fatal(err)
	}
	st := r.state()
	if st.EnhAccount != "y" || st.EnhJob == "" || r.c.Step != phaseEnhPoll {
		t.Fatalf("enhancement account %q job %q step %q: want polling on y", st.EnhAccount, st.EnhJob, r.c.Step)
	}
	if x.creates != 1 || y.creates != 1 || gen.creates != 0 {
		t.Errorf("creates: x %d, y %d, generation %d; want one on each enhancement account and no new generation", x.creates, y.creates, gen.creates)
	}
	if r.held["g"] != 1 || r.held["x"] != 0 || r.held["y"] != 0 {
		t.Errorf("slots %v: want the generation's slot on g only", r.held)
	}
	if got := heldSlot(r.c.Request, r.c.State); got != "g" {
		t.Errorf("the slot released at the end is %q's, want the generation account g's", got)
	}
	if u := Upstreams(r.c.Request, r.c.State); u.Account != "g" || u.EnhanceAccount != "y" || u.EnhanceJob != st.EnhJob || u.EnhanceModel != "e-y" {
		t.Errorf("the operator's view of the task's upstreams %+v, want generation on g, enhancement on y as e-y", u)
	}
	if !slices.Equal(x.models, []string{"e"}) || !slices.Equal(y.models, []string{"e-y"}) {
		t.Errorf("x was sent %v, y %v: want each enhancement account its own model", x.models, y.models)
	}
	if len(r.events) == 0 || !strings.Contains(strings.Join(r.events, "\n"), "left x") {
		t.Errorf("events %q: want one saying the task left x and why", r.events)
	}
}
