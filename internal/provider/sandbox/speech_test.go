package sandbox

import (
	"context"
	"errors"
	"testing"
	"time"

	"mediagen/internal/provider"
)

func newSpeechEngine(t *testing.T) *Engine {
	t.Helper()
	requireTools(t, "ffmpeg", "ffprobe", "espeak-ng")
	return newEngine(t, "")
}

func TestSynthesizeWritesMP3Once(t *testing.T) {
	t.Parallel()
	e := newSpeechEngine(t)
	req := provider.SpeechRequest{IdempotencyKey: "speech-1", Text: "Hello from the sandbox. [sandbox:transient=0]", Mode: "text"}
	s, err := e.Synthesize(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if s.ContentType != "audio/mpeg" || s.Source.Path == "" {
		t.Fatalf("speech = %+v", s)
	}
	info := probe(t, s.Source.Path)
	t.Logf("%s %s %.3fs %d Hz", info.Container, info.AudioCodec, info.Duration, info.AudioSampleRate)
	if info.Container != "mp3" || info.AudioCodec != "mp3" || info.Duration <= 0.3 || info.HasVideo {
		t.Errorf("probe = %+v, want an mp3 with speech", info)
	}
	again, err := e.Synthesize(context.Background(), req)
	if err != nil || again.Source.Path != s.Source.Path || again.ContentType != s.ContentType {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	if n := e.syntheses.Load(); n != 1 {
		t.Errorf("%d syntheses, want 1", n)
	}
}

func TestSynthesizeMarkers(t *testing.T) {
	t.Parallel()
	e := newSpeechEngine(t)
	ctx := context.Background()

	_, err := e.Synthesize(ctx, provider.SpeechRequest{IdempotencyKey: "f1", Text: "no [sandbox:fail]"})
	var pe *provider.Error
	if !errors.As(err, &pe) || pe.Code != CodeSpeechFailed || !errors.Is(err, provider.ErrPermanent) || pe.Message == "" {
		t.Errorf("fail marker: %v", err)
	}
	_, err = e.Synthesize(ctx, provider.SpeechRequest{IdempotencyKey: "f2", Text: "no [sandbox:fail=InvalidParameter.VoiceRejected]"})
	if !errors.As(err, &pe) || pe.Code != "InvalidParameter.VoiceRejected" || !errors.Is(err, provider.ErrPermanent) {
		t.Errorf("fail=CODE marker: %v", err)
	}

	tctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = e.Synthesize(tctx, provider.SpeechRequest{IdempotencyKey: "slow", Text: "wait [sandbox:slow=5s]"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("slow marker under a 200 ms deadline: %v", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("slow marker ignored the deadline: returned after %v", d)
	}

	start = time.Now()
	if _, err := e.Synthesize(ctx, provider.SpeechRequest{IdempotencyKey: "slow-ok", Text: "wait [sandbox:slow=300ms]"}); err != nil {
		t.Errorf("slow marker within the deadline: %v", err)
	} else if time.Since(start) < 300*time.Millisecond {
		t.Errorf("slow marker did not wait")
	}

	req := provider.SpeechRequest{IdempotencyKey: "flaky", Text: "retry [sandbox:transient=1]"}
	if _, err := e.Synthesize(ctx, req); !errors.Is(err, provider.ErrTransient) {
		t.Errorf("first transient attempt: %v", err)
	}
	if _, err := e.Synthesize(ctx, req); err != nil {
		t.Errorf("second attempt: %v", err)
	}

	for _, text := range []string{"[sandbox:boom] hi", "   ", "[sandbox:slow=1ms]"} {
		_, err := e.Synthesize(ctx, provider.SpeechRequest{IdempotencyKey: "bad/" + text, Text: text})
		if !errors.As(err, &pe) || pe.Code != CodeInvalidParameter || !errors.Is(err, provider.ErrPermanent) {
			t.Errorf("Synthesize(%q) = %v, want permanent %s", text, err, CodeInvalidParameter)
		}
	}
	if _, err := e.Synthesize(ctx, provider.SpeechRequest{Text: "no key"}); !errors.Is(err, provider.ErrPermanent) {
		t.Errorf("no key: %v", err)
	}
}
