package sandbox

import (
	"fmt"
	"path/filepath"
	"testing"

	"mediagen/internal/media/ffmpeg"
)

// The engine describes its own videos with the in-Go reader instead of ffprobe; for every
// shape it renders (MP4 and MOV, with and without audio, landscape and portrait, whole and
// odd lengths) the description must be ffprobe's, or the tokens it reports would differ from
// the tokens the service measures and every task would record an upstream excess.
func TestOwnVideosAreDescribedAsFFprobeDescribesThem(t *testing.T) {
	t.Parallel()
	requireTools(t)
	e := &Engine{cfg: Config{Tools: testTools()}}
	dir := t.TempDir()
	for _, container := range []string{"mp4", "mov"} {
		for _, audio := range []bool{false, true} {
			for _, size := range []struct {
				w, h     int
				duration float64
			}{{854, 480, 2}, {480, 854, 3}} {
				name := fmt.Sprintf("%s audio=%v %dx%d %vs", container, audio, size.w, size.h, size.duration)
				t.Run(name, func(t *testing.T) {
					out := filepath.Join(dir, fmt.Sprintf("%s-%v-%d.%s", container, audio, size.w, container))
					spec := ffmpeg.RenderSpec{Width: size.w, Height: size.h, FPS: FPS, Duration: size.duration,
						Audio: audio, Container: container, Text: "described"}
					if err := e.cfg.Tools.Render(t.Context(), spec, out); err != nil {
						t.Fatal(err)
					}
					// Without an ffprobe to fall back on: the description is the reader's own.
					noProbe := &Engine{cfg: Config{Tools: ffmpeg.Tools{FFprobe: filepath.Join(dir, "no-ffprobe")}}}
					got, err := noProbe.describe(t.Context(), out)
					if err != nil {
						t.Fatal(err)
					}
					info, err := e.cfg.Tools.Probe(t.Context(), out)
					if err != nil {
						t.Fatal(err)
					}
					if want := shapeOf(info); got != want {
						t.Errorf("described %+v, ffprobe %+v", got, want)
					}
					if got, want := Tokens(got.Width, got.Height, got.FPS, got.Duration), Tokens(info.Width, info.Height, info.FPS, info.Duration); got != want {
						t.Errorf("tokens %d, ffprobe's %d", got, want)
					}
				})
			}
		}
	}
}

// A file the reader refuses is described by ffprobe, which refuses it too: the job fails
// rather than reporting a shape read from nothing.
func TestAnUnreadableOwnVideoIsAnError(t *testing.T) {
	t.Parallel()
	requireTools(t)
	e := &Engine{cfg: Config{Tools: testTools()}}
	path := writeFile(t, t.TempDir(), "out.mp4", []byte("not a video"))
	if s, err := e.describe(t.Context(), path); err == nil {
		t.Fatalf("described %+v", s)
	}
}
