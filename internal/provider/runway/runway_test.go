package runway

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/runway/runwayfake"
)

const testKey = "key_runway_test_0123456789"

func fakeClient(t *testing.T, cfg runwayfake.Config) (*Client, *runwayfake.Server) {
	t.Helper()
	if cfg.Key == "" {
		cfg.Key = testKey
	}
	if cfg.Clip == "" {
		cfg.Clip = filepath.Join(t.TempDir(), "clip.mp4")
		if err := os.WriteFile(cfg.Clip, []byte("not really an mp4"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	srv := runwayfake.Start(cfg)
	t.Cleanup(srv.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = srv.TLS()
	c, err := New(Config{BaseURL: srv.Base(), APIKey: testKey, HTTP: &http.Client{Transport: tr, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

func pollToEnd(t *testing.T, c *Client, id string) (provider.Job, []provider.Status) {
	t.Helper()
	var states []provider.Status
	for range 6 {
		job, err := c.PollGeneration(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		states = append(states, job.Status)
		if job.Status == provider.StatusSucceeded || job.Status == provider.StatusFailed {
			return job, states
		}
	}
	t.Fatalf("no end: %v", states)
	return provider.Job{}, nil
}

func TestTaskRunsThroughCreateAndReadInTheSDKFormatAndMeasuresBilledSeconds(t *testing.T) {
	seed := int64(42)
	for _, tc := range []struct {
		name, model, path string
		req               provider.GenerateRequest
		wantSeconds       float64
		extra             int
	}{
		{name: "text to video", model: "gen4.5", req: provider.GenerateRequest{Prompt: "text cat", Ratio: "9:16", Duration: 10, Seed: &seed}, wantSeconds: 10},
		{name: "first frame to video", model: "gen4_turbo", req: provider.GenerateRequest{Prompt: "image cat", Ratio: "16:9", Duration: 5,
			Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://img.example.com/a.png"}}}}, wantSeconds: 5},
		{name: "model default duration is 5 s", model: "gen4.5", req: provider.GenerateRequest{Prompt: "default cat", Ratio: "16:9", Duration: -1}, wantSeconds: 5},
		{name: "billed beyond the request", model: "gen4.5", req: provider.GenerateRequest{Prompt: "long cat", Ratio: "16:9", Duration: 5}, extra: 3, wantSeconds: 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, srv := fakeClient(t, runwayfake.Config{Polls: 2, ExtraSeconds: func(string) int { return tc.extra }})
			tc.req.Model = tc.model
			id, err := c.SubmitGeneration(context.Background(), tc.req)
			if err != nil {
				t.Fatal(err)
			}
			job, states := pollToEnd(t, c, id)
			if want := []provider.Status{provider.StatusQueued, provider.StatusRunning, provider.StatusSucceeded}; !slicesEqual(states, want) {
				t.Fatalf("states %v, want %v", states, want)
			}
			if job.Output == nil || !strings.HasPrefix(job.Output.Source.URL, srv.Base()+"/download/") || job.Output.UsageSeconds != tc.wantSeconds {
				t.Fatalf("output %+v, want %v usage seconds", job.Output, tc.wantSeconds)
			}
			if v := srv.Violations(); len(v) > 0 {
				t.Fatalf("wire format violations: %v", v)
			}
			if srv.JobsFor(tc.req.Prompt) != 1 {
				t.Fatalf("jobs %d", srv.JobsFor(tc.req.Prompt))
			}
		})
	}
}

func TestCreateOfAnImageOnlyModelWithoutAFrameIsRefusedBeforeAnyCall(t *testing.T) {
	c, srv := fakeClient(t, runwayfake.Config{})
	_, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "gen4_turbo", Prompt: "no frame", Ratio: "16:9", Duration: 5})
	if !errors.Is(err, provider.ErrPermanent) || srv.Jobs() != 0 {
		t.Fatalf("err %v, jobs %d", err, srv.Jobs())
	}
}

func TestFailuresMapToThePipelinesKinds(t *testing.T) {
	req := provider.GenerateRequest{Model: "gen4.5", Prompt: "p", Ratio: "16:9", Duration: 5}
	for _, tc := range []struct {
		name string
		cfg  runwayfake.Config
		key  string
		want error
		wait time.Duration
	}{
		{name: "refused key is the account's", key: "wrong", want: provider.ErrAccount},
		{name: "429 with Retry-After is transient and waits", cfg: runwayfake.Config{RateLimit: 7}, want: provider.ErrTransient, wait: 7 * time.Second},
		{name: "429 without Retry-After is transient", cfg: runwayfake.Config{RateLimit: -1}, want: provider.ErrTransient},
		{name: "lost answer (502) is transient", cfg: runwayfake.Config{LoseAnswers: true}, want: provider.ErrTransient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, srv := fakeClient(t, tc.cfg)
			if tc.key != "" {
				c, _ = New(Config{BaseURL: srv.Base(), APIKey: tc.key, HTTP: srv.TLSClient()})
			}
			_, err := c.SubmitGeneration(context.Background(), req)
			if !errors.Is(err, tc.want) || provider.RetryDelay(err) != tc.wait {
				t.Fatalf("err %v (retry after %v), want %v after %v", err, provider.RetryDelay(err), tc.want, tc.wait)
			}
			if strings.Contains(err.Error(), testKey) || strings.Contains(err.Error(), "exceeded") {
				t.Fatalf("error text leaks: %v", err)
			}
		})
	}
}

func TestReadsOfGarbageOrCutBodiesAreTransientAndUnknownTasksAreLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  runwayfake.Config
		id   string
		want error
	}{
		{name: "garbage", cfg: runwayfake.Config{Garbage: true}, id: "gen4.5/x", want: provider.ErrTransient},
		{name: "truncated", cfg: runwayfake.Config{Truncated: true}, id: "gen4.5/x", want: provider.ErrTransient},
		{name: "unknown task", id: "gen4.5/00000000-0000-0000-0000-000000000009", want: provider.ErrUnknownJob},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fakeClient(t, tc.cfg)
			if _, err := c.PollGeneration(context.Background(), tc.id); !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
		})
	}
}

func TestModerationFailureIsAFailedJobWithASanitizedMessage(t *testing.T) {
	c, _ := fakeClient(t, runwayfake.Config{End: func(string) string { return runwayfake.EndRefuse }})
	id, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "gen4.5", Prompt: "refused", Ratio: "16:9", Duration: 5})
	if err != nil {
		t.Fatal(err)
	}
	job, _ := pollToEnd(t, c, id)
	if job.Status != provider.StatusFailed || job.ErrorMessage != "The upstream declined to generate this content." {
		t.Fatalf("job %+v", job)
	}
}

func TestCancelDeletesARunningTaskAndAGoneTaskIsNoError(t *testing.T) {
	c, srv := fakeClient(t, runwayfake.Config{End: func(string) string { return runwayfake.EndNever }})
	id, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "gen4.5", Prompt: "forever", Ratio: "16:9", Duration: 5})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CancelGeneration(context.Background(), id); err != nil || srv.Cancelled() != 1 {
		t.Fatalf("cancel: %v, cancelled %d", err, srv.Cancelled())
	}
	if job, _ := pollToEnd(t, c, id); job.Status != provider.StatusFailed {
		t.Fatalf("job after cancel %+v", job)
	}
	if err := c.CancelGeneration(context.Background(), "gen4.5/00000000-0000-0000-0000-000000000009"); err != nil {
		t.Fatalf("cancel of a gone task: %v", err)
	}
}

func TestLostCreateIsAnUnknownOutcomeNeverASecondCreate(t *testing.T) {
	c, srv := fakeClient(t, runwayfake.Config{})
	_, found, err := c.FindGeneration(context.Background(), provider.GenerateRequest{Model: "gen4.5", Prompt: "lost"}, time.Now())
	if found || !errors.Is(err, provider.ErrOutcomeUnknown) || srv.Jobs() != 0 {
		t.Fatalf("found %v err %v jobs %d", found, err, srv.Jobs())
	}
	var _ provider.BlindCreator = c
}

func TestCheckPassesOnAMissingTaskAndFailsOnARefusedKey(t *testing.T) {
	c, srv := fakeClient(t, runwayfake.Config{})
	if err := c.Check(context.Background()); err != nil {
		t.Fatalf("check: %v", err)
	}
	bad, _ := New(Config{BaseURL: srv.Base(), APIKey: "wrong", HTTP: srv.TLSClient()})
	if err := bad.Check(context.Background()); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("check with a refused key: %v", err)
	}
}

func slicesEqual(a, b []provider.Status) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
