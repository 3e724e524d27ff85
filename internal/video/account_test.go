package video

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/contract"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// refusingGenerator refuses the account's credentials n times, then takes the job.
type refusingGenerator struct{ refusals int }

func (g *refusingGenerator) SubmitGeneration(context.Context, provider.GenerateRequest) (string, error) {
	if g.refusals > 0 {
		g.refusals--
		return "", fmt.Errorf("HTTP 401: %w", provider.ErrAccount)
	}
	return "job-1", nil
}

func (g *refusingGenerator) PollGeneration(context.Context, string) (provider.Job, error) {
	return provider.Job{Status: provider.StatusRunning}, nil
}

// A refused account makes the task wait, queued, without a failed attempt (the step returns
// an outcome, not an error), and raises the account's alarm until a call succeeds.
func TestRefusedAccountMakesTheTaskWaitNotFail(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	gen := &refusingGenerator{refusals: 1}
	p := &Pipeline{Upstreams: map[string]Upstream{"ark-main": {Generator: gen}}, AccountWait: 7 * time.Second,
		AccountBroken: NewAccountBroken(reg), PollMin: time.Second, PollMax: time.Second}
	req, _ := json.Marshal(Stored{Request: &contract.VideoRequest{Route: contract.RouteNative, Prompt: "p",
		Native: &contract.NativeParams{Duration: 5, Resolution: "480p", Ratio: "16:9"}}, Upstream: "ark-main", Model: "m"})
	c := store.TaskRun{Task: store.Task{ID: "video_1", Route: "native", Status: store.StatusQueued, Request: req, Pricing: []byte(`{}`)}}
	var saved []Outcome
	save := func(o Outcome) error { saved = append(saved, o); return nil }

	out, err := p.Step(t.Context(), c, save)
	if err != nil {
		t.Fatalf("a refused account is an error of the step (an attempt spent): %v", err)
	}
	if out.Final != nil || out.RunIn != 7*time.Second || out.Status != store.StatusQueued {
		t.Fatalf("outcome %+v, want the task queued again in 7 s", out)
	}
	var st pipeState
	if err := json.Unmarshal(out.State, &st); err != nil || !st.Submitting {
		t.Errorf("state %s: the submit checkpoint must stay recorded", out.State)
	}
	if got := gaugeValue(t, reg, "ark-main"); got != 1 {
		t.Errorf("account broken gauge %v, want 1", got)
	}

	c.Step, c.State = out.Step, out.State
	out, err = p.Step(t.Context(), c, save)
	if err != nil || out.Final != nil || out.Step != phaseGenPoll {
		t.Fatalf("after the account works again: %+v %v", out, err)
	}
	if got := gaugeValue(t, reg, "ark-main"); got != 0 {
		t.Errorf("account broken gauge %v after a successful call, want 0", got)
	}
}

func gaugeValue(t *testing.T, reg *prometheus.Registry, upstream string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "upstream" && l.GetValue() == upstream {
					return m.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no gauge for %s", upstream)
	return 0
}
