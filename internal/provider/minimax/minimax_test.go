package minimax

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/minimax/minimaxfake"
	"mediagen/internal/routing"
)

const testKey = "mm-test-0123456789"

func fakeClient(t *testing.T, cfg minimaxfake.Config) (*Client, *minimaxfake.Server) {
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
	srv := minimaxfake.Start(cfg)
	t.Cleanup(srv.Close)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = srv.TLS()
	c, err := New(Config{BaseURL: srv.Base(), APIKey: testKey, HTTP: &http.Client{Transport: tr, Timeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return c, srv
}

func TestTaskRunsThroughCreateQueryAndRetrieveInTheReferenceFormat(t *testing.T) {
	c, srv := fakeClient(t, minimaxfake.Config{Polls: 2})
	ctx := context.Background()
	req := provider.GenerateRequest{IdempotencyKey: "task_1:gen", Model: "MiniMax-Hailuo-02", Prompt: "a cat on a wall",
		Resolution: "720p", Duration: 10, Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://img.example.com/a.png"}}}}
	id, err := c.SubmitGeneration(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var states []provider.Status
	var job provider.Job
	for range 4 {
		if job, err = c.PollGeneration(ctx, id); err != nil {
			t.Fatal(err)
		}
		states = append(states, job.Status)
		if job.Status == provider.StatusSucceeded {
			break
		}
	}
	if want := []provider.Status{provider.StatusQueued, provider.StatusRunning, provider.StatusSucceeded}; !equal(states, want) {
		t.Fatalf("states %v, want %v", states, want)
	}
	if job.Output == nil || !strings.HasPrefix(job.Output.Source.URL, srv.Base()+"/download/") || job.Output.ContentType != "video/mp4" {
		t.Fatalf("output %+v", job.Output)
	}
	res, err := srv.TLSClient().Get(job.Output.Source.URL)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("download: %v %v", res, err)
	}
	res.Body.Close()
	if v := srv.Violations(); len(v) > 0 {
		t.Fatalf("wire format violations: %v", v)
	}
	if srv.JobsFor("a cat on a wall") != 1 {
		t.Fatalf("jobs %d", srv.JobsFor("a cat on a wall"))
	}
}

func TestCreateBodyMapsResolutionDurationAndFirstFrame(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   provider.GenerateRequest
		want createRequest
	}{
		{"720p is 768P, the model's default length left out", provider.GenerateRequest{Model: "m", Prompt: "p", Resolution: "720p", Duration: -1},
			createRequest{Model: "m", Prompt: "p", Resolution: "768P"}},
		{"1080p at 6 s", provider.GenerateRequest{Model: "m", Prompt: "p", Resolution: "1080p", Duration: 6},
			createRequest{Model: "m", Prompt: "p", Resolution: "1080P", Duration: 6}},
		{"first frame by URL", provider.GenerateRequest{Model: "m", Prompt: "p", Resolution: "720p", Duration: 10,
			Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://x/y.png"}}}},
			createRequest{Model: "m", Prompt: "p", Resolution: "768P", Duration: 10, FirstFrameImage: "https://x/y.png"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := request(tc.in); got != tc.want {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// scripted answers every call with the given status and body.
func scripted(t *testing.T, status int, body string, header map[string]string) *Client {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL, APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCreateFailuresMapToTheirKinds(t *testing.T) {
	for _, tc := range []struct {
		name        string
		status      int
		body        string
		header      map[string]string
		kind        error
		rateLimited bool
		retryAfter  time.Duration
		message     string
	}{
		{"1002 on HTTP 200 is a rate limit", 200, `{"base_resp":{"status_code":1002,"status_msg":"rate limit"}}`, nil, provider.ErrTransient, true, 0, ""},
		{"1039 on HTTP 200 is a rate limit", 200, `{"base_resp":{"status_code":1039,"status_msg":"token limit"}}`, nil, provider.ErrTransient, true, 0, ""},
		{"HTTP 429 keeps its Retry-After", 429, `{"base_resp":{"status_code":1002,"status_msg":"rate limit"}}`, map[string]string{"Retry-After": "7"}, provider.ErrTransient, true, 7 * time.Second, ""},
		{"1004 on HTTP 200 is a refused key", 200, `{"base_resp":{"status_code":1004,"status_msg":"not authorized"}}`, nil, provider.ErrAccount, false, 0, ""},
		{"2049 is a refused key", 200, `{"base_resp":{"status_code":2049,"status_msg":"invalid api key"}}`, nil, provider.ErrAccount, false, 0, ""},
		{"HTTP 401 is a refused key", 401, `{}`, nil, provider.ErrAccount, false, 0, ""},
		{"1008 is the account's balance", 200, `{"base_resp":{"status_code":1008,"status_msg":"insufficient balance"}}`, nil, provider.ErrAccount, false, 0, ""},
		{"1026 is a content refusal", 200, `{"base_resp":{"status_code":1026,"status_msg":"input new_sensitive"}}`, nil, provider.ErrPermanent, false, 0, "The upstream declined to generate this content."},
		{"2013 is a parameter refusal", 200, `{"base_resp":{"status_code":2013,"status_msg":"invalid params"}}`, nil, provider.ErrPermanent, false, 0, "The upstream rejected the request's parameters."},
		{"1000 on HTTP 200 is transient", 200, `{"base_resp":{"status_code":1000,"status_msg":"unknown error"}}`, nil, provider.ErrTransient, false, 0, ""},
		{"HTTP 500 is transient", 500, `{"base_resp":{"status_code":1024}}`, nil, provider.ErrTransient, false, 0, ""},
		{"a body that is not JSON is transient", 200, `<html>502</html>`, nil, provider.ErrTransient, false, 0, ""},
		{"a cut body is transient", 200, `{"task_id":"12`, nil, provider.ErrTransient, false, 0, ""},
		{"success without a task id is transient", 200, `{"base_resp":{"status_code":0,"status_msg":"success"}}`, nil, provider.ErrTransient, false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := scripted(t, tc.status, tc.body, tc.header)
			_, err := c.SubmitGeneration(context.Background(), provider.GenerateRequest{Model: "MiniMax-Hailuo-02", Prompt: "p"})
			if !errors.Is(err, tc.kind) {
				t.Fatalf("err %v, want %v", err, tc.kind)
			}
			if got := routing.RateLimited(err); got != tc.rateLimited {
				t.Fatalf("rate limited %v, want %v (%v)", got, tc.rateLimited, err)
			}
			if got := provider.RetryDelay(err); got != tc.retryAfter {
				t.Fatalf("retry after %v, want %v", got, tc.retryAfter)
			}
			var pe *provider.Error
			if tc.message != "" && (!errors.As(err, &pe) || pe.Message != tc.message) {
				t.Fatalf("err %v, want message %q", err, tc.message)
			}
			if strings.Contains(err.Error(), "sensitive") || strings.Contains(err.Error(), testKey) {
				t.Fatalf("the upstream's text or the key leaks: %v", err)
			}
		})
	}
}

func TestPollMapsEveryStatusAndFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		body    string
		status  provider.Status
		kind    error
		message string
	}{
		{"Preparing is queued", `{"task_id":"1","status":"Preparing","base_resp":{"status_code":0}}`, provider.StatusQueued, nil, ""},
		{"Queueing is queued", `{"task_id":"1","status":"Queueing","base_resp":{"status_code":0}}`, provider.StatusQueued, nil, ""},
		{"Processing is running", `{"task_id":"1","status":"Processing","base_resp":{"status_code":0}}`, provider.StatusRunning, nil, ""},
		{"Fail with 1027 is a content refusal", `{"task_id":"1","status":"Fail","base_resp":{"status_code":1027,"status_msg":"output new_sensitive"}}`, provider.StatusFailed, nil, "The upstream declined to generate this content."},
		{"Fail without a code failed", `{"task_id":"1","status":"Fail","base_resp":{"status_code":0}}`, provider.StatusFailed, nil, "The video could not be generated."},
		{"a refused query of the task failed it", `{"base_resp":{"status_code":2013,"status_msg":"invalid params"}}`, provider.StatusFailed, nil, "The upstream rejected the request's parameters."},
		{"an unknown status is transient", `{"task_id":"1","status":"Paused","base_resp":{"status_code":0}}`, "", provider.ErrTransient, ""},
		{"Success without a file id is transient", `{"task_id":"1","status":"Success","base_resp":{"status_code":0}}`, "", provider.ErrTransient, ""},
		{"a transient code is transient", `{"base_resp":{"status_code":1001,"status_msg":"timeout"}}`, "", provider.ErrTransient, ""},
		{"a refused key waits", `{"base_resp":{"status_code":1004,"status_msg":"not authorized"}}`, "", provider.ErrAccount, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			job, err := scripted(t, 200, tc.body, nil).PollGeneration(context.Background(), "1")
			if tc.kind != nil {
				if !errors.Is(err, tc.kind) {
					t.Fatalf("err %v, want %v", err, tc.kind)
				}
				return
			}
			if err != nil || job.Status != tc.status || job.ErrorMessage != tc.message {
				t.Fatalf("job %+v err %v", job, err)
			}
			if tc.status == provider.StatusFailed && job.ErrorCode != "video_generation_failed" {
				t.Fatalf("code %q", job.ErrorCode)
			}
		})
	}
}

func TestSucceededTaskWhoseFileCannotBeReadYetIsPolledAgain(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/query/video_generation" {
			_, _ = io.WriteString(w, `{"task_id":"1","status":"Success","file_id":"205258526306433","base_resp":{"status_code":0}}`)
			return
		}
		_, _ = io.WriteString(w, `{"base_resp":{"status_code":2013,"status_msg":"invalid params"}}`)
	}))
	defer srv.Close()
	c, _ := New(Config{BaseURL: srv.URL, APIKey: testKey})
	if _, err := c.PollGeneration(context.Background(), "1"); !errors.Is(err, provider.ErrTransient) {
		t.Fatalf("err %v, want transient: the job is paid, never failed for a file read", err)
	}
}

func TestFindGenerationAnswersTheOutcomeIsUnknownWithoutACall(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected call %s %s", r.Method, r.URL)
	}))
	defer srv.Close()
	c, _ := New(Config{BaseURL: srv.URL, APIKey: testKey})
	var f provider.GenerationFinder = c
	_, found, err := f.FindGeneration(context.Background(), provider.GenerateRequest{IdempotencyKey: "t:gen"}, time.Now())
	if found || !errors.Is(err, provider.ErrOutcomeUnknown) {
		t.Fatalf("found %v err %v, want the outcome unknown", found, err)
	}
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Code != "video_generation_failed" {
		t.Fatalf("err %v", err)
	}
}

func TestCheckPassesWithTheKeyAndFailsWithoutIt(t *testing.T) {
	c, _ := fakeClient(t, minimaxfake.Config{})
	if err := c.Check(context.Background()); err != nil {
		t.Fatalf("check: %v", err)
	}
	bad, srv := fakeClient(t, minimaxfake.Config{Key: "another-key"})
	if err := bad.Check(context.Background()); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("check with a refused key: %v", err)
	}
	if srv.Refused() != 1 {
		t.Fatalf("refused %d", srv.Refused())
	}
}

func equal(a, b []provider.Status) bool {
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
