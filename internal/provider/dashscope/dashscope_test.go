package dashscope_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/dashscope"
	"mediagen/internal/provider/dashscope/dashscopefake"
)

const key = "sk-test-dashscope"

func clip(t *testing.T) string {
	p := filepath.Join(t.TempDir(), "clip.mp4")
	if err := os.WriteFile(p, []byte("not really an mp4"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func start(t *testing.T, cfg dashscopefake.Config) (*dashscopefake.Server, *dashscope.Client) {
	t.Helper()
	if cfg.Key == "" {
		cfg.Key = key
	}
	if cfg.Clip == "" {
		cfg.Clip = clip(t)
	}
	f := dashscopefake.Start(cfg)
	t.Cleanup(f.Close)
	c, err := dashscope.New(dashscope.Config{BaseURL: f.Base(), APIKey: key, HTTP: f.Client()})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func noViolations(t *testing.T, f *dashscopefake.Server) {
	t.Helper()
	if v := f.Violations(); len(v) > 0 {
		t.Fatalf("the fake saw requests outside the documented format: %q", v)
	}
}

func seed(v int64) *int64 { return &v }
func yes() *bool          { b := true; return &b }

// poll polls a job until it leaves queued/running (bounded by polls).
func poll(t *testing.T, c *dashscope.Client, id string) provider.Job {
	t.Helper()
	for range 10 {
		j, err := c.PollGeneration(context.Background(), id)
		if err != nil {
			t.Fatalf("poll: %v", err)
		}
		if j.Status != provider.StatusQueued && j.Status != provider.StatusRunning {
			return j
		}
	}
	t.Fatal("the job never ended")
	return provider.Job{}
}

func TestEveryModeIsCreatedInTheDocumentedFormatAndSucceeds(t *testing.T) {
	cases := []struct {
		name string
		req  provider.GenerateRequest
	}{
		{"text 1080p 16:9", provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "a cat", Resolution: "1080p", Ratio: "16:9", Duration: 5}},
		{"text 720p adaptive, default duration", provider.GenerateRequest{Model: "wan2.5-t2v-preview", Prompt: "a dog", Resolution: "720p", Ratio: "adaptive", Duration: -1}},
		{"text 480p 1:1 with seed and watermark", provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "a fox", Resolution: "480p", Ratio: "1:1", Duration: 5, Seed: seed(42), Watermark: yes()}},
		{"text default resolution 3:4 10 s", provider.GenerateRequest{Model: "wan2.5-t2v-preview", Prompt: "a bird", Ratio: "3:4", Duration: 10}},
		{"first frame 1080p", provider.GenerateRequest{Model: "wan2.2-i2v-plus", Prompt: "it moves", Resolution: "1080p", Ratio: "adaptive", Duration: 5,
			Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://example.com/f.png"}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, c := start(t, dashscopefake.Config{})
			id, err := c.SubmitGeneration(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("submit: %v", err)
			}
			j := poll(t, c, id)
			if j.Status != provider.StatusSucceeded || j.Output == nil || !strings.Contains(j.Output.Source.URL, id) {
				t.Fatalf("job = %+v, want succeeded with its video URL", j)
			}
			if j.Output.CompletionTokens != 0 {
				t.Fatalf("tokens = %d: DashScope reports seconds, never tokens", j.Output.CompletionTokens)
			}
			if f.JobsFor(tc.req.Prompt) != 1 {
				t.Fatalf("jobs for the prompt = %d, want 1", f.JobsFor(tc.req.Prompt))
			}
			noViolations(t, f)
		})
	}
}

func TestASizeTheAPIDoesNotListIsRefusedBeforeAnyCall(t *testing.T) {
	f, c := start(t, dashscopefake.Config{})
	_, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "x", Resolution: "480p", Ratio: "21:9"})
	if !errors.Is(err, provider.ErrPermanent) {
		t.Fatalf("err = %v, want permanent", err)
	}
	if f.Jobs() != 0 {
		t.Fatalf("jobs = %d, want 0", f.Jobs())
	}
}

func TestFailedAndCanceledTasksFailWithASanitizedMessage(t *testing.T) {
	for _, tc := range []struct{ end, msg string }{
		{dashscopefake.EndRefuse, "The upstream declined to generate this content."},
		{dashscopefake.EndCancel, "The video could not be generated."},
	} {
		t.Run(tc.end, func(t *testing.T) {
			_, c := start(t, dashscopefake.Config{End: func(string) string { return tc.end }})
			id, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "p", Resolution: "720p", Ratio: "16:9", Duration: 5})
			if err != nil {
				t.Fatal(err)
			}
			j := poll(t, c, id)
			if j.Status != provider.StatusFailed || j.ErrorCode != "video_generation_failed" || j.ErrorMessage != tc.msg {
				t.Fatalf("job = %+v, want failed, video_generation_failed, %q", j, tc.msg)
			}
		})
	}
}

func TestAJobThatNeverEndsStaysRunning(t *testing.T) {
	_, c := start(t, dashscopefake.Config{End: func(string) string { return dashscopefake.EndNever }})
	id, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "p", Resolution: "720p", Ratio: "16:9", Duration: 5})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		j, err := c.PollGeneration(context.Background(), id)
		if err != nil || (j.Status != provider.StatusRunning && j.Status != provider.StatusQueued) {
			t.Fatalf("poll = %+v, %v; want queued or running", j, err)
		}
	}
}

func TestAnUnknownTaskIsALostJob(t *testing.T) {
	_, c := start(t, dashscopefake.Config{})
	_, err := c.PollGeneration(context.Background(), "no-such-task")
	if !errors.Is(err, provider.ErrUnknownJob) {
		t.Fatalf("err = %v, want ErrUnknownJob", err)
	}
}

func TestCreateFailuresAreTypedForThePipeline(t *testing.T) {
	req := provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "p", Resolution: "720p", Ratio: "16:9", Duration: 5}
	cases := []struct {
		name  string
		cfg   dashscopefake.Config
		key   string
		is    error
		after time.Duration
	}{
		{"refused key is the account's", dashscopefake.Config{}, "sk-wrong", provider.ErrAccount, 0},
		{"an account in arrears is the account's", dashscopefake.Config{Arrears: true}, key, provider.ErrAccount, 0},
		{"429 with Retry-After waits it", dashscopefake.Config{RateLimit: true, RetryAfter: 7}, key, provider.ErrTransient, 7 * time.Second},
		{"429 without Retry-After is transient", dashscopefake.Config{RateLimit: true}, key, provider.ErrTransient, 0},
		{"5xx after the job is transient", dashscopefake.Config{LoseAnswers: true}, key, provider.ErrTransient, 0},
		{"dropped connection is transient", dashscopefake.Config{DropBeforeJob: true}, key, provider.ErrTransient, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Key, tc.cfg.Clip = key, clip(t)
			f := dashscopefake.Start(tc.cfg)
			defer f.Close()
			c, err := dashscope.New(dashscope.Config{BaseURL: f.Base(), APIKey: tc.key, HTTP: f.Client()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.SubmitGeneration(context.Background(), req)
			if !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want %v", err, tc.is)
			}
			if got := provider.RetryDelay(err); got != tc.after {
				t.Fatalf("retry delay = %v, want %v", got, tc.after)
			}
			if strings.Contains(err.Error(), "raw upstream text") || strings.Contains(err.Error(), tc.key) {
				t.Fatalf("error %q carries the upstream's text or the key", err)
			}
		})
	}
}

func TestAModerationRefusalOfTheCreateIsPermanentAndSanitized(t *testing.T) {
	f, c := start(t, dashscopefake.Config{})
	_, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "[refuse-input]", Resolution: "720p", Ratio: "16:9", Duration: 5})
	var pe *provider.Error
	if !errors.As(err, &pe) || !errors.Is(err, provider.ErrPermanent) || pe.Message != "The upstream declined to generate this content." {
		t.Fatalf("err = %v, want a permanent refusal with the sanitized sentence", err)
	}
	if f.Jobs() != 0 {
		t.Fatalf("jobs = %d", f.Jobs())
	}
}

// TestGarbageAndTruncatedAnswersAreTransient: a body that is not the documented JSON, or is
// cut, never ends a task: it is tried again.
func TestGarbageAndTruncatedAnswersAreTransient(t *testing.T) {
	for name, body := range map[string]string{
		"html":      "<html>502</html>",
		"truncated": `{"request_id":"r","output":{"task_id":"x","task_status":`,
		"no id":     `{"request_id":"r","output":{}}`,
		"odd state": `{"request_id":"r","output":{"task_id":"x","task_status":"PAUSED"}}`,
		"no url":    `{"request_id":"r","output":{"task_id":"x","task_status":"SUCCEEDED"}}`,
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, body) }))
			defer srv.Close()
			c, err := dashscope.New(dashscope.Config{BaseURL: srv.URL, APIKey: key})
			if err != nil {
				t.Fatal(err)
			}
			if name == "no id" || name == "html" || name == "truncated" {
				if _, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "p", Resolution: "720p", Ratio: "16:9"}); !errors.Is(err, provider.ErrTransient) {
					t.Fatalf("submit err = %v, want transient", err)
				}
			}
			if name != "no id" {
				if _, err := c.PollGeneration(context.Background(), "x"); !errors.Is(err, provider.ErrTransient) {
					t.Fatalf("poll err = %v, want transient", err)
				}
			}
		})
	}
}

func TestFindGenerationFreesALostCreateOnlyWhenTheAccountMadeNoTaskSinceIt(t *testing.T) {
	req := provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "p", Resolution: "720p", Ratio: "16:9", Duration: 5, IdempotencyKey: "t1:gen"}
	t.Run("dropped before any job: not found, free to create", func(t *testing.T) {
		f, c := start(t, dashscopefake.Config{DropBeforeJob: true})
		since := time.Now()
		if _, err := c.SubmitGeneration(context.Background(), req); err == nil {
			t.Fatal("the create succeeded")
		}
		id, found, err := c.FindGeneration(context.Background(), req, since)
		if err != nil || found || id != "" {
			t.Fatalf("find = %q, %v, %v; want not found, no error", id, found, err)
		}
		if f.Lists() != 1 {
			t.Fatalf("lists = %d", f.Lists())
		}
		noViolations(t, f)
	})
	t.Run("job made, answer lost: outcome unknown, never a second create", func(t *testing.T) {
		f, c := start(t, dashscopefake.Config{LoseAnswers: true})
		since := time.Now()
		if _, err := c.SubmitGeneration(context.Background(), req); err == nil {
			t.Fatal("the create succeeded")
		}
		_, found, err := c.FindGeneration(context.Background(), req, since)
		if found || !errors.Is(err, provider.ErrOutcomeUnknown) || !errors.Is(err, dashscope.ErrAmbiguous) {
			t.Fatalf("find = %v, %v; want an ambiguous answer of unknown outcome", found, err)
		}
		noViolations(t, f)
	})
	t.Run("a task from before the lost create does not count", func(t *testing.T) {
		f, c := start(t, dashscopefake.Config{})
		if _, err := c.SubmitGeneration(context.Background(), req); err != nil {
			t.Fatal(err)
		}
		// The range asked for is wide (it covers the zones the reference leaves open); the
		// task's own gmt_create decides. (Another client: this one remembers the answer.)
		c2, _ := dashscope.New(dashscope.Config{BaseURL: f.Base(), APIKey: key, HTTP: f.Client()})
		if _, found, err := c2.FindGeneration(context.Background(), req, time.Now().Add(time.Hour)); found || err != nil {
			t.Fatalf("find = %v, %v; want not found", found, err)
		}
		noViolations(t, f)
	})
	t.Run("without a recorded submit time every task DashScope keeps counts", func(t *testing.T) {
		f, c := start(t, dashscopefake.Config{Age: 10 * time.Minute})
		if _, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: req.Model, Prompt: "old", Resolution: "720p", Ratio: "16:9"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.FindGeneration(context.Background(), req, time.Time{}); !errors.Is(err, dashscope.ErrAmbiguous) {
			t.Fatalf("find without a submit time = %v; want ambiguous (a 10-minute-old task may be the lost create's)", err)
		}
		noViolations(t, f)
	})
	t.Run("another model's task does not count", func(t *testing.T) {
		f, c := start(t, dashscopefake.Config{})
		since := time.Now()
		if _, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "wan2.5-t2v-preview", Prompt: "q", Resolution: "720p", Ratio: "16:9"}); err != nil {
			t.Fatal(err)
		}
		if _, found, err := c.FindGeneration(context.Background(), req, since); found || err != nil {
			t.Fatalf("find = %v, %v; want not found", found, err)
		}
		noViolations(t, f)
	})
}

func TestCheckProvesTheKey(t *testing.T) {
	f, c := start(t, dashscopefake.Config{})
	if err := c.Check(context.Background()); err != nil {
		t.Fatalf("check: %v", err)
	}
	bad, _ := dashscope.New(dashscope.Config{BaseURL: f.Base(), APIKey: "sk-wrong", HTTP: f.Client()})
	if err := bad.Check(context.Background()); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("check with a wrong key = %v, want ErrAccount", err)
	}
	// A service that refuses the id itself (400) has authenticated the key; one answering
	// garbage or 5xx has not shown anything.
	for body, ok := range map[string]bool{
		`400 {"code":"InvalidParameter","message":"x","request_id":"r"}`: true,
		`500 {"code":"InternalError","message":"x","request_id":"r"}`:    false,
		`200 <html>`:                         false,
		`200 {"request_id":"r","output":{}}`: false,
	} {
		status, text, _ := strings.Cut(body, " ")
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, _ := strconv.Atoi(status)
			w.WriteHeader(code)
			_, _ = io.WriteString(w, text)
		}))
		c, _ := dashscope.New(dashscope.Config{BaseURL: srv.URL, APIKey: key})
		if err := c.Check(context.Background()); (err == nil) != ok {
			t.Errorf("check against %s: %v, want ok %v", body, err, ok)
		}
		srv.Close()
	}
}

// A create answered to this client but never recorded (the task's save failed after it) is
// adopted; tasks answered to other creates do not make a lost create's search ambiguous.
func TestFindGenerationExplainsTheTasksThisClientSawAnswered(t *testing.T) {
	f, c := start(t, dashscopefake.Config{})
	since := time.Now()
	mine := provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "mine", Resolution: "720p", Ratio: "16:9", IdempotencyKey: "t1:gen"}
	other := provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "other", Resolution: "720p", Ratio: "16:9", IdempotencyKey: "t2:gen"}
	id, err := c.SubmitGeneration(context.Background(), mine)
	if err != nil {
		t.Fatal(err)
	}
	got, found, err := c.FindGeneration(context.Background(), mine, since)
	if err != nil || !found || got != id {
		t.Fatalf("find = %q, %v, %v; want the answered %q", got, found, err, id)
	}
	third := provider.GenerateRequest{Model: "wan2.2-t2v-plus", Prompt: "third", Resolution: "720p", Ratio: "16:9", IdempotencyKey: "t3:gen"}
	if _, err := c.SubmitGeneration(context.Background(), other); err != nil {
		t.Fatal(err)
	}
	if _, found, err := c.FindGeneration(context.Background(), third, since); found || err != nil {
		t.Fatalf("find for a key whose create made nothing = %v, %v; want not found (every listed task is explained)", found, err)
	}
	// Another client (another replica) cannot explain them: it must not create again.
	c2, _ := dashscope.New(dashscope.Config{BaseURL: f.Base(), APIKey: key, HTTP: f.Client()})
	if _, _, err := c2.FindGeneration(context.Background(), third, since); !errors.Is(err, dashscope.ErrAmbiguous) {
		t.Fatalf("find on another client = %v; want ambiguous", err)
	}
}
