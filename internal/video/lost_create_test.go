package video

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/contract"
	"mediagen/internal/money"
	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
	"mediagen/internal/store"
)

// blindGenerator is an upstream with no idempotency key and no search (minimax): its first
// create fails with fail, later ones succeed; it counts the creates that reached it.
type blindGenerator struct {
	fail    error
	creates int
}

func (g *blindGenerator) SubmitGeneration(context.Context, provider.GenerateRequest) (string, error) {
	g.creates++
	if g.creates == 1 && g.fail != nil {
		return "", g.fail
	}
	return fmt.Sprintf("job-%d", g.creates), nil
}

func (g *blindGenerator) PollGeneration(context.Context, string) (provider.Job, error) {
	return provider.Job{Status: provider.StatusRunning}, nil
}

func (g *blindGenerator) FindGeneration(context.Context, provider.GenerateRequest, time.Time) (string, bool, error) {
	return "", false, &provider.Error{Code: "video_generation_failed", Message: "The video could not be generated.", Kind: provider.ErrOutcomeUnknown}
}

func (g *blindGenerator) BlindCreates() {}

// A create whose answer is lost on an upstream that cannot be asked for it ends the task —
// failed, refunded, the possible job recorded as lost_create excess — instead of a second
// create; a create refused outright (rate limit, refused key) made no job and is made again.
func TestBlindUpstreamNeverCreatesTwiceAfterALostAnswer(t *testing.T) {
	t.Parallel()
	rateLimited := rest.Classify(&rest.StatusError{Call: "POST /v1/video_generation", Status: http.StatusTooManyRequests}, nil)
	for _, tc := range []struct {
		name     string
		fail     error
		creates  int  // creates that reached the upstream after two steps
		lost     bool // the task ended as a lost create
		accounts bool // the first step waits for the account (no attempt spent)
	}{
		{"a lost answer (5xx, timeout) ends the task", fmt.Errorf("HTTP 500: %w", provider.ErrTransient), 1, true, false},
		{"a rate limit made no job: created again", rateLimited, 2, false, false},
		{"a refused key made no job: created again", fmt.Errorf("code 1004: %w", provider.ErrAccount), 2, false, true},
		{"a create that never left made no job: created again", fmt.Errorf("dial: connection refused: %w: %w", provider.ErrTransient, provider.ErrNotSent), 2, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			gen := &blindGenerator{fail: tc.fail}
			p := &Pipeline{Upstreams: map[string]Upstream{"hailuo": {Generator: gen}}, AccountWait: time.Second, PollMin: time.Second, PollMax: time.Second}
			req, _ := json.Marshal(Stored{Request: &contract.VideoRequest{Route: contract.RouteNative, Prompt: "p",
				Native: &contract.NativeParams{Duration: 6, Resolution: "720p", Ratio: "16:9"}}, Upstream: "hailuo", Model: "MiniMax-Hailuo-02"})
			c := store.TaskRun{Task: store.Task{ID: "video_1", Route: "native", Status: store.StatusQueued, Request: req, Pricing: []byte(`{}`), Reserved: 3 * money.Scale}}
			save := func(o Outcome) error {
				c.Step, c.State = o.Step, o.State
				return nil
			}
			out, err := p.Step(t.Context(), c, save)
			if tc.accounts != (err == nil) {
				t.Fatalf("first step: %+v %v", out, err)
			}
			if err == nil {
				c.Step, c.State = out.Step, out.State
			}
			out, err = p.Step(t.Context(), c, save)
			if err != nil {
				t.Fatalf("second step: %v", err)
			}
			if gen.creates != tc.creates {
				t.Fatalf("%d creates reached the upstream, want %d", gen.creates, tc.creates)
			}
			if !tc.lost {
				if out.Final != nil || out.Step != phaseGenPoll {
					t.Fatalf("outcome %+v, want polling the second create's job", out)
				}
				return
			}
			f := out.Final
			if f == nil || f.Status != store.StatusFailed || f.ErrorCode != "video_generation_failed" || f.Charge != 0 {
				t.Fatalf("outcome %+v, want failed and refunded", f)
			}
			want := []billing.Excess{{Kind: billing.ExcessLostCreate, Upstream: "hailuo", Claimed: 3 * money.Scale, Amount: 3 * money.Scale,
				Detail: "create answer lost; the upstream may have made a job no task polls"}}
			if len(f.Excess) != 1 || f.Excess[0] != want[0] {
				t.Fatalf("excess %+v, want %+v", f.Excess, want)
			}
		})
	}
}

// A failed task records only a lost create among its excess.
func TestFailedTaskKeepsOnlyLostCreateExcess(t *testing.T) {
	t.Parallel()
	got := lostCreates([]billing.Excess{{Kind: billing.ExcessDuration}, {Kind: billing.ExcessLostCreate, Amount: 5}})
	if len(got) != 1 || got[0].Kind != billing.ExcessLostCreate {
		t.Fatalf("kept %+v", got)
	}
}
