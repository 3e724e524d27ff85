package ffmpeg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// Trim cuts an upstream's result to measure at most its bound: a video with audio, a silent
// one at a low frame rate (whose copied cut would end a whole frame late, so it is
// re-encoded), and speech audio. What ffmpeg cannot decode is an error, never a kept file.
func TestTrimCutsToMeasureWithinTheBound(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	dir := t.TempDir()
	withAudio := render(t, tools, RenderSpec{Width: 64, Height: 36, FPS: 24, Duration: 3, Audio: true}, filepath.Join(dir, "a.mp4"))
	slow := render(t, tools, RenderSpec{Width: 64, Height: 36, FPS: 2, Duration: 3}, filepath.Join(dir, "slow.mp4"))
	mov := render(t, tools, RenderSpec{Width: 64, Height: 36, FPS: 24, Duration: 3, Audio: true, Container: "mov"}, filepath.Join(dir, "a.mov"))
	speech := filepath.Join(dir, "speech.mp3")
	ffmpegT(t, "-f", "lavfi", "-i", "sine=d=5:r=24000", "-c:a", "libmp3lame", "-b:a", "32k", speech)
	wav := filepath.Join(dir, "speech.wav")
	ffmpegT(t, "-f", "lavfi", "-i", "sine=d=5:r=24000", "-c:a", "pcm_s16le", wav)
	for _, tc := range []struct {
		name  string
		in    string
		bound float64
	}{
		{"video with audio", withAudio, 2},
		{"2 fps video", slow, 1.7},
		{"mp3 speech", speech, 2.5},
		{"mov stays mov", mov, 2},
		{"wav speech stays wav", wav, 2.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "out"+filepath.Ext(tc.in))
			if err := tools.Trim(context.Background(), tc.in, out, tc.bound); err != nil {
				t.Fatal(err)
			}
			info := probe(t, tools, out)
			if info.Length() > tc.bound || info.Length() < tc.bound-0.6 {
				t.Fatalf("trimmed to %v s (longest stream %v s), want at most %v and not far below", info.Duration, info.Longest, tc.bound)
			}
			before := probe(t, tools, tc.in)
			if info.HasVideo != before.HasVideo || info.HasAudio != before.HasAudio || info.Container != before.Container {
				t.Errorf("streams or container changed: %+v from %+v", info, before)
			}
		})
	}
	junk := filepath.Join(dir, "junk.mp4")
	if err := os.WriteFile(junk, []byte("not a video at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "junk-out.mp4")
	if err := tools.Trim(context.Background(), junk, out, 2); err == nil {
		t.Fatal("an undecodable file was trimmed")
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("an undecodable file left an output: %v", err)
	}
}
