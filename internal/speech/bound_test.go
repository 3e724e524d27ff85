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
	"mediagen/internal/provider/openai"
	"mediagen/internal/provider/openai/openaifake"
)

// The sandbox engine's audio for adversarial texts — digits read one by one, symbols and
// other scripts read by name, letters on their own lines — stays within EspeakBound. (The
// former estimate, ceil(characters / 12) s, covered none of these: "7777777777" speaks for
// about 7 s against its 1 s.) bench/speechbound runs the whole corpus.
func TestEspeakBoundCoversAdversarialTexts(t *testing.T) {
	t.Parallel()
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
	} {
		out := filepath.Join(dir, "t.mp3")
		if err := tools.Speak(context.Background(), text, out, ffmpeg.SpeakOptions{Format: "mp3"}); err != nil {
			t.Fatal(err)
		}
		info, err := tools.Probe(context.Background(), out)
		if err != nil {
			t.Fatal(err)
		}
		bound := float64(EspeakBound.Micros(text)) / 1e6
		if info.Duration > bound {
			t.Errorf("text %d %q speaks %.2f s, above its bound %.2f s", i, text, info.Duration, bound)
		}
		q, err := Estimate("USD", 200, EspeakBound, text)
		if err != nil {
			t.Fatal(err)
		}
		if est := float64(q.EstimatedSeconds); info.Duration > est {
			t.Errorf("text %d %q speaks %.2f s, above its reservation of %.0f s", i, text, info.Duration, est)
		}
	}
}

// OpenAIBound, measured against the fake OpenAI API (openaifake serves, for every text, the
// MP3 it was started with): each adversarial text spoken at 150 words a minute — OpenAI's
// voices' pace at speed 1, slower than espeak's 175 — is fetched through the openai client,
// stored and probed as the service bills it, and stays within OpenAIBound. The bound also
// never falls below EspeakBound, so a routed alias over both kinds reserves under openai's.
func TestOpenAIBoundCoversTheFakesAnswers(t *testing.T) {
	t.Parallel()
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
		fake := openaifake.Start(openaifake.Config{Key: "sk-bound", Speech: spoken, Clip: spoken})
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = fake.TLS()
		c, err := openai.New(openai.Config{BaseURL: fake.Base(), APIKey: "sk-bound", HTTP: &http.Client{Transport: tr, Timeout: 10 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Synthesize(context.Background(), provider.SpeechRequest{IdempotencyKey: "b", Model: "tts-1", Text: text})
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
		bound := float64(OpenAIBound.Micros(text)) / 1e6
		if info.Duration > bound {
			t.Errorf("text %d %q: the fake's answer is %.2f s, above OpenAIBound's %.2f s", i, text, info.Duration, bound)
		}
		if OpenAIBound.Micros(text) < EspeakBound.Micros(text) {
			t.Errorf("text %d: OpenAIBound below EspeakBound", i)
		}
		t.Logf("text %d: %.2f s of %.2f s (%.0f%%)", i, info.Duration, bound, 100*info.Duration/bound)
	}
}

// An account's speech_bound replaces its kind's default; without one, openai accounts get
// OpenAIBound and espeak (and sandbox) accounts EspeakBound.
func TestKindBoundFollowsTheCatalog(t *testing.T) {
	t.Parallel()
	set := &catalog.SpeechBound{SpaceUS: 1, LineBreakUS: 2, LetterUS: 3, DigitUS: 4, PunctuationUS: 5, OtherUS: 6, OverheadUS: 7, MarginPercent: 8}
	for _, c := range []struct {
		name string
		acc  catalog.UpstreamAccount
		want Bound
	}{
		{"openai default", catalog.UpstreamAccount{Kind: catalog.KindOpenAI}, OpenAIBound},
		{"espeak default", catalog.UpstreamAccount{Kind: catalog.KindEspeak}, EspeakBound},
		{"sandbox default", catalog.UpstreamAccount{Kind: catalog.KindSandbox}, EspeakBound},
		{"set in the catalog", catalog.UpstreamAccount{Kind: catalog.KindOpenAI, SpeechBound: set}, Bound{1, 2, 3, 4, 5, 6, 7, 8}},
	} {
		if got := KindBound(c.acc); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
}
