package speech

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider"
	"mediagen/internal/provider/elevenlabs"
	"mediagen/internal/provider/elevenlabs/elevenlabsfake"
)

// ElevenLabsBound holds the audio of the adversarial corpus spoken at 150 words a minute (an
// ElevenLabs voice at speed 1), served by the fake ElevenLabs API, fetched through the
// elevenlabs client and probed as the service bills it; an elevenlabs account without
// speech_bound gets it.
func TestElevenLabsBoundCoversTheFakesAnswers(t *testing.T) {
	t.Parallel()
	if got := KindBound(catalog.UpstreamAccount{Kind: catalog.KindElevenLabs}); got != ElevenLabsBound {
		t.Fatalf("an elevenlabs account's default bound is %+v", got)
	}
	tools := ffmpeg.Tools{}
	if err := tools.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("media tools required under CI=true: %v", err)
		}
		t.Skip(err)
	}
	dir := t.TempDir()
	for i, text := range []string{
		"7777777777",
		"! ! ! ! ! ! ! ! ! ! ",
		"a한a한a한a한a한",
		"w\nw\nw\nw\nw\n",
		"%%%% &&&& $1,000,000.99 100% e.g. km/h",
		"中文文本测试",
		"Call 1,234,567,890 or 555-0100 at 10:45 on 2026-11-23.",
		"⣿⣿⣿⣿⣿⣿",
		"Hello.",
		strings.Repeat("The harbour was quiet in the early morning. ", 20),
	} {
		spoken := filepath.Join(dir, fmt.Sprintf("spoken%d.mp3", i))
		if err := tools.Speak(context.Background(), text, spoken, ffmpeg.SpeakOptions{Format: "mp3", SpeedWPM: 150}); err != nil {
			t.Fatal(err)
		}
		fake := elevenlabsfake.Start(elevenlabsfake.Config{Key: "xi-bound", Speech: spoken})
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = fake.TLS()
		c, err := elevenlabs.New(elevenlabs.Config{BaseURL: fake.Base(), APIKey: "xi-bound", Voice: "v", HTTP: &http.Client{Transport: tr, Timeout: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Synthesize(context.Background(), provider.SpeechRequest{Model: "eleven_multilingual_v2", Text: text})
		fake.Close()
		if err != nil {
			t.Fatal(err)
		}
		rc, err := out.Source.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		got := filepath.Join(dir, fmt.Sprintf("got%d.mp3", i))
		b, _ := io.ReadAll(rc)
		rc.Close()
		if err := os.WriteFile(got, b, 0o600); err != nil {
			t.Fatal(err)
		}
		info, err := tools.Probe(context.Background(), got)
		if err != nil {
			t.Fatal(err)
		}
		bound := float64(ElevenLabsBound.Micros(text)) / 1e6
		if info.Duration > bound {
			t.Errorf("text %d %q: the fake's answer is %.2f s, above ElevenLabsBound's %.2f s", i, text, info.Duration, bound)
		}
		t.Logf("text %d: %.2f s of %.2f s (%.0f%%)", i, info.Duration, bound, 100*info.Duration/bound)
	}
}
