package ffmpeg

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLastFrameJPGIsTheLastFrame(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	dir := t.TempDir()
	red := solidImage(t, dir, "red.png", "red", 32, 18)

	tests := []struct {
		name string
		spec RenderSpec
	}{
		{"three second clip", RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 3, Audio: true}},
		{"clip shorter than the one-second seek", RenderSpec{Width: 320, Height: 180, FPS: 10, Duration: 0.4}},
		{"portrait mov", RenderSpec{Width: 90, Height: 160, FPS: 30, Duration: 1.2, Container: "mov"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.spec
			// Same aspect as the video, so the image fills the last frame.
			blue := solidImage(t, t.TempDir(), "blue.png", "blue", spec.Width/2, spec.Height/2)
			spec.FirstFrame, spec.LastFrame = red, blue
			video := render(t, tools, spec, filepath.Join(t.TempDir(), "v."+spec.container()))

			out := filepath.Join(t.TempDir(), "last.jpg")
			if err := tools.LastFrameJPG(context.Background(), video, out); err != nil {
				t.Fatal(err)
			}
			info := probe(t, tools, out)
			if info.VideoCodec != "mjpeg" || info.Width != spec.Width || info.Height != spec.Height {
				t.Errorf("got %s %dx%d, want mjpeg %dx%d", info.VideoCodec, info.Width, info.Height, spec.Width, spec.Height)
			}
			if got := dominant(frameColors(t, out)[0]); got != "blue" {
				t.Errorf("jpg colour is %q, want blue like the last frame", got)
			}
			assertOnlyFiles(t, filepath.Dir(out), "last.jpg")
		})
	}
}

func TestFirstFrameJPGIsTheFirstFrame(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	spec := RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 1}
	spec.FirstFrame = solidImage(t, t.TempDir(), "red.png", "red", 160, 90)
	spec.LastFrame = solidImage(t, t.TempDir(), "blue.png", "blue", 160, 90)
	video := render(t, tools, spec, filepath.Join(t.TempDir(), "v."+spec.container()))

	out := filepath.Join(t.TempDir(), "first.jpg")
	if err := tools.FirstFrameJPG(context.Background(), video, out); err != nil {
		t.Fatal(err)
	}
	info := probe(t, tools, out)
	if info.VideoCodec != "mjpeg" || info.Width != spec.Width || info.Height != spec.Height {
		t.Errorf("got %s %dx%d, want mjpeg %dx%d", info.VideoCodec, info.Width, info.Height, spec.Width, spec.Height)
	}
	if got := dominant(frameColors(t, out)[0]); got != "red" {
		t.Errorf("jpg colour is %q, want red like the first frame", got)
	}
	assertOnlyFiles(t, filepath.Dir(out), "first.jpg")
}

func TestFrameJPGsOfHighBitDepthVideo(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	if _, err := tools.VideoEncodingFor(context.Background(), 10); errors.Is(err, ErrUnsupportedBitDepth) {
		t.Skip("no 10-bit encoder in this ffmpeg")
	}
	in := source(t, tools, 320, 180, false)
	ten := filepath.Join(t.TempDir(), "ten.mp4")
	if err := tools.Enhance(context.Background(), in, ten, EnhanceSpec{BitDepth: 10}); err != nil {
		t.Fatal(err)
	}
	for name, take := range map[string]func(context.Context, string, string) error{"last": tools.LastFrameJPG, "first": tools.FirstFrameJPG} {
		out := filepath.Join(t.TempDir(), name+".jpg")
		if err := take(context.Background(), ten, out); err != nil {
			t.Fatalf("%s frame: %v", name, err)
		}
		if info := probe(t, tools, out); info.Width != 320 || info.Height != 180 {
			t.Errorf("%s frame size = %dx%d, want 320x180", name, info.Width, info.Height)
		}
	}
}

func TestLastFrameJPGOfNonVideoFails(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	dir := t.TempDir()
	bogus := filepath.Join(dir, "bogus.mp4")
	if err := os.WriteFile(bogus, []byte("not a video"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := tools.LastFrameJPG(context.Background(), bogus, filepath.Join(dir, "last.jpg"))
	var te *ToolError
	if !errors.As(err, &te) || te.Tool != "ffmpeg" {
		t.Errorf("err = %v, want a ToolError from ffmpeg", err)
	}
	assertOnlyFiles(t, dir, "bogus.mp4")
}

// The full-decode fallback is hard to trigger through LastFrameJPG (it needs
// a video whose last second holds no frame), so it is checked directly.
func TestLastFrameFullDecodeFindsTheLastFrame(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	dir := t.TempDir()
	blue := solidImage(t, dir, "blue.png", "blue", 32, 18)
	video := render(t, tools, RenderSpec{Width: 160, Height: 90, FPS: 10, Duration: 2, LastFrame: blue}, filepath.Join(dir, "v.mp4"))
	out := filepath.Join(dir, "last.jpg")
	if err := tools.lastFrame(context.Background(), video, out, false); err != nil {
		t.Fatal(err)
	}
	if got := dominant(frameColors(t, out)[0]); got != "blue" {
		t.Errorf("jpg colour is %q, want blue", got)
	}
}
