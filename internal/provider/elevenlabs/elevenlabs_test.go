package elevenlabs_test

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
	"mediagen/internal/provider/elevenlabs"
	"mediagen/internal/provider/elevenlabs/elevenlabsfake"
)

const key = "xi-test-key-123"

func start(t *testing.T, fault string) (*elevenlabsfake.Server, *elevenlabs.Client) {
	t.Helper()
	mp3 := filepath.Join(t.TempDir(), "s.mp3")
	if err := os.WriteFile(mp3, []byte("ID3fake-mp3-bytes"), 0o600); err != nil {
		t.Fatal(err)
	}
	f := elevenlabsfake.Start(elevenlabsfake.Config{Key: key, Voices: []string{"voice-1"}, Speech: mp3, Long: mp3,
		Fault: func(string) string { return fault }})
	t.Cleanup(f.Close)
	c, err := elevenlabs.New(elevenlabs.Config{BaseURL: f.Base(), APIKey: key, Voice: "voice-1",
		HTTP: &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{TLSClientConfig: f.TLS()}}})
	if err != nil {
		t.Fatal(err)
	}
	return f, c
}

func TestSynthesizeSendsTheSDKsWireFormatAndReturnsTheAudio(t *testing.T) {
	t.Parallel()
	f, c := start(t, "")
	sp, err := c.Synthesize(context.Background(), provider.SpeechRequest{Model: "eleven_flash_v2_5", Text: "Hello there.", Input: "Hello there."})
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := sp.Source.Open(context.Background())
	b, _ := io.ReadAll(rc)
	if string(b) != "ID3fake-mp3-bytes" || sp.ContentType != "audio/mpeg" {
		t.Fatalf("audio %q type %q", b, sp.ContentType)
	}
	bodies := f.Bodies()
	if len(bodies) != 1 || bodies[0]["text"] != "Hello there." || bodies[0]["model_id"] != "eleven_flash_v2_5" {
		t.Fatalf("bodies %v", bodies)
	}
	if n, chars := f.Billed(); n != 1 || chars != 12 {
		t.Fatalf("billed %d syntheses, %d characters", n, chars)
	}
	if v := f.Violations(); len(v) > 0 {
		t.Fatalf("violations %v", v)
	}
}

// Every failure is typed for the speech service: what made no audio is retried, a lost or
// cut answer (billed) is never retried, refusals are permanent, a refused key is the account's.
func TestSynthesizeTypesEveryFailure(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, fault            string
		transient, permanent   bool
		account, outcomeUnknwn bool
		code                   string
		retryAfter             time.Duration
	}{
		{name: "a 500 is retried", fault: elevenlabsfake.Fault500, transient: true},
		{name: "a 429 without Retry-After is retried", fault: elevenlabsfake.Fault429, transient: true},
		{name: "a 429 with Retry-After is retried after it", fault: elevenlabsfake.Fault429After, transient: true, retryAfter: time.Second},
		{name: "a content refusal fails for good", fault: elevenlabsfake.FaultRefuse, permanent: true, code: "speech_generation_failed"},
		{name: "a lost answer is never retried", fault: elevenlabsfake.FaultLose, permanent: true, outcomeUnknwn: true, code: "speech_generation_failed"},
		{name: "a truncated answer is never retried", fault: elevenlabsfake.FaultTruncate, permanent: true, outcomeUnknwn: true, code: "speech_generation_failed"},
		{name: "an answer that never comes is never retried", fault: elevenlabsfake.FaultNeverEnds, permanent: true, outcomeUnknwn: true, code: "speech_generation_failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, c := start(t, tc.fault)
			_, err := c.Synthesize(context.Background(), provider.SpeechRequest{Model: "eleven_multilingual_v2", Text: "Hi."})
			if err == nil {
				t.Fatal("no error")
			}
			if errors.Is(err, provider.ErrTransient) != tc.transient || errors.Is(err, provider.ErrPermanent) != tc.permanent ||
				errors.Is(err, provider.ErrOutcomeUnknown) != tc.outcomeUnknwn {
				t.Fatalf("err %v: transient %v permanent %v unknown %v", err, errors.Is(err, provider.ErrTransient),
					errors.Is(err, provider.ErrPermanent), errors.Is(err, provider.ErrOutcomeUnknown))
			}
			var pe *provider.Error
			if tc.code != "" && (!errors.As(err, &pe) || pe.Code != tc.code) {
				t.Fatalf("err %v, want code %s", err, tc.code)
			}
			var ra *provider.RetryAfter
			if tc.retryAfter > 0 && (!errors.As(err, &ra) || ra.After != tc.retryAfter) {
				t.Fatalf("err %v, want Retry-After %s", err, tc.retryAfter)
			}
			if strings.Contains(err.Error(), key) {
				t.Fatal("the key is in the error")
			}
		})
	}
}

func TestRefusalsAreTyped(t *testing.T) {
	t.Parallel()
	f, c := start(t, "")
	bad, err := elevenlabs.New(elevenlabs.Config{BaseURL: f.Base(), APIKey: "wrong", Voice: "voice-1",
		HTTP: &http.Client{Transport: &http.Transport{TLSClientConfig: f.TLS()}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Synthesize(context.Background(), provider.SpeechRequest{Model: "eleven_multilingual_v2", Text: "Hi."}); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("a refused key: %v, want the account's error", err)
	}
	if err := bad.Check(context.Background()); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("check with a refused key: %v", err)
	}
	var pe *provider.Error
	if _, err := c.Synthesize(context.Background(), provider.SpeechRequest{Model: "no_such_model", Text: "Hi."}); !errors.As(err, &pe) || pe.Code != "InvalidParameter" {
		t.Fatalf("an unknown model: %v", err)
	}
	if _, err := c.Synthesize(context.Background(), provider.SpeechRequest{Model: "eleven_v3", Text: strings.Repeat("a", 5001)}); !errors.As(err, &pe) || pe.Code != "InvalidParameter" {
		t.Fatalf("a text over the model's limit: %v", err)
	}
	if err := c.Check(context.Background()); err != nil {
		t.Fatalf("check: %v", err)
	}
	if n, _ := f.Billed(); n != 0 {
		t.Fatalf("%d syntheses billed by refusals", n)
	}
}

// The key travels in xi-api-key only: never as a Bearer token (the fake records an
// Authorization header as a violation).
func TestTheKeyIsSentAsXiAPIKeyOnly(t *testing.T) {
	t.Parallel()
	f, c := start(t, "")
	if err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Synthesize(context.Background(), provider.SpeechRequest{Model: "eleven_multilingual_v2", Text: "Hi."}); err != nil {
		t.Fatal(err)
	}
	if v := f.Violations(); len(v) > 0 {
		t.Fatalf("violations %v", v)
	}
}
