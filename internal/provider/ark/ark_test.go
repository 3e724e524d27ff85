package ark

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/provider"
)

const testKey = "sk-test-0123456789"

// fakeArk is an Ark API written from its documented wire format: it checks every request
// (the Bearer key, the JSON fields and their types, the content roles) and answers what the
// test scripts, counting creates.
type fakeArk struct {
	t       *testing.T
	creates atomic.Int64
	mu      sync.Mutex
	last    map[string]any
	create  func(w http.ResponseWriter)            // nil: 200 with an id
	get     func(w http.ResponseWriter, id string) // nil: succeeded
}

func (f *fakeArk) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Header.Get("Authorization") != "Bearer "+testKey {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"error":{"code":"AuthenticationError","message":"bad key"}}`)
		return
	}
	switch {
	case r.Method == "POST" && r.URL.Path == "/api/v3/contents/generations/tasks":
		f.creates.Add(1)
		var body map[string]any
		if r.Header.Get("Content-Type") != "application/json" || json.NewDecoder(r.Body).Decode(&body) != nil {
			f.t.Errorf("create body is not JSON")
		}
		f.check(body)
		f.mu.Lock()
		f.last = body
		f.mu.Unlock()
		if f.create != nil {
			f.create(w)
			return
		}
		_, _ = io.WriteString(w, `{"id":"cgt-1"}`)
	case r.Method == "GET" && strings.HasPrefix(r.URL.Path, "/api/v3/contents/generations/tasks/"):
		id := strings.TrimPrefix(r.URL.Path, "/api/v3/contents/generations/tasks/")
		if f.get != nil {
			f.get(w, id)
			return
		}
		_, _ = io.WriteString(w, `{"id":"`+id+`","status":"succeeded","content":{"video_url":"https://cdn.example.com/v.mp4"},"usage":{"completion_tokens":38430}}`)
	case r.Method == "GET" && r.URL.Path == "/api/v3/contents/generations/tasks":
		_, _ = io.WriteString(w, `{"total":0,"items":[]}`)
	default:
		f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	}
}

// check enforces the wire format: model a string, content items of known types with the
// matching URL object and a known role, parameters of their documented types.
func (f *fakeArk) check(b map[string]any) {
	if m, ok := b["model"].(string); !ok || m == "" {
		f.t.Errorf("model %v", b["model"])
	}
	items, ok := b["content"].([]any)
	if !ok || len(items) == 0 {
		f.t.Errorf("content %v", b["content"])
	}
	roles := map[string]bool{"first_frame": true, "last_frame": true, "reference_image": true, "reference_video": true, "reference_audio": true}
	for _, it := range items {
		m := it.(map[string]any)
		switch typ := m["type"]; typ {
		case "text":
			if _, ok := m["text"].(string); !ok {
				f.t.Errorf("text item %v", m)
			}
		case "image_url", "video_url", "audio_url":
			ref, ok := m[typ.(string)].(map[string]any)
			if !ok || ref["url"] == "" || !roles[m["role"].(string)] {
				f.t.Errorf("media item %v", m)
			}
		default:
			f.t.Errorf("item type %v", typ)
		}
	}
	for k, want := range map[string]string{"ratio": "string", "resolution": "string", "duration": "number", "seed": "number", "watermark": "bool", "generate_audio": "bool"} {
		v, ok := b[k]
		if !ok {
			continue
		}
		got := map[bool]string{true: want}[(want == "string" && isString(v)) || (want == "number" && isNumber(v)) || (want == "bool" && isBool(v))]
		if got == "" {
			f.t.Errorf("%s = %v, want a %s", k, v, want)
		}
	}
}

func isString(v any) bool { _, ok := v.(string); return ok }
func isNumber(v any) bool { _, ok := v.(float64); return ok }
func isBool(v any) bool   { _, ok := v.(bool); return ok }

func newClient(t *testing.T, f *fakeArk) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c, err := New(Config{BaseURL: srv.URL + "/api/v3", APIKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestSubmitSendsTheDocumentedFieldsOnce(t *testing.T) {
	t.Parallel()
	f := &fakeArk{t: t}
	c := newClient(t, f)
	audio, seed := true, int64(7)
	id, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "seedance-1-0-pro", Prompt: "a red kite",
		Resolution: "720p", Ratio: "16:9", Duration: 5, GenerateAudio: &audio, Seed: &seed,
		Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://cdn.example.com/a.png"}}}})
	if err != nil || id != "cgt-1" {
		t.Fatalf("submit: %q %v", id, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	b, _ := json.Marshal(f.last)
	want := `{"content":[{"text":"a red kite","type":"text"},{"image_url":{"url":"https://cdn.example.com/a.png"},"role":"first_frame","type":"image_url"}],"duration":5,"generate_audio":true,"model":"seedance-1-0-pro","ratio":"16:9","resolution":"720p","seed":7}`
	if string(b) != want {
		t.Errorf("create body\n%s\nwant\n%s", b, want)
	}
}

func TestModelDefaultDurationIsLeftOut(t *testing.T) {
	t.Parallel()
	b, _ := json.Marshal(request(provider.GenerateRequest{Model: "m", Prompt: "p", Duration: -1}, ""))
	if strings.Contains(string(b), "duration") {
		t.Errorf("duration -1 sent: %s", b)
	}
}

func TestFailuresAreTypedAndCreatesNeverRetried(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		status    int
		body      string
		permanent bool
		code      string
	}{
		{"a parameter refusal is permanent", 400, `{"error":{"code":"InvalidParameter","message":"raw upstream text"}}`, true, "video_generation_failed"},
		{"the task type mismatch keeps its public code", 400, `{"error":{"code":"InvalidParameter.TaskTypeMismatch","message":"x"}}`, true, "InvalidParameter.TaskTypeMismatch"},
		{"a content refusal is permanent", 400, `{"error":{"code":"InputTextSensitiveContentDetected","message":"x"}}`, true, "video_generation_failed"},
		{"rate limiting passes", 429, `{"error":{"code":"RateLimitExceeded"}}`, false, ""},
		{"a server error passes", 503, `oops`, false, ""},
		{"a broken key waits for the operator", 401, `{"error":{"code":"AuthenticationError"}}`, false, "account"},
		{"a malformed answer passes", 200, `{"id":`, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := &fakeArk{t: t, create: func(w http.ResponseWriter) { w.WriteHeader(tt.status); _, _ = io.WriteString(w, tt.body) }}
			c := newClient(t, f)
			_, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "m", Prompt: "p"})
			var pe *provider.Error
			switch {
			case tt.permanent && (!errors.As(err, &pe) || !errors.Is(err, provider.ErrPermanent) || pe.Code != tt.code):
				t.Errorf("error %v, want permanent %s", err, tt.code)
			case tt.permanent && strings.Contains(pe.Message, "raw upstream text"):
				t.Errorf("the upstream's own message reached the public one: %q", pe.Message)
			case tt.code == "account" && !errors.Is(err, provider.ErrAccount):
				t.Errorf("error %v, want the account refused", err)
			case !tt.permanent && tt.code == "" && (err == nil || !errors.Is(err, provider.ErrTransient)):
				t.Errorf("error %v, want transient", err)
			}
			if n := f.creates.Load(); n != 1 {
				t.Errorf("%d creates for one submit; a create is never retried by the adapter", n)
			}
			if err != nil && strings.Contains(err.Error(), testKey) {
				t.Errorf("the key is in an error: %v", err)
			}
		})
	}
}

func TestPollMapsEveryStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		body   string
		status provider.Status
		tokens int64
		code   string
	}{
		{`{"id":"x","status":"queued"}`, provider.StatusQueued, 0, ""},
		{`{"id":"x","status":"running"}`, provider.StatusRunning, 0, ""},
		{`{"id":"x","status":"succeeded","content":{"video_url":"https://cdn.example.com/v.mp4"},"usage":{"completion_tokens":38430}}`, provider.StatusSucceeded, 38430, ""},
		{`{"id":"x","status":"failed","error":{"code":"OutputVideoSensitiveContentDetected","message":"raw"}}`, provider.StatusFailed, 0, "video_generation_failed"},
		{`{"id":"x","status":"cancelled"}`, provider.StatusFailed, 0, "video_generation_failed"},
		{`{"id":"x","status":"expired"}`, provider.StatusExpired, 0, "video_generation_failed"},
	}
	for _, tt := range tests {
		f := &fakeArk{t: t, get: func(w http.ResponseWriter, _ string) { _, _ = io.WriteString(w, tt.body) }}
		job, err := newClient(t, f).PollGeneration(t.Context(), "x")
		if err != nil || job.Status != tt.status || job.ErrorCode != tt.code || (tt.tokens > 0 && (job.Output == nil || job.Output.CompletionTokens != tt.tokens)) {
			t.Errorf("%s: %+v %v", tt.body, job, err)
		}
		if strings.Contains(job.ErrorMessage, "raw") {
			t.Errorf("%s: the upstream's message reached the public one", tt.body)
		}
	}
	f := &fakeArk{t: t, get: func(w http.ResponseWriter, _ string) { _, _ = io.WriteString(w, `{"id":"x","status":"succeeded"}`) }}
	if _, err := newClient(t, f).PollGeneration(t.Context(), "x"); !errors.Is(err, provider.ErrTransient) {
		t.Errorf("success without a video: %v, want transient", err)
	}
}

func TestCheckIsOneAuthenticatedCall(t *testing.T) {
	t.Parallel()
	f := &fakeArk{t: t}
	if err := newClient(t, f).Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(f)
	defer srv.Close()
	bad, _ := New(Config{BaseURL: srv.URL + "/api/v3", APIKey: "sk-wrong"})
	if err := bad.Check(t.Context()); !errors.Is(err, provider.ErrAccount) || strings.Contains(err.Error(), "sk-wrong") {
		t.Errorf("a wrong key: %v", err)
	}
}

// A call whose answer does not come within the client's timeout (a slow body) is transient.
func TestASlowAnswerIsTransient(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"id":"x","sta`)
		w.(http.Flusher).Flush()
		<-release // the rest of the body never comes in time
	}))
	defer srv.Close()
	defer close(release)
	c, err := New(Config{BaseURL: srv.URL + "/api/v3", APIKey: testKey, HTTP: &http.Client{Timeout: 200 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PollGeneration(t.Context(), "x"); !errors.Is(err, provider.ErrTransient) {
		t.Errorf("slow answer: %v, want transient", err)
	}
}

// An account's request rate spaces the client's calls.
func TestRequestRateSpacesCalls(t *testing.T) {
	t.Parallel()
	f := &fakeArk{t: t}
	srv := httptest.NewServer(f)
	defer srv.Close()
	c, err := New(Config{BaseURL: srv.URL + "/api/v3", APIKey: testKey, RequestsPerSecond: 20})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for range 5 {
		if _, err := c.PollGeneration(t.Context(), "x"); err != nil {
			t.Fatal(err)
		}
	}
	if d := time.Since(start); d < 190*time.Millisecond {
		t.Errorf("5 calls at 20/s took %v, want at least 200 ms", d)
	}
}

func TestLibraryAssetsGoAsAssetIDsOnlyToTheirOwnAccount(t *testing.T) {
	t.Parallel()
	in := provider.Input{Type: "image_url", Role: "reference_image", Source: provider.Source{URL: "https://svc.example/files/assets/x.png?sig=1",
		Library: "ark-lib", LibraryID: "asset-20261129-abc"}}
	for _, tc := range []struct {
		name, library, want string
	}{
		{"the account of the library sends the vendor id", "ark-lib", "asset://asset-20261129-abc"},
		{"an account of another library sends the link", "other-lib", "https://svc.example/files/assets/x.png?sig=1"},
		{"an account without a library sends the link", "", "https://svc.example/files/assets/x.png?sig=1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := request(provider.GenerateRequest{Model: "m", Prompt: "p", Inputs: []provider.Input{in}}, tc.library)
			if got := body.Content[1].ImageURL.URL; got != tc.want {
				t.Errorf("url %q, want %q", got, tc.want)
			}
		})
	}
}
