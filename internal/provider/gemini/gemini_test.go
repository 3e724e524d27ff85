package gemini

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/gemini/geminifake"
)

func client(t *testing.T, s *geminifake.Server, key string) *Client {
	t.Helper()
	c, err := New(Config{BaseURL: s.Base(), APIKey: key, HTTP: s.TLSClient(), ReadImage: func(ctx context.Context, src provider.Source, max int64) ([]byte, error) {
		res, err := http.Get(src.URL)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		return io.ReadAll(provider.Capped(res.Body, max))
	}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A text-and-first-frame request becomes the SDK's body (the frame inline as base64, one
// sample), its operation is polled to the end and the video is read with the key.
func TestGenerationRunsToADownloadedVideo(t *testing.T) {
	s := geminifake.Start(geminifake.Config{Key: "k", Polls: 1})
	defer s.Close()
	frame := []byte("\x89PNG\r\n\x1a\nframe")
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(frame)
	}))
	defer img.Close()
	c := client(t, s, "k")
	ctx := t.Context()
	id, err := c.SubmitGeneration(ctx, provider.GenerateRequest{Model: "veo-3.0-generate-001", Prompt: "kite", Resolution: "1080p", Ratio: "16:9", Duration: 8,
		Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: img.URL}}}})
	if err != nil {
		t.Fatal(err)
	}
	job, err := c.PollGeneration(ctx, id)
	if err != nil || job.Status != provider.StatusRunning {
		t.Fatalf("first poll %+v %v, want running", job, err)
	}
	job, err = c.PollGeneration(ctx, id)
	if err != nil || job.Status != provider.StatusSucceeded || job.Output == nil || job.Output.Source.Open == nil {
		t.Fatalf("second poll %+v %v, want succeeded", job, err)
	}
	rc, err := job.Output.Source.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "fake mp4 "+id {
		t.Fatalf("downloaded %q", data)
	}
	body := s.Body("kite")
	in := body["instances"].([]any)[0].(map[string]any)
	im := in["image"].(map[string]any)
	p := body["parameters"].(map[string]any)
	if im["bytesBase64Encoded"] != base64.StdEncoding.EncodeToString(frame) || im["mimeType"] != "image/png" ||
		p["aspectRatio"] != "16:9" || p["resolution"] != "1080p" || p["durationSeconds"] != 8.0 || p["sampleCount"] != 1.0 {
		t.Fatalf("create body %v", body)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
}

// Each failure of a call is the pipeline's kind of error.
func TestFailuresMapToThePipelinesKinds(t *testing.T) {
	req := provider.GenerateRequest{Model: "veo-2.0-generate-001", Prompt: "p", Duration: 5}
	for _, tc := range []struct {
		name  string
		cfg   geminifake.Config
		key   string
		want  error
		after time.Duration
		sent  bool // the request reached the API (not ErrNotSent)
	}{
		{"a refused key is the account's", geminifake.Config{Key: "k"}, "bad", provider.ErrAccount, 0, true},
		{"a 429 with Retry-After waits that long", geminifake.Config{Key: "k", RateLimit: true, RetryAfterSecs: 7}, "k", provider.ErrTransient, 7 * time.Second, true},
		{"a 429 without Retry-After is transient", geminifake.Config{Key: "k", RateLimit: true}, "k", provider.ErrTransient, 0, true},
		{"a lost answer is transient and was sent", geminifake.Config{Key: "k", LoseAnswers: true}, "k", provider.ErrTransient, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := geminifake.Start(tc.cfg)
			defer s.Close()
			_, err := client(t, s, tc.key).SubmitGeneration(t.Context(), req)
			if !errors.Is(err, tc.want) || provider.RetryDelay(err) != tc.after || errors.Is(err, provider.ErrNotSent) == tc.sent {
				t.Fatalf("err %v (delay %v), want %v after %v", err, provider.RetryDelay(err), tc.want, tc.after)
			}
		})
	}
}

// A lost create cannot be found (no idempotency key, no list of operations): the finder
// answers ErrOutcomeUnknown and the client is a BlindCreator, so the task is never created
// twice.
func TestALostCreateIsAnOutcomeUnknownNeverASecondJob(t *testing.T) {
	s := geminifake.Start(geminifake.Config{Key: "k", LoseAnswers: true})
	defer s.Close()
	c := client(t, s, "k")
	req := provider.GenerateRequest{Model: "veo-2.0-generate-001", Prompt: "lost", Duration: 5}
	if _, err := c.SubmitGeneration(t.Context(), req); err == nil {
		t.Fatal("a lost answer succeeded")
	}
	var g provider.Generator = c
	if _, ok := g.(provider.BlindCreator); !ok {
		t.Fatal("not a BlindCreator")
	}
	if _, found, err := c.FindGeneration(t.Context(), req, time.Now()); found || !errors.Is(err, provider.ErrOutcomeUnknown) {
		t.Fatalf("find: %v %v", found, err)
	}
	if s.JobsFor("lost") != 1 {
		t.Fatalf("jobs %d", s.JobsFor("lost"))
	}
}

// How operations end: refused by the safety filter or failed → failed (refunded), never done
// → still running, a garbage answer → transient, an unknown operation → unknown job.
func TestOperationEndsMapToJobs(t *testing.T) {
	s := geminifake.Start(geminifake.Config{Key: "k", Polls: 1, End: func(p string) string { return p }})
	defer s.Close()
	c := client(t, s, "k")
	poll := func(prompt string) (provider.Job, error) {
		id, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "veo-3.0-fast-generate-001", Prompt: prompt, Resolution: "720p", Ratio: "9:16", Duration: 8})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.PollGeneration(t.Context(), id)
		return c.PollGeneration(t.Context(), id)
	}
	for _, prompt := range []string{geminifake.EndRefuse, geminifake.EndFail} {
		if j, err := poll(prompt); err != nil || j.Status != provider.StatusFailed || j.ErrorCode != "video_generation_failed" {
			t.Fatalf("%s: %+v %v", prompt, j, err)
		}
	}
	if j, err := poll(geminifake.EndNever); err != nil || j.Status != provider.StatusRunning {
		t.Fatalf("never: %+v %v", j, err)
	}
	if _, err := c.PollGeneration(t.Context(), "models/veo-3.0-generate-001/operations/nope"); !errors.Is(err, provider.ErrUnknownJob) {
		t.Fatalf("unknown operation: %v", err)
	}
	for _, bad := range []string{"files/x", "models/x/operations/../../files", "models/x/operations/a?b"} {
		if _, err := c.PollGeneration(t.Context(), bad); !errors.Is(err, provider.ErrUnknownJob) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	g := geminifake.Start(geminifake.Config{Key: "k", Garbage: true})
	defer g.Close()
	if _, err := client(t, g, "k").PollGeneration(t.Context(), "models/veo-3.0-generate-001/operations/op1"); !errors.Is(err, provider.ErrTransient) {
		t.Fatalf("garbage: %v", err)
	}
}

// The key is sent only to the account's own API root: a video link elsewhere is not read
// with it.
func TestTheKeyNeverLeavesTheAPIRoot(t *testing.T) {
	var got string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Get("x-goog-api-key") }))
	defer other.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"name":"models/m/operations/o","done":true,"response":{"generateVideoResponse":{"generatedSamples":[{"video":{"uri":"`+other.URL+`/v1beta/files/a:download?alt=media"}}]}}}`)
	}))
	defer api.Close()
	c, err := New(Config{BaseURL: api.URL, APIKey: "secret"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.PollGeneration(t.Context(), "models/m/operations/o"); !errors.Is(err, provider.ErrTransient) || got != "" {
		t.Fatalf("err %v, key sent %q", err, got)
	}
}

// upstream check passes on a good key (the API's 404 for an operation no job has) and fails
// on a refused one.
func TestCheckProvesTheKey(t *testing.T) {
	s := geminifake.Start(geminifake.Config{Key: "k"})
	defer s.Close()
	if err := client(t, s, "k").Check(t.Context()); err != nil {
		t.Fatalf("good key: %v", err)
	}
	if err := client(t, s, "bad").Check(t.Context()); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("bad key: %v", err)
	}
	if s.Jobs() != 0 {
		t.Fatal("check made a job")
	}
}

// A first frame too large for the API's request, one the fetch policy refuses, or one that is
// not an image fails the task for good before any create: no job, nothing to retry.
func TestAFrameThatCannotBeSentFailsBeforeAnyCreate(t *testing.T) {
	s := geminifake.Start(geminifake.Config{Key: "k"})
	defer s.Close()
	refused := &provider.Error{Code: "InvalidParameter", Message: "not allowed", Kind: provider.ErrPermanent}
	for _, tc := range []struct {
		name string
		read func(context.Context, provider.Source, int64) ([]byte, error)
	}{
		{"too large", func(_ context.Context, _ provider.Source, max int64) ([]byte, error) {
			return io.ReadAll(provider.Capped(strings.NewReader(strings.Repeat("x", int(max)+1)), max))
		}},
		{"refused by the fetch policy", func(context.Context, provider.Source, int64) ([]byte, error) { return nil, refused }},
		{"not an image", func(context.Context, provider.Source, int64) ([]byte, error) { return []byte("<html>"), nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := New(Config{BaseURL: s.Base(), APIKey: "k", HTTP: s.TLSClient(), ReadImage: tc.read})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "veo-3.0-generate-001", Prompt: tc.name, Duration: 8,
				Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://x/f.png"}}}})
			var pe *provider.Error
			if !errors.As(err, &pe) || !errors.Is(err, provider.ErrPermanent) {
				t.Fatalf("err %v, want a permanent provider.Error", err)
			}
			if s.Jobs() != 0 {
				t.Fatal("a create was made")
			}
		})
	}
}
