package ffmpeg

import (
	"context"
	"path/filepath"
	"testing"
)

// An image of any shape comes out at exactly the asked size, as a PNG.
func TestFitImagePNGGivesExactlyTheSize(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.mp4")
	if err := tools.Render(context.Background(), RenderSpec{Width: 64, Height: 36, FPS: 10, Duration: 1, Container: "mp4", Text: "f"}, src); err != nil {
		t.Fatal(err)
	}
	for _, size := range [][2]int{{1280, 720}, {720, 1280}} {
		out := filepath.Join(dir, "fit.png")
		if err := tools.FitImagePNG(context.Background(), src, out, size[0], size[1]); err != nil {
			t.Fatal(err)
		}
		info, err := tools.Probe(context.Background(), out)
		if err != nil || info.Width != size[0] || info.Height != size[1] {
			t.Errorf("fit to %v: %+v %v", size, info, err)
		}
	}
}
