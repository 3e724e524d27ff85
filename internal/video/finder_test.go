package video

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"mediagen/internal/contract"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// lostAnswerGenerator makes a job on its first submit but loses the answer (a 5xx after the
// job was made); it can find its jobs by idempotency key, as Ark can by safety_identifier.
type lostAnswerGenerator struct {
	jobs    map[string]string // idempotency key → job id
	submits int
	finds   []time.Time
}

func (g *lostAnswerGenerator) SubmitGeneration(_ context.Context, r provider.GenerateRequest) (string, error) {
	g.submits++
	id := fmt.Sprintf("job-%d", g.submits)
	g.jobs[r.IdempotencyKey] = id
	if g.submits == 1 {
		return "", fmt.Errorf("HTTP 502 after the job was made: %w", provider.ErrTransient)
	}
	return id, nil
}

func (g *lostAnswerGenerator) PollGeneration(context.Context, string) (provider.Job, error) {
	return provider.Job{Status: provider.StatusRunning}, nil
}

type findingGenerator struct{ *lostAnswerGenerator }

func (g findingGenerator) FindGeneration(_ context.Context, r provider.GenerateRequest, since time.Time) (string, bool, error) {
	g.finds = append(g.finds, since)
	id, ok := g.jobs[r.IdempotencyKey]
	return id, ok, nil
}

// A submit whose answer was lost is not repeated on an upstream that can find the job it
// started: the retry adopts that job. An upstream that cannot look submits again (the
// documented limit of upstreams without idempotency tokens or a searchable list).
func TestRetriedSubmitAdoptsTheJobALostAnswerStarted(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		canFind  bool
		wantJobs int
		wantJob  string
	}{
		{"an upstream that finds jobs makes one", true, 1, "job-1"},
		{"an upstream that cannot look makes two", false, 2, "job-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lost := &lostAnswerGenerator{jobs: map[string]string{}}
			var gen provider.Generator = lost
			if tc.canFind {
				gen = findingGenerator{lost}
			}
			p := &Pipeline{Upstreams: map[string]Upstream{"ark-main": {Generator: gen}}, PollMin: time.Second, PollMax: time.Second}
			req, _ := json.Marshal(Stored{Request: &contract.VideoRequest{Route: contract.RouteNative, Prompt: "p",
				Native: &contract.NativeParams{Duration: 5, Resolution: "480p", Ratio: "16:9"}}, Upstream: "ark-main", Model: "m"})
			c := store.TaskRun{Task: store.Task{ID: "video_1", Route: "native", Status: store.StatusQueued, Request: req, Pricing: []byte(`{}`)}}
			var last Outcome
			save := func(o Outcome) error { last = o; return nil }

			before := time.Now().Unix()
			if _, err := p.Step(t.Context(), c, save); err == nil {
				t.Fatal("the lost answer is a transient error of the step")
			}
			// The job engine retries from the state the checkpoint saved.
			c.Step, c.State = last.Step, last.State
			out, err := p.Step(t.Context(), c, save)
			if err != nil || out.Step != phaseGenPoll {
				t.Fatalf("retry: %+v %v", out, err)
			}
			var st pipeState
			if err := json.Unmarshal(out.State, &st); err != nil {
				t.Fatal(err)
			}
			if st.GenJob != tc.wantJob || lost.submits != tc.wantJobs || st.Submitting {
				t.Errorf("job %q after %d submits (submitting %v); want %q after %d", st.GenJob, lost.submits, st.Submitting, tc.wantJob, tc.wantJobs)
			}
			if tc.canFind {
				g := gen.(findingGenerator)
				if len(g.finds) != 1 || g.finds[0].Unix() < before {
					t.Errorf("finds %v: want one search back to the checkpoint (>= %d)", g.finds, before)
				}
			}
		})
	}
}

// flakyPoller fails its polls transiently n times (with a Retry-After), then answers.
type flakyPoller struct {
	lostAnswerGenerator
	failures int
}

func (g *flakyPoller) PollGeneration(context.Context, string) (provider.Job, error) {
	if g.failures > 0 {
		g.failures--
		return provider.Job{}, &provider.RetryAfter{After: 3 * time.Second, Err: fmt.Errorf("HTTP 429: %w", provider.ErrTransient)}
	}
	return provider.Job{Status: provider.StatusRunning, Progress: 50}, nil
}

// A poll that fails transiently does not spend the task's attempts (its upstream job is paid
// for): the step answers an outcome that polls again after the upstream's Retry-After.
func TestFlakyPollsWaitWithoutSpendingAttempts(t *testing.T) {
	t.Parallel()
	gen := &flakyPoller{failures: 10}
	p := &Pipeline{Upstreams: map[string]Upstream{"ark-main": {Generator: gen}}, PollMin: 100 * time.Millisecond, PollMax: 10 * time.Second}
	req, _ := json.Marshal(Stored{Request: &contract.VideoRequest{Route: contract.RouteNative, Prompt: "p",
		Native: &contract.NativeParams{Duration: 5, Resolution: "480p", Ratio: "16:9"}}, Upstream: "ark-main", Model: "m"})
	c := store.TaskRun{Task: store.Task{ID: "video_1", Route: "native", Status: store.StatusInProgress, Request: req, Pricing: []byte(`{}`)}}
	c.Step, c.State = phaseGenPoll, []byte(`{"gen_job":"job-1"}`)
	save := func(Outcome) error { return nil }
	for i := range 10 {
		out, err := p.Step(t.Context(), c, save)
		if err != nil || out.Final != nil || out.RunIn < 3*time.Second || out.Step != phaseGenPoll {
			t.Fatalf("failed poll %d: %+v %v; want another poll in >= 3 s and no error", i+1, out, err)
		}
		c.State = out.State
	}
	out, err := p.Step(t.Context(), c, save)
	var st pipeState
	_ = json.Unmarshal(out.State, &st)
	if err != nil || st.PollErrors != 0 || out.Progress == 0 {
		t.Errorf("after the upstream answers: %+v %v (poll errors %d)", out, err, st.PollErrors)
	}
}
