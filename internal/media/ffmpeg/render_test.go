package ffmpeg

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestRenderProducesRequestedStreams(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	tests := []struct {
		name      string
		spec      RenderSpec
		file      string
		container string
	}{
		{"mp4 with audio has h264 and aac", RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 3, Audio: true}, "a.mp4", "mp4"},
		{"mp4 without audio has no audio stream", RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 3}, "b.mp4", "mp4"},
		{"mov container is quicktime", RenderSpec{Width: 240, Height: 320, FPS: 30, Duration: 2, Audio: true, Container: "mov"}, "c.mov", "mov"},
		{"fractional duration is exact", RenderSpec{Width: 160, Height: 90, FPS: 10, Duration: 1.5}, "d.mp4", "mp4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := render(t, tools, tc.spec, filepath.Join(t.TempDir(), tc.file))
			info := probe(t, tools, out)
			t.Logf("%s: %dx%d %.3f s %v fps %s/%s %s", tc.file, info.Width, info.Height, info.Duration, info.FPS, info.VideoCodec, info.AudioCodec, info.FormatName)
			if st, err := os.Stat(out); err != nil {
				t.Error(err)
			} else if st.Mode().Perm() != 0o600 {
				t.Errorf("output mode = %v, want 0600", st.Mode())
			}
			if info.Width != tc.spec.Width || info.Height != tc.spec.Height {
				t.Errorf("size = %dx%d, want %dx%d", info.Width, info.Height, tc.spec.Width, tc.spec.Height)
			}
			if !near(info.Duration, tc.spec.Duration, 0.05) {
				t.Errorf("duration = %v, want %v ± 0.05", info.Duration, tc.spec.Duration)
			}
			if info.FPS != float64(tc.spec.FPS) {
				t.Errorf("fps = %v, want %d", info.FPS, tc.spec.FPS)
			}
			if info.VideoCodec != "h264" || info.PixFmt != "yuv420p" || info.BitDepth != 8 {
				t.Errorf("video = %s %s %d-bit, want h264 yuv420p 8-bit", info.VideoCodec, info.PixFmt, info.BitDepth)
			}
			if info.HasAudio != tc.spec.Audio {
				t.Errorf("HasAudio = %v, want %v", info.HasAudio, tc.spec.Audio)
			}
			if tc.spec.Audio && info.AudioCodec != "aac" {
				t.Errorf("audio codec = %q, want aac", info.AudioCodec)
			}
			if info.Container != tc.container || !strings.Contains(info.FormatName, "mov") {
				t.Errorf("container = %q (format %q), want %q", info.Container, info.FormatName, tc.container)
			}
		})
	}
}

func TestRenderShowsFirstAndLastFrameImages(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	dir := t.TempDir()
	// Different sizes, aspect ratios and formats; the blue one is square, so
	// it is padded with black bars but still dominates the frame.
	red := solidImage(t, dir, "red.png", "red", 64, 36)
	blue := solidImage(t, dir, "blue.jpg", "blue", 50, 50)
	green := solidImage(t, dir, "green.webp", "green", 40, 30)

	tests := []struct {
		name     string
		duration float64
	}{
		{"three second clip", 3},
		{"clip shorter than two seconds splits in halves", 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := render(t, tools, RenderSpec{
				Width: 320, Height: 180, FPS: 24, Duration: tc.duration,
				FirstFrame: red, LastFrame: blue, RefImages: []string{green, green},
			}, filepath.Join(t.TempDir(), "out.mp4"))
			colors := frameColors(t, out)
			if got := dominant(colors[0]); got != "red" {
				t.Errorf("first frame colour %v is %q, want red", colors[0], got)
			}
			if got := dominant(colors[len(colors)-1]); got != "blue" {
				t.Errorf("last frame colour %v is %q, want blue", colors[len(colors)-1], got)
			}
			if mid := colors[len(colors)/2]; tc.duration >= 2 && dominant(mid) != "" {
				t.Errorf("middle frame colour %v is %q, want the background", mid, dominant(mid))
			}
		})
	}
}

func TestRenderDrawsHostileTextWithoutError(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	base := RenderSpec{Width: 160, Height: 90, FPS: 5, Duration: 0.4}
	plain := frameColors(t, render(t, tools, base, filepath.Join(t.TempDir(), "plain.mp4")))[0]

	tests := []struct {
		name  string
		text  string
		drawn bool
	}{
		{"quotes", `it's "quoted" and 'single'`, true},
		{"colons and filter syntax", `a:b=c; [in]scale=2:2,null[out] fontfile=/etc/passwd`, true},
		{"percent expansions stay literal", `100% %{pts} %{eif:1/0:d} %{localtime} %% %{no_such_function}`, true},
		{"backslashes", `C:\path\to\n\t \\ \' \: end\`, true},
		{"unicode", "Grüße — 日本語のテキスト — العربية — emoji 🎬 — e\u0301", true},
		{"newlines", "line one\nline two\r\nline three\n\n\nline four", true},
		{"very long text is cut", strings.Repeat("long prompt words ", 500), true},
		{"invalid utf8", "bad \xff\xfe bytes", true},
		{"only control characters draw nothing", "\x00\x01\x07\x1b", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := base
			spec.Text = tc.text
			first := frameColors(t, render(t, tools, spec, filepath.Join(t.TempDir(), "t.mp4")))[0]
			if drawn := first != plain; drawn != tc.drawn {
				t.Errorf("caption drawn = %v, want %v (frame %v, plain %v)", drawn, tc.drawn, first, plain)
			}
		})
	}
}

// A font path and a temporary directory full of filtergraph syntax prove
// that paths inside the graph are escaped, not just the caption.
func TestRenderHandlesHostilePaths(t *testing.T) {
	tools := testTools(t)
	weird := filepath.Join(t.TempDir(), `it's [a], b; 50%: c\d e`)
	if err := os.Mkdir(weird, 0o700); err != nil {
		t.Fatal(err)
	}
	font, err := os.ReadFile(DefaultFontFile)
	if err != nil {
		t.Skipf("default font missing: %v", err)
	}
	tools.FontFile = filepath.Join(weird, "font 'x'.ttf")
	if err := os.WriteFile(tools.FontFile, font, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", weird) // the caption file lands here
	img := solidImage(t, weird, "img%03d.png", "red", 32, 18)
	out := filepath.Join(weird, "out %d: [x].mp4")

	render(t, tools, RenderSpec{Width: 160, Height: 90, FPS: 5, Duration: 0.4, Text: "hi", FirstFrame: img}, out)
	if got := dominant(frameColors(t, out)[0]); got != "red" {
		t.Errorf("first frame is %q, want red", got)
	}
}

func TestRenderIsDeterministic(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	spec := RenderSpec{Width: 160, Height: 90, FPS: 10, Duration: 1, Audio: true, Text: "same"}
	dir := t.TempDir()
	a, err := os.ReadFile(render(t, tools, spec, filepath.Join(dir, "a.mp4")))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(render(t, tools, spec, filepath.Join(dir, "b.mp4")))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("two renders of one spec differ (%d vs %d bytes)", len(a), len(b))
	}
}

func TestRenderRejectsInvalidSpec(t *testing.T) {
	t.Parallel()
	tools := Tools{FFmpeg: "/nonexistent/ffmpeg"} // validation must not need ffmpeg
	ok := RenderSpec{Width: 160, Height: 90, FPS: 10, Duration: 1}
	tests := []struct {
		name   string
		modify func(*RenderSpec)
		want   error
	}{
		{"odd width", func(s *RenderSpec) { s.Width = 161 }, ErrInvalidSpec},
		{"too large", func(s *RenderSpec) { s.Height = 10000 }, ErrInvalidSpec},
		{"zero fps", func(s *RenderSpec) { s.FPS = 0 }, ErrInvalidSpec},
		{"zero duration", func(s *RenderSpec) { s.Duration = 0 }, ErrInvalidSpec},
		{"too long", func(s *RenderSpec) { s.Duration = MaxRenderDuration + 1 }, ErrInvalidSpec},
		{"unknown container", func(s *RenderSpec) { s.Container = "avi" }, ErrInvalidSpec},
		{"missing first frame", func(s *RenderSpec) { s.FirstFrame = "/nonexistent.png" }, os.ErrNotExist},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := ok
			tc.modify(&spec)
			dir := t.TempDir()
			err := tools.Render(context.Background(), spec, filepath.Join(dir, "out.mp4"))
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			assertOnlyFiles(t, dir)
		})
	}
}

func TestRenderTimeoutLeavesNoOutput(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	tests := []struct {
		name    string
		timeout time.Duration
		spec    RenderSpec
	}{
		// Expires before or right after the process starts.
		{"1ms timeout", time.Millisecond, RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 3, Audio: true}},
		// Expires mid-encode: the process must be killed, not waited for.
		{"timeout during a long encode", 300 * time.Millisecond, RenderSpec{Width: 1280, Height: 720, FPS: 30, Duration: 120, Audio: true, Text: "long"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tools := tools
			tools.Timeout = tc.timeout
			dir := t.TempDir()
			start := time.Now()
			err := tools.Render(context.Background(), tc.spec, filepath.Join(dir, "out.mp4"))
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("err = %v, want context.DeadlineExceeded", err)
			}
			// A 120 s 720p encode takes minutes here; returning within
			// seconds shows ffmpeg was killed.
			if elapsed := time.Since(start); elapsed > 10*time.Second {
				t.Errorf("Render returned after %v; ffmpeg was not killed promptly", elapsed)
			}
			assertOnlyFiles(t, dir)
		})
	}
}

func TestRenderFailureKeepsPreviousOutput(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	dir := t.TempDir()
	notImage := filepath.Join(dir, "not-an-image.png")
	if err := os.WriteFile(notImage, []byte("plain text, not a picture"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out.mp4")
	if err := os.WriteFile(out, []byte("previous"), 0o600); err != nil {
		t.Fatal(err)
	}

	err := tools.Render(context.Background(), RenderSpec{Width: 160, Height: 90, FPS: 10, Duration: 1, FirstFrame: notImage}, out)
	var te *ToolError
	if !errors.As(err, &te) || te.Tool != "ffmpeg" || te.Stderr == "" {
		t.Fatalf("err = %v, want a ToolError from ffmpeg with stderr", err)
	}
	if got, _ := os.ReadFile(out); string(got) != "previous" {
		t.Errorf("out = %q, want the previous content untouched", got)
	}
	assertOnlyFiles(t, dir, "not-an-image.png", "out.mp4")
}

func TestRenderCanceledContextIsReported(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	dir := t.TempDir()
	err := tools.Render(ctx, RenderSpec{Width: 160, Height: 90, FPS: 10, Duration: 1}, filepath.Join(dir, "out.mp4"))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	assertOnlyFiles(t, dir)
}

// BenchmarkRender720p measures one 5 s 1280x720 30 fps clip with audio and
// a caption, at the default preset and at ultrafast; run with
// -run '^$' -bench Render720p -benchtime 1x.
func BenchmarkRender720p(b *testing.B) {
	requireBins(b, "ffmpeg")
	spec := RenderSpec{Width: 1280, Height: 720, FPS: 30, Duration: 5, Audio: true, Text: "benchmark clip"}
	for _, preset := range []string{"", "ultrafast"} {
		b.Run("preset="+orDefault(preset, DefaultPreset), func(b *testing.B) {
			tools := Tools{Preset: preset}
			out := filepath.Join(b.TempDir(), "720p.mp4")
			for b.Loop() {
				if err := tools.Render(context.Background(), spec, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
