package vertex

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
	"mediagen/internal/provider/vertex/vertexfake"
)

func client(t *testing.T, s *vertexfake.Server, key []byte) *Client {
	t.Helper()
	c, err := New(Config{BaseURL: s.Base(), Project: vertexfake.Project, Location: vertexfake.Location, Credentials: key, HTTP: s.TLSClient(),
		ReadImage: func(ctx context.Context, src provider.Source, max int64) ([]byte, error) {
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

// A text-and-first-frame request becomes the reference's body (the frame inline as base64,
// one sample, generateAudio for Veo 3) sent with a token the key file's token endpoint gave,
// its operation is polled with fetchPredictOperation to the end and the video is read from
// the operation's inline bytes.
func TestGenerationRunsToAnInlineVideo(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{Polls: 1})
	defer s.Close()
	frame := []byte("\x89PNG\r\n\x1a\nframe")
	img := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(frame)
	}))
	defer img.Close()
	c := client(t, s, s.KeyJSON())
	ctx := t.Context()
	id, err := c.SubmitGeneration(ctx, provider.GenerateRequest{Model: "veo-3.0-generate-001", Prompt: "kite", Resolution: "1080p", Ratio: "16:9", Duration: 8,
		Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: img.URL}}}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(id, "projects/"+vertexfake.Project+"/locations/"+vertexfake.Location+"/publishers/google/models/veo-3.0-generate-001/operations/") {
		t.Fatalf("job id %q", id)
	}
	job, err := c.PollGeneration(ctx, id)
	if err != nil || job.Status != provider.StatusRunning {
		t.Fatalf("first poll %+v %v, want running", job, err)
	}
	job, err = c.PollGeneration(ctx, id)
	if err != nil || job.Status != provider.StatusSucceeded || job.Output == nil || job.Output.Source.Open == nil || job.Output.ContentType != "video/mp4" {
		t.Fatalf("second poll %+v %v, want succeeded", job, err)
	}
	rc, err := job.Output.Source.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "fake mp4 "+id {
		t.Fatalf("video %q", data)
	}
	body := s.Body("kite")
	in := body["instances"].([]any)[0].(map[string]any)
	im := in["image"].(map[string]any)
	p := body["parameters"].(map[string]any)
	if im["bytesBase64Encoded"] != base64.StdEncoding.EncodeToString(frame) || im["mimeType"] != "image/png" ||
		p["aspectRatio"] != "16:9" || p["resolution"] != "1080p" || p["durationSeconds"] != 8.0 || p["sampleCount"] != 1.0 || p["generateAudio"] != true {
		t.Fatalf("create body %v", body)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
	if c.TokenFetches() != 1 || s.TokensIssued() != 1 {
		t.Fatalf("tokens fetched %d issued %d, want one token for three calls", c.TokenFetches(), s.TokensIssued())
	}
}

// generate_audio false on Veo 3 is sent as generateAudio false; Veo 2 is never sent the
// parameter (it has no sound).
func TestSoundIsSentOnlyToVeo3(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{})
	defer s.Close()
	c := client(t, s, s.KeyJSON())
	off := false
	if _, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "veo-3.0-fast-generate-001", Prompt: "quiet", Duration: 8, GenerateAudio: &off}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "veo-2.0-generate-001", Prompt: "veo2", Duration: 5}); err != nil {
		t.Fatal(err)
	}
	if p := s.Body("quiet")["parameters"].(map[string]any); p["generateAudio"] != false {
		t.Fatalf("veo 3 parameters %v", p)
	}
	if p := s.Body("veo2")["parameters"].(map[string]any); p["generateAudio"] != nil {
		t.Fatalf("veo 2 parameters %v", p)
	}
}

// A token the API refuses before its expiry (revoked, or expired early) is dropped and a new
// one fetched once: the call succeeds and the create makes one job.
func TestARefusedTokenIsRefreshedOnce(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{})
	defer s.Close()
	c := client(t, s, s.KeyJSON())
	if err := c.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	s.ExpireTokens()
	if _, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "veo-2.0-generate-001", Prompt: "again", Duration: 5}); err != nil {
		t.Fatalf("create after the token was revoked: %v", err)
	}
	if s.TokensIssued() != 2 || s.JobsFor("again") != 1 || s.Refused() != 1 {
		t.Fatalf("tokens %d jobs %d refused %d, want 2, 1, 1", s.TokensIssued(), s.JobsFor("again"), s.Refused())
	}
}

// A token is kept until shortly before it expires, then a new one is fetched.
func TestATokenIsCachedUntilShortlyBeforeItExpires(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{TokenSeconds: 3600})
	defer s.Close()
	c := client(t, s, s.KeyJSON())
	now := time.Now()
	c.tokens.now = func() time.Time { return now }
	for range 3 {
		if err := c.Check(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	if s.TokensIssued() != 1 {
		t.Fatalf("tokens issued %d for three calls within the hour", s.TokensIssued())
	}
	now = now.Add(time.Hour - expireEarly + time.Second)
	if err := c.Check(t.Context()); err != nil {
		t.Fatal(err)
	}
	if s.TokensIssued() != 2 {
		t.Fatalf("tokens issued %d, want a new one near the expiry", s.TokensIssued())
	}
}

// Each failure is the pipeline's kind of error, and the refusals of the key or the rate made
// no job.
func TestFailuresMapToThePipelinesKinds(t *testing.T) {
	req := provider.GenerateRequest{Model: "veo-2.0-generate-001", Prompt: "p", Duration: 5}
	for _, tc := range []struct {
		name  string
		cfg   vertexfake.Config
		other bool // a key the token endpoint does not know
		want  error
		after time.Duration
		sent  bool // the request reached the API (not ErrNotSent)
	}{
		{"a key the token endpoint refuses is the account's, never sent", vertexfake.Config{}, true, provider.ErrAccount, 0, false},
		{"a project the account may not use (403) is the account's", vertexfake.Config{Forbid: true}, false, provider.ErrAccount, 0, true},
		{"a 429 with Retry-After waits that long", vertexfake.Config{RateLimit: true, RetryAfterSecs: 7}, false, provider.ErrTransient, 7 * time.Second, true},
		{"a 429 without Retry-After is transient", vertexfake.Config{RateLimit: true}, false, provider.ErrTransient, 0, true},
		{"a lost answer is transient and was sent", vertexfake.Config{LoseAnswers: true}, false, provider.ErrTransient, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := vertexfake.Start(tc.cfg)
			defer s.Close()
			key := s.KeyJSON()
			if tc.other {
				key = s.OtherKeyJSON()
			}
			_, err := client(t, s, key).SubmitGeneration(t.Context(), req)
			if !errors.Is(err, tc.want) || provider.RetryDelay(err) != tc.after || errors.Is(err, provider.ErrNotSent) == tc.sent {
				t.Fatalf("err %v (delay %v), want %v after %v", err, provider.RetryDelay(err), tc.want, tc.after)
			}
			if strings.Contains(err.Error(), "PRIVATE KEY") || strings.Contains(err.Error(), "ya29.") {
				t.Fatalf("the error quotes a secret: %v", err)
			}
		})
	}
}

// A token endpoint that is down is transient and nothing was sent to the API.
func TestAnUnreachableTokenEndpointIsTransientAndNotSent(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{})
	defer s.Close()
	down := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) }))
	defer down.Close()
	c, err := New(Config{BaseURL: s.Base(), Project: vertexfake.Project, Location: vertexfake.Location, Credentials: s.KeyJSON(), TokenURL: down.URL + "/token", HTTP: down.Client()})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "veo-2.0-generate-001", Prompt: "p", Duration: 5})
	if !errors.Is(err, provider.ErrTransient) || !errors.Is(err, provider.ErrNotSent) || s.Jobs() != 0 {
		t.Fatalf("err %v jobs %d", err, s.Jobs())
	}
}

// A lost create cannot be found (no idempotency key, no list of operations): the finder
// answers ErrOutcomeUnknown and the client is a BlindCreator, so the task is never created
// twice.
func TestALostCreateIsAnOutcomeUnknownNeverASecondJob(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{LoseAnswers: true})
	defer s.Close()
	c := client(t, s, s.KeyJSON())
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
// → still running, a garbage answer → transient, an unknown or foreign operation → unknown
// job.
func TestOperationEndsMapToJobs(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{Polls: 1, End: func(p string) string { return p }})
	defer s.Close()
	c := client(t, s, s.KeyJSON())
	poll := func(prompt string) (provider.Job, error) {
		id, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "veo-3.0-fast-generate-001", Prompt: prompt, Resolution: "720p", Ratio: "9:16", Duration: 8})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = c.PollGeneration(t.Context(), id)
		return c.PollGeneration(t.Context(), id)
	}
	for _, prompt := range []string{vertexfake.EndRefuse, vertexfake.EndFail} {
		if j, err := poll(prompt); err != nil || j.Status != provider.StatusFailed || j.ErrorCode != "video_generation_failed" {
			t.Fatalf("%s: %+v %v", prompt, j, err)
		}
	}
	if j, err := poll(vertexfake.EndNever); err != nil || j.Status != provider.StatusRunning {
		t.Fatalf("never: %+v %v", j, err)
	}
	base := "projects/" + vertexfake.Project + "/locations/" + vertexfake.Location + "/publishers/google/models/"
	if _, err := c.PollGeneration(t.Context(), base+"veo-3.0-generate-001/operations/nope"); !errors.Is(err, provider.ErrUnknownJob) {
		t.Fatalf("unknown operation: %v", err)
	}
	for _, bad := range []string{"files/x", base + "x/operations/../../files", base + "x/operations/a?b", "projects/other/locations/us-central1/publishers/google/models/x/operations/1",
		base + "../operations/1"} {
		if _, err := c.PollGeneration(t.Context(), bad); !errors.Is(err, provider.ErrUnknownJob) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
	g := vertexfake.Start(vertexfake.Config{Garbage: true})
	defer g.Close()
	if _, err := client(t, g, g.KeyJSON()).PollGeneration(t.Context(), base+"veo-3.0-generate-001/operations/1"); !errors.Is(err, provider.ErrTransient) {
		t.Fatalf("garbage: %v", err)
	}
}

// upstream check fetches a token and reads an operation (the API's 404 passes); a key the
// token endpoint refuses, or a project the account may not use, fails it.
func TestCheckProvesTheKeyAndTheProject(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{})
	defer s.Close()
	if err := client(t, s, s.KeyJSON()).Check(t.Context()); err != nil {
		t.Fatalf("good key: %v", err)
	}
	if err := client(t, s, s.OtherKeyJSON()).Check(t.Context()); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("unknown key: %v", err)
	}
	f := vertexfake.Start(vertexfake.Config{Forbid: true})
	defer f.Close()
	if err := client(t, f, f.KeyJSON()).Check(t.Context()); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("forbidden project: %v", err)
	}
	if s.Jobs() != 0 || f.Jobs() != 0 {
		t.Fatal("check made a job")
	}
}

// Credentials that are not a service account's key, a project or location that is not an
// id, or a token URL that is not https stop the client at start, and the error quotes
// nothing of the file.
func TestBadCredentialsStopTheClientWithoutQuotingThem(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{})
	defer s.Close()
	for _, tc := range []struct {
		name, project, tokenURL string
		creds                   []byte
	}{
		{"not JSON", vertexfake.Project, "", []byte("secret-not-json")},
		{"an API key", vertexfake.Project, "", []byte(`{"type":"authorized_user","client_secret":"secret-x"}`)},
		{"a broken private key", vertexfake.Project, "", []byte(`{"type":"service_account","client_email":"a@b","private_key":"secret-pem"}`)},
		{"a project with a slash", "p/../x", "", s.KeyJSON()},
		{"an http token URL", vertexfake.Project, "http://127.0.0.1/token", s.KeyJSON()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Config{BaseURL: s.Base(), Project: tc.project, Location: vertexfake.Location, Credentials: tc.creds, TokenURL: tc.tokenURL})
			if err == nil || strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), "PRIVATE") {
				t.Fatalf("err %v", err)
			}
		})
	}
}

// A first frame that is not an image fails the task for good before any create.
func TestAFrameThatCannotBeSentFailsBeforeAnyCreate(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{})
	defer s.Close()
	c, err := New(Config{BaseURL: s.Base(), Project: vertexfake.Project, Location: vertexfake.Location, Credentials: s.KeyJSON(), HTTP: s.TLSClient(),
		ReadImage: func(context.Context, provider.Source, int64) ([]byte, error) { return []byte("<html>"), nil }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "veo-3.0-generate-001", Prompt: "p", Duration: 8,
		Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://x/f.png"}}}})
	var pe *provider.Error
	if !errors.As(err, &pe) || !errors.Is(err, provider.ErrPermanent) || s.Jobs() != 0 {
		t.Fatalf("err %v jobs %d, want a permanent provider.Error and no job", err, s.Jobs())
	}
}

// With a storage URI the create names it (storageUri), the finished operation names the
// video in the bucket (gcsUri), and the video is read from Cloud Storage's JSON API with the
// account's token; a video outside the account's bucket is not read with it: the task fails.
func TestAStorageURIsVideoIsReadFromTheBucket(t *testing.T) {
	s := vertexfake.Start(vertexfake.Config{Polls: 1})
	defer s.Close()
	c, err := New(Config{BaseURL: s.Base(), Project: vertexfake.Project, Location: vertexfake.Location, Credentials: s.KeyJSON(), HTTP: s.TLSClient(),
		StorageURI: "gs://mediagen-veo/out/", StorageURL: s.Base()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	id, err := c.SubmitGeneration(ctx, provider.GenerateRequest{Model: "veo-2.0-generate-001", Prompt: "to a bucket", Duration: 5})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.PollGeneration(ctx, id)
	job, err := c.PollGeneration(ctx, id)
	if err != nil || job.Status != provider.StatusSucceeded || job.Output == nil || job.Output.Source.Open == nil {
		t.Fatalf("poll %+v %v", job, err)
	}
	s.ExpireTokens() // the read replaces a refused token once, as the API calls do
	rc, err := job.Output.Source.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	if string(data) != "fake mp4 "+id || s.ObjectReads() != 1 || s.TokensIssued() != 2 {
		t.Fatalf("video %q, reads %d, tokens %d", data, s.ObjectReads(), s.TokensIssued())
	}
	if p := s.Body("to a bucket")["parameters"].(map[string]any); p["storageUri"] != "gs://mediagen-veo/out/" {
		t.Fatalf("parameters %v", p)
	}
	if v := s.Violations(); len(v) != 0 {
		t.Fatalf("violations %v", v)
	}
	other, err := New(Config{BaseURL: s.Base(), Project: vertexfake.Project, Location: vertexfake.Location, Credentials: s.KeyJSON(), HTTP: s.TLSClient(),
		StorageURI: "gs://another-bucket/", StorageURL: s.Base()})
	if err != nil {
		t.Fatal(err)
	}
	if job, err := other.PollGeneration(ctx, id); err != nil || job.Status != provider.StatusFailed {
		t.Fatalf("a video outside the account's bucket: %+v %v", job, err)
	}
	if _, err := New(Config{BaseURL: s.Base(), Project: vertexfake.Project, Location: vertexfake.Location, Credentials: s.KeyJSON(), StorageURI: "https://bucket/x"}); err == nil {
		t.Fatal("a storage URI that is not gs:// was accepted")
	}
}
