package speech

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"mediagen/internal/media/ffmpeg"
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
		if est := float64(EstimateSeconds(EspeakBound, text)); info.Duration > est {
			t.Errorf("text %d %q speaks %.2f s, above its reservation of %.0f s", i, text, info.Duration, est)
		}
	}
}
