package openai_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/openai"
	"mediagen/internal/provider/openai/openaifake"
)

const testKey = "sk-openai-unit-5d1e"

// start runs a fake with a small clip and audio file, and a client of it.
func start(t *testing.T, cfg openaifake.Config) (*openaifake.Server, *openai.Client) {
	t.Helper()
	dir := t.TempDir()
	cfg.Key, cfg.Clip, cfg.Speech = testKey, filepath.Join(dir, "clip.mp4"), filepath.Join(dir, "speech.mp3")
	if err := os.WriteFile(cfg.Clip, []byte("mp4 bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg.Speech, []byte("mp3 bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := openaifake.Start(cfg)
	t.Cleanup(func() {
		for _, v := range f.Violations() {
			t.Errorf("wire format: %s", v)
		}
		f.Close()
	})
	return f, client(t, f, testKey)
}

func client(t *testing.T, f *openaifake.Server, key string) *openai.Client {
	t.Helper()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = f.TLS()
	c, err := openai.New(openai.Config{BaseURL: f.Base(), APIKey: key, HTTP: &http.Client{Transport: tr, Timeout: 10 * time.Second}, Voice: "nova"})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A video runs through the documented calls: the create form carries prompt, model, seconds,
// size and the first frame; polls map queued/in_progress/completed; the output streams from
// the content endpoint with the account's key.
func TestVideoRunsThroughTheDocumentedCalls(t *testing.T) {
	t.Parallel()
	f, c := start(t, openaifake.Config{Polls: 1})
	id, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{IdempotencyKey: "video_1:gen", Model: "sora-2", Prompt: "a red kite",
		Duration: 8, Width: 1280, Height: 720,
		Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://cdn.example.com/a.png"}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"prompt": "a red kite", "model": "sora-2", "seconds": "8", "size": "1280x720", "input_reference[image_url]": "https://cdn.example.com/a.png"}
	if forms := f.Forms(); len(forms) != 1 || !equal(forms[0], want) {
		t.Errorf("create forms %v, want %v", forms, want)
	}
	if f.JobsFor("video_1:gen") != 1 {
		t.Errorf("the create did not carry its Idempotency-Key")
	}
	job, err := c.PollGeneration(t.Context(), id)
	if err != nil || job.Status != provider.StatusRunning {
		t.Fatalf("first poll: %+v %v", job, err)
	}
	job, err = c.PollGeneration(t.Context(), id)
	if err != nil || job.Status != provider.StatusSucceeded || job.Output == nil || job.Output.Source.Open == nil {
		t.Fatalf("second poll: %+v %v", job, err)
	}
	rc, err := job.Output.Source.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if b, _ := io.ReadAll(rc); string(b) != "mp4 bytes" {
		t.Errorf("content %q", b)
	}
}

func equal(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A refused video fails with the contract's code and our own sentence, never the upstream's.
func TestRefusedVideoFailsWithASanitizedMessage(t *testing.T) {
	t.Parallel()
	_, c := start(t, openaifake.Config{End: func(string) string { return openaifake.EndRefuse }})
	id, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "sora-2", Prompt: "p", Duration: 4, Width: 720, Height: 1280})
	if err != nil {
		t.Fatal(err)
	}
	_, _ = c.PollGeneration(t.Context(), id)
	job, err := c.PollGeneration(t.Context(), id)
	if err != nil || job.Status != provider.StatusFailed || job.ErrorCode != "video_generation_failed" ||
		job.ErrorMessage != "The upstream declined to generate this content." {
		t.Errorf("refused video: %+v %v", job, err)
	}
}

// Failures are typed for the pipeline and a create is never retried by the adapter: a
// wrong key is the account's, a bad parameter is permanent, everything else transient.
func TestFailuresAreTypedAndCreatesNeverRetried(t *testing.T) {
	t.Parallel()
	f, c := start(t, openaifake.Config{FaultPercent: 100, Seed: 3})
	var transient int
	for range 12 {
		_, err := c.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "sora-2", Prompt: "p", Duration: 4})
		if !errors.Is(err, provider.ErrTransient) {
			t.Fatalf("fault: %v, want transient", err)
		}
		if provider.RetryDelay(err) > 0 {
			transient++
		}
	}
	if transient == 0 {
		t.Error("no 429 carried its Retry-After")
	}
	if n := f.Creates(); n != 12 {
		t.Errorf("%d create calls for 12 submits: the adapter must not retry a create", n)
	}
	bad := client(t, f, "sk-wrong")
	if _, err := bad.SubmitGeneration(t.Context(), provider.GenerateRequest{Model: "sora-2", Prompt: "p"}); !errors.Is(err, provider.ErrAccount) ||
		strings.Contains(err.Error(), "sk-wrong") {
		t.Errorf("a wrong key: %v", err)
	}
	if err := bad.Check(t.Context()); !errors.Is(err, provider.ErrAccount) {
		t.Errorf("check with a wrong key: %v", err)
	}
}

func TestUnknownVideoIsPermanent(t *testing.T) {
	t.Parallel()
	_, c := start(t, openaifake.Config{})
	var pe *provider.Error
	if _, err := c.PollGeneration(t.Context(), "video_missing"); !errors.As(err, &pe) || !errors.Is(err, provider.ErrPermanent) ||
		strings.Contains(pe.Message, "raw") {
		t.Errorf("unknown video: %v", err)
	}
}

// Speech sends input, instructions and the account's voice, asks for MP3, and returns the
// audio; a text given only as instructions is spoken as the input; a moderation refusal is
// permanent with the speech failure code.
func TestSpeechSendsTheDocumentedFields(t *testing.T) {
	t.Parallel()
	f, c := start(t, openaifake.Config{})
	out, err := c.Synthesize(t.Context(), provider.SpeechRequest{IdempotencyKey: "speech_1", Model: "gpt-4o-mini-tts", Text: "Hello there\ncalmly",
		Input: "Hello there", Instructions: "calmly"})
	if err != nil || out.ContentType != "audio/mpeg" || out.Source.Open == nil {
		t.Fatalf("speech: %+v %v", out, err)
	}
	rc, _ := out.Source.Open(t.Context())
	if b, _ := io.ReadAll(rc); string(b) != "mp3 bytes" {
		t.Errorf("audio %q", b)
	}
	if _, err := c.Synthesize(t.Context(), provider.SpeechRequest{Model: "gpt-4o-mini-tts", Text: "only instructions", Instructions: "only instructions"}); err != nil {
		t.Fatal(err)
	}
	got := f.Speeches()
	if len(got) != 2 || got[0]["input"] != "Hello there" || got[0]["instructions"] != "calmly" || got[0]["voice"] != "nova" ||
		got[0]["response_format"] != "mp3" || got[1]["input"] != "only instructions" || got[1]["instructions"] != nil {
		t.Errorf("speech bodies %v", got)
	}
	_, err = c.Synthesize(t.Context(), provider.SpeechRequest{Model: "gpt-4o-mini-tts", Text: "[refuse]", Input: "[refuse]"})
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Code != "speech_generation_failed" || !errors.Is(err, provider.ErrPermanent) || strings.Contains(pe.Message, "raw") {
		t.Errorf("refused speech: %v", err)
	}
}

// refusingFrames is a Frames whose Fit refuses the image for good, as the service's fitter
// refuses one over the pixel budget.
type refusingFrames struct{}

func (refusingFrames) Fit(context.Context, provider.Source) ([]byte, int, int, error) {
	return nil, 0, 0, &provider.Error{Code: "InvalidParameter", Kind: provider.ErrPermanent,
		Message: "The first frame image cannot be used: the image is 16000×16000 pixels (256,000,000), over the limit."}
}

// A first frame the fitter refuses for good fails the submit as permanent with the fitter's
// message, and no create is sent: retrying it would spend the task's attempts on an image
// that can never be used.
func TestFirstFrameRefusedByTheFitterIsPermanent(t *testing.T) {
	t.Parallel()
	f, _ := start(t, openaifake.Config{})
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = f.TLS()
	c, err := openai.New(openai.Config{BaseURL: f.Base(), APIKey: testKey, HTTP: &http.Client{Transport: tr, Timeout: 10 * time.Second}, Frames: refusingFrames{}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.SubmitGeneration(t.Context(), provider.GenerateRequest{IdempotencyKey: "v:gen", Model: "sora-2", Prompt: "p", Duration: 4, Width: 1280, Height: 720,
		Inputs: []provider.Input{{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: "https://cdn.example.com/bomb.png"}}}})
	var pe *provider.Error
	if !errors.As(err, &pe) || !errors.Is(err, provider.ErrPermanent) || !strings.Contains(pe.Message, "16000×16000") {
		t.Fatalf("submit: %v, want the fitter's permanent refusal", err)
	}
	if n := f.Creates(); n != 0 {
		t.Errorf("%d creates sent", n)
	}
}
