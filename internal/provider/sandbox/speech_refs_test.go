package sandbox

import (
	"bytes"
	"context"
	"errors"
	"image/color"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider"
)

// The sandbox's speech uses its references, observably: a reference voice's measured pitch
// sets the speech's pitch (a reference spoken by espeak-ng at pitch p is answered at about
// p), an image's shape picks the voice variant, and a reference with no voice to measure is
// refused for good.
func TestSynthesizeReferencesPickTheVoice(t *testing.T) {
	t.Parallel()
	requireTools(t, "ffmpeg", "ffprobe", "espeak-ng")
	tools := testTools()
	dir := t.TempDir()
	files := map[string][]byte{}
	for name, pitch := range map[string]int{"/low.mp3": 10, "/high.mp3": 90} {
		out := filepath.Join(dir, name[1:])
		if err := tools.Speak(context.Background(), "The quick brown fox jumps over the lazy dog.", out, ffmpeg.SpeakOptions{Pitch: pitch}); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = b
	}
	files["/portrait.png"] = pngBytes(t, color.White, 40, 80)
	files["/landscape.png"] = pngBytes(t, color.White, 80, 40)
	srv := httptest.NewTLSServer(&mediaServer{files: files})
	t.Cleanup(srv.Close)
	e := newEngine(t, "", withFetch(loopbackClient(t, srv)))

	speak := func(key, typ string, paths ...string) (string, error) {
		var refs []provider.Input
		for _, p := range paths {
			refs = append(refs, provider.Input{Type: typ, Source: provider.Source{URL: srv.URL + p}})
		}
		s, err := e.Synthesize(context.Background(), provider.SpeechRequest{IdempotencyKey: key, Text: "Hello from the sandbox, in a borrowed voice.", References: refs})
		return s.Source.Path, err
	}
	pitchOf := func(path string) float64 {
		f0, err := tools.VoicePitch(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		return f0
	}
	low, err := speak("low", "audio_url", "/low.mp3")
	if err != nil {
		t.Fatal(err)
	}
	high, err := speak("high", "audio_url", "/high.mp3")
	if err != nil {
		t.Fatal(err)
	}
	lowRef, highRef := pitchOf(filepath.Join(dir, "low.mp3")), pitchOf(filepath.Join(dir, "high.mp3"))
	lowOut, highOut := pitchOf(low), pitchOf(high)
	t.Logf("references %.0f Hz and %.0f Hz answered at %.0f Hz and %.0f Hz", lowRef, highRef, lowOut, highOut)
	if lowOut >= highOut || math.Abs(lowOut-lowRef) > 20 || math.Abs(highOut-highRef) > 20 {
		t.Errorf("references %.0f and %.0f Hz answered at %.0f and %.0f Hz", lowRef, highRef, lowOut, highOut)
	}
	// Three references: their mean pitch, between the low and the high one.
	mixed, err := speak("mixed", "audio_url", "/low.mp3", "/high.mp3", "/high.mp3")
	if err != nil {
		t.Fatal(err)
	}
	if f0 := pitchOf(mixed); f0 <= lowOut || f0 >= highOut+10 {
		t.Errorf("three references answered at %.0f Hz, want between %.0f and %.0f", f0, lowOut, highOut)
	}

	portrait, err := speak("portrait", "image_url", "/portrait.png")
	if err != nil {
		t.Fatal(err)
	}
	landscape, err := speak("landscape", "image_url", "/landscape.png")
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(portrait)
	b, _ := os.ReadFile(landscape)
	if bytes.Equal(a, b) {
		t.Error("a portrait and a landscape image picked the same voice")
	}
	plain := filepath.Join(dir, "plain.mp3")
	if err := tools.Speak(context.Background(), "Hello from the sandbox, in a borrowed voice.", plain, ffmpeg.SpeakOptions{Voice: VoiceLandscape}); err != nil {
		t.Fatal(err)
	}
	if c, _ := os.ReadFile(plain); !bytes.Equal(b, c) {
		t.Errorf("a landscape image did not speak with %s", VoiceLandscape)
	}

	// An "audio" reference with no voice in it: refused for good.
	_, err = speak("novoice", "audio_url", "/portrait.png")
	var pe *provider.Error
	if !errors.As(err, &pe) || !errors.Is(err, provider.ErrPermanent) || pe.Code != CodeInvalidParameter {
		t.Errorf("a reference with no voice: %v", err)
	}
}
