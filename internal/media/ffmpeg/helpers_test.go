package ffmpeg

import (
	"bytes"
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// requireBins skips the test when a tool is missing, except under CI=true,
// where a missing tool must fail the build rather than hide the tests.
func requireBins(t testing.TB, bins ...string) {
	t.Helper()
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required when CI=true: %v", bin, err)
			}
			t.Skipf("%s not installed: %v", bin, err)
		}
	}
}

// testTools returns Tools tuned for a small shared machine.
func testTools(t *testing.T) Tools {
	t.Helper()
	requireBins(t, "ffmpeg", "ffprobe")
	return Tools{Preset: "ultrafast", Threads: 2, Timeout: 60 * time.Second}
}

// ffmpegT runs ffmpeg for test fixtures and returns its stdout.
func ffmpegT(t *testing.T, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("ffmpeg", append([]string{"-hide_banner", "-nostdin", "-loglevel", "error", "-y"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("ffmpeg %v: %v: %s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// solidImage writes a w x h image of one colour; the extension picks the
// format (png, jpg, webp).
func solidImage(t *testing.T, dir, name, color string, w, h int) string {
	t.Helper()
	path := filepath.Join(dir, name)
	ffmpegT(t, "-f", "lavfi", "-i", "color=c="+color+":s="+itoa(w)+"x"+itoa(h), "-frames:v", "1", "-update", "1", fileURL(path))
	return path
}

func render(t *testing.T, tools Tools, spec RenderSpec, out string) string {
	t.Helper()
	if err := tools.Render(context.Background(), spec, out); err != nil {
		t.Fatalf("Render(%+v): %v", spec, err)
	}
	return out
}

func probe(t *testing.T, tools Tools, path string) Info {
	t.Helper()
	info, err := tools.Probe(context.Background(), path)
	if err != nil {
		t.Fatalf("Probe(%s): %v", path, err)
	}
	return info
}

// rgb is an average colour, channels 0..255.
type rgb [3]float64

// frameColors decodes every frame of a video (or the one frame of an
// image), shrunk to 16x16, and returns the average colour of each.
func frameColors(t *testing.T, path string) []rgb {
	t.Helper()
	const side = 16
	raw := ffmpegT(t, "-i", fileURL(path), "-map", "0:v:0", "-vf", "scale=16:16", "-fps_mode", "passthrough",
		"-f", "rawvideo", "-pix_fmt", "rgb24", "-")
	frame := side * side * 3
	if len(raw) == 0 || len(raw)%frame != 0 {
		t.Fatalf("decoded %d bytes, not a whole number of %d-byte frames", len(raw), frame)
	}
	var out []rgb
	for off := 0; off < len(raw); off += frame {
		var sum rgb
		for i := off; i < off+frame; i += 3 {
			for c := range 3 {
				sum[c] += float64(raw[i+c])
			}
		}
		for c := range 3 {
			sum[c] /= side * side
		}
		out = append(out, sum)
	}
	return out
}

// dominant names the channel ("red", "green", "blue") that clearly
// outweighs the other two, or "" when none does.
func dominant(c rgb) string {
	names := []string{"red", "green", "blue"}
	for i := range 3 {
		others := c[(i+1)%3] + c[(i+2)%3]
		if c[i] > 100 && c[i] > 2*others {
			return names[i]
		}
	}
	return ""
}

func near(got, want, tol float64) bool { return math.Abs(got-want) <= tol }

// assertNoFiles fails when dir holds anything but the listed names: a
// leftover temporary file means a write was not cleaned up.
func assertOnlyFiles(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, ",") != strings.Join(names, ",") {
		t.Errorf("files in %s = %q, want %q", dir, got, names)
	}
}
