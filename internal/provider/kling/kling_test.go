package kling_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"mediagen/internal/provider"
	"mediagen/internal/provider/kling"
	"mediagen/internal/provider/kling/klingfake"
)

const (
	access = "ak-test-0123"
	secret = "sk-secret-4567"
)

func fakeClient(t *testing.T, f *klingfake.Server, secretKey string) *kling.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = f.TLS()
	c, err := kling.New(kling.Config{BaseURL: f.Base(), AccessKey: access, SecretKey: secretKey, HTTP: &http.Client{Transport: tr, Timeout: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func startFake(t *testing.T, cfg klingfake.Config) *klingfake.Server {
	t.Helper()
	cfg.AccessKey, cfg.SecretKey = access, secret
	f := klingfake.Start(cfg)
	t.Cleanup(func() {
		f.Close()
		for _, v := range f.Violations() {
			t.Errorf("wire format: %s", v)
		}
	})
	return f
}

// A text task and a first/last-frame task each reach their endpoint, are accepted by the
// reference-built fake (JWT and fields), and end with the result link.
func TestTasksOfBothEndpointsRunToTheirResult(t *testing.T) {
	t.Parallel()
	f := startFake(t, klingfake.Config{Clip: "x"})
	c := fakeClient(t, f, secret)
	frames := []provider.Input{
		{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://cdn.example.com/a.png"}},
		{Type: "image_url", Role: "last_frame", Source: provider.Source{URL: "https://cdn.example.com/b.png"}},
	}
	for _, r := range []provider.GenerateRequest{
		{IdempotencyKey: "video_t:gen", Model: "kling-v2-1", Prompt: "a red kite", Resolution: "1080p", Ratio: "9:16", Duration: 10},
		{IdempotencyKey: "video_i:gen", Model: "kling-v2-1", Prompt: "", Resolution: "720p", Ratio: "adaptive", Duration: -1, Inputs: frames},
	} {
		id, err := c.SubmitGeneration(t.Context(), r)
		if err != nil {
			t.Fatalf("submit %s: %v", r.IdempotencyKey, err)
		}
		want := "text2video/"
		if r.Inputs != nil {
			want = "image2video/"
		}
		if !strings.HasPrefix(id, want) {
			t.Errorf("job id %q, want %s…", id, want)
		}
		job, err := c.PollGeneration(t.Context(), id)
		if err != nil || job.Status != provider.StatusRunning {
			t.Fatalf("first poll: %+v %v", job, err)
		}
		job, err = c.PollGeneration(t.Context(), id)
		if err != nil || job.Status != provider.StatusSucceeded || job.Output == nil || !strings.Contains(job.Output.Source.URL, "/files/") {
			t.Fatalf("second poll: %+v %v", job, err)
		}
		if n := f.JobsFor(kling.ExternalID(r.IdempotencyKey)); n != 1 {
			t.Errorf("%s made %d tasks", r.IdempotencyKey, n)
		}
	}
	if f.Tokens() != 1 {
		t.Errorf("%d tokens for six calls within a token's life, want 1", f.Tokens())
	}
}

// A create whose task was made but whose answer was lost is found by its external_task_id,
// and a create of the same key again is refused by Kling, never a second paid task.
func TestALostCreateIsFoundByItsExternalTaskID(t *testing.T) {
	t.Parallel()
	f := startFake(t, klingfake.Config{LoseAnswers: true})
	c := fakeClient(t, f, secret)
	r := provider.GenerateRequest{IdempotencyKey: "video_lost:gen", Model: "kling-v2-master", Prompt: "p", Resolution: "720p", Ratio: "16:9", Duration: 5}
	if _, err := c.SubmitGeneration(t.Context(), r); !errors.Is(err, provider.ErrTransient) {
		t.Fatalf("a lost answer: %v, want transient", err)
	}
	id, found, err := c.FindGeneration(t.Context(), r, time.Now())
	if err != nil || !found || !strings.HasPrefix(id, "text2video/8") {
		t.Fatalf("find: %q %v %v", id, found, err)
	}
	if job, err := c.PollGeneration(t.Context(), id); err != nil || job.Status != provider.StatusSucceeded { // the find read was its first poll
		t.Errorf("the found task: %+v %v", job, err)
	}
	other := r
	other.IdempotencyKey = "video_never:gen"
	if _, found, err := c.FindGeneration(t.Context(), other, time.Now()); err != nil || found {
		t.Errorf("a key no create carried: found %v, %v", found, err)
	}
	if f.JobsFor(kling.ExternalID(r.IdempotencyKey)) != 1 || f.Jobs() != 1 {
		t.Errorf("%d tasks for the key, %d in all", f.JobsFor(kling.ExternalID(r.IdempotencyKey)), f.Jobs())
	}
}

// A wrong secret key makes tokens Kling refuses: an account error, with neither key in it.
func TestAWrongSecretIsARefusedAccountAndNoKeyLeaks(t *testing.T) {
	t.Parallel()
	f := klingfake.Start(klingfake.Config{AccessKey: access, SecretKey: secret})
	t.Cleanup(f.Close)
	c := fakeClient(t, f, "sk-wrong-secret")
	err := c.Check(t.Context())
	if !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("check: %v, want the account refused", err)
	}
	for _, k := range []string{access, "sk-wrong-secret"} {
		if strings.Contains(err.Error(), k) {
			t.Errorf("error %q shows a key", err)
		}
	}
	if err := fakeClient(t, f, secret).Check(t.Context()); err != nil {
		t.Errorf("check with the right keys: %v", err)
	}
}

// The token is HS256 with the secret, iss the access key, nbf a few seconds back and exp
// 30 minutes on; it is kept while it has time left and renewed before it expires.
func TestTheTokenIsRenewedBeforeItExpires(t *testing.T) {
	t.Parallel()
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auths = append(auths, strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer "))
		_, _ = io.WriteString(w, `{"code":0,"data":{"task_id":"1","task_status":"processing"}}`)
	}))
	defer srv.Close()
	now := time.Unix(1_800_000_000, 0)
	c, err := kling.New(kling.Config{BaseURL: srv.URL, AccessKey: access, SecretKey: secret, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	for _, step := range []time.Duration{0, 19 * time.Minute, 2 * time.Minute} {
		now = now.Add(step)
		if _, err := c.PollGeneration(t.Context(), "text2video/1"); err != nil {
			t.Fatal(err)
		}
	}
	if auths[0] != auths[1] || auths[1] == auths[2] {
		t.Fatalf("tokens: kept within 19 min %v, renewed at 21 min %v", auths[0] == auths[1], auths[1] != auths[2])
	}
	var claims jwt.RegisteredClaims
	tok, err := jwt.ParseWithClaims(auths[2], &claims, func(*jwt.Token) (any, error) { return []byte(secret), nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithTimeFunc(func() time.Time { return now }))
	if err != nil || !tok.Valid || claims.Issuer != access {
		t.Fatalf("token: %v %+v", err, claims)
	}
	if claims.NotBefore.Time != now.Add(-5*time.Second) || claims.ExpiresAt.Time != now.Add(30*time.Minute) {
		t.Errorf("nbf %v exp %v, now %v", claims.NotBefore.Time, claims.ExpiresAt.Time, now)
	}
}

// Failures are typed by Kling's error code, and a create is never retried by the adapter.
func TestFailuresAreTypedByCodeAndCreatesNeverRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		status int
		header string
		body   string
		want   error
		after  time.Duration
	}{
		{"a parameter refusal is permanent", 400, "", `{"code":1201,"message":"raw upstream text"}`, provider.ErrPermanent, 0},
		{"a content refusal is permanent", 400, "", `{"code":1301,"message":"raw upstream text"}`, provider.ErrPermanent, 0},
		{"an expired token waits for the operator", 401, "", `{"code":1004,"message":"raw"}`, provider.ErrAccount, 0},
		{"a used-up resource pack waits for the operator", 429, "", `{"code":1102,"message":"raw"}`, provider.ErrAccount, 0},
		{"too fast with Retry-After keeps it", 429, "7", `{"code":1302,"message":"raw"}`, provider.ErrTransient, 7 * time.Second},
		{"over concurrency without Retry-After is transient", 429, "", `{"code":1303,"message":"raw"}`, provider.ErrTransient, 0},
		{"a server error is transient", 503, "", `{"code":5001,"message":"raw"}`, provider.ErrTransient, 0},
		{"a 502 page is transient", 502, "", `<html>bad gateway</html>`, provider.ErrTransient, 0},
		{"a cut answer is transient", 200, "", `{"code":0,"data":{"task_id":`, provider.ErrTransient, 0},
		{"a non-zero code in a 200 is typed too", 200, "", `{"code":1301,"message":"raw"}`, provider.ErrPermanent, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var creates atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				creates.Add(1)
				if tt.header != "" {
					w.Header().Set("Retry-After", tt.header)
				}
				w.WriteHeader(tt.status)
				_, _ = io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c, err := kling.New(kling.Config{BaseURL: srv.URL, AccessKey: access, SecretKey: secret})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "kling-v2-1", Prompt: "p"})
			if !errors.Is(err, tt.want) || provider.RetryDelay(err) != tt.after {
				t.Errorf("error %v (after %v), want %v after %v", err, provider.RetryDelay(err), tt.want, tt.after)
			}
			var pe *provider.Error
			if errors.As(err, &pe) && strings.Contains(pe.Message, "raw") {
				t.Errorf("the upstream's own message reached the public one: %q", pe.Message)
			}
			if creates.Load() != 1 {
				t.Errorf("%d creates for one submit", creates.Load())
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the secret is in an error: %v", err)
			}
		})
	}
}

func TestPollMapsEveryStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		data   string
		status provider.Status
		msg    string
	}{
		{`{"task_id":"1","task_status":"submitted"}`, provider.StatusQueued, ""},
		{`{"task_id":"1","task_status":"processing"}`, provider.StatusRunning, ""},
		{`{"task_id":"1","task_status":"succeed","task_result":{"videos":[{"id":"v","url":"https://cdn.example.com/v.mp4","duration":"5.1"}]}}`, provider.StatusSucceeded, ""},
		{`{"task_id":"1","task_status":"failed","task_status_msg":"Failure to pass the risk control system"}`, provider.StatusFailed, "The upstream declined to generate this content."},
		{`{"task_id":"1","task_status":"failed","task_status_msg":"internal error"}`, provider.StatusFailed, "The video could not be generated."},
	}
	for _, tt := range tests {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/v1/videos/image2video/1" {
				t.Errorf("read %s", r.URL.Path)
			}
			_, _ = io.WriteString(w, `{"code":0,"message":"SUCCEED","data":`+tt.data+`}`)
		}))
		c, _ := kling.New(kling.Config{BaseURL: srv.URL, AccessKey: access, SecretKey: secret})
		job, err := c.PollGeneration(t.Context(), "image2video/1")
		srv.Close()
		if err != nil || job.Status != tt.status || job.ErrorMessage != tt.msg {
			t.Errorf("%s: %+v %v", tt.data, job, err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"code":0,"data":{"task_id":"1","task_status":"succeed","task_result":{"videos":[]}}}`)
	}))
	defer srv.Close()
	c, _ := kling.New(kling.Config{BaseURL: srv.URL, AccessKey: access, SecretKey: secret})
	if _, err := c.PollGeneration(t.Context(), "text2video/1"); !errors.Is(err, provider.ErrTransient) {
		t.Errorf("success without a video: %v, want transient", err)
	}
	if _, err := c.PollGeneration(t.Context(), "1"); !errors.Is(err, provider.ErrUnknownJob) {
		t.Errorf("a job id without its endpoint: %v", err)
	}
}

func TestAnAccountNeedsBothKeys(t *testing.T) {
	t.Parallel()
	for _, cfg := range []kling.Config{{BaseURL: "https://api.example.com", AccessKey: access}, {BaseURL: "https://api.example.com", SecretKey: secret}} {
		if _, err := kling.New(cfg); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
