//go:build linux

package ffmpeg

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"mediagen/internal/media/pixels/pixelstest"
)

// childPeakEnv makes the test binary run decodersOnABomb and print its children's peak
// resident memory: measured in a process of its own, so no other test's child counts.
const childPeakEnv = "MEDIAGEN_TEST_BOMB_CHILD"

// writeBomb writes the 746 KB all-black 16000×16000 RGB PNG (768 MB of pixels).
func writeBomb(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "black.png")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := pixelstest.WritePNG(f, 16000, 16000, 8, pixelstest.RGB); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Every tool that decodes an image refuses a decompression bomb in its decoder (-max_pixels)
// instead of holding its pixels: rendering it as a first frame and fitting it fail, probing
// it reports its header, and no child's resident memory peaks above 300 MB (the bomb decoded
// peaks at 870 MB). The header checks upstream of the tools refuse such a file first; this is
// the wall behind them.
func TestDecodersRefuseABombWithinThePixelBudget(t *testing.T) {
	if os.Getenv(childPeakEnv) == "1" {
		decodersOnABomb(t)
		return
	}
	requireBins(t, "ffmpeg", "ffprobe")
	cmd := exec.Command(os.Args[0], "-test.run=^TestDecodersRefuseABombWithinThePixelBudget$", "-test.v")
	cmd.Env = append(os.Environ(), childPeakEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child test: %v\n%s", err, out)
	}
	_, after, ok := strings.Cut(string(out), "children peak RSS KiB: ")
	if !ok {
		t.Fatalf("no figure from the child:\n%s", out)
	}
	kib, err := strconv.ParseInt(strings.Fields(after)[0], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("peak resident memory of the tools on the bomb: %d MiB", kib>>10)
	if kib > 300<<10 {
		t.Errorf("a tool peaked at %d MiB on a 746 KB image; want under 300 MiB", kib>>10)
	}
}

func decodersOnABomb(t *testing.T) {
	tools := testTools(t)
	dir := t.TempDir()
	bomb := writeBomb(t, dir)
	ctx := context.Background()
	if _, err := tools.Probe(ctx, bomb); err != nil {
		t.Logf("probe: %v", err)
	}
	if err := tools.Render(ctx, RenderSpec{Width: 160, Height: 90, FPS: 10, Duration: 1, FirstFrame: bomb}, filepath.Join(dir, "r.mp4")); err == nil {
		t.Error("a render decoded the bomb")
	}
	if err := tools.FitImagePNG(ctx, bomb, filepath.Join(dir, "fit.png"), 1280, 720); err == nil {
		t.Error("the fit decoded the bomb")
	}
	if err := tools.FirstFrameJPG(ctx, bomb, filepath.Join(dir, "first.jpg")); err == nil {
		t.Error("the first frame decoded the bomb")
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		t.Fatal(err)
	}
	fmt.Printf("children peak RSS KiB: %d\n", ru.Maxrss)
}

// A media child runs under its memory limit: ffmpeg told to decode the bomb with no pixel
// bound fails under a 256 MiB limit instead of holding 768 MB.
func TestChildMemoryLimitStopsAnOversizedDecode(t *testing.T) {
	t.Parallel()
	requireBins(t, "ffmpeg")
	dir := t.TempDir()
	bomb := writeBomb(t, dir)
	err := run(context.Background(), proc{tool: "ffmpeg", bin: "ffmpeg", mem: 256 << 20,
		args: append(ffmpegArgs(), "-f", "image2pipe", "-i", fileURL(bomb), "-frames:v", "1", "-f", "null", "-")})
	if err == nil {
		t.Fatal("the decode ran to the end under a 256 MiB limit")
	}
	if d, e := (Tools{}).decodeMemory(), (Tools{}).encodeMemory(); d != DefaultDecodeMemory || e != DefaultEncodeMemory {
		t.Errorf("defaults %d, %d", d, e)
	}
	if d := (Tools{DecodeMemory: -1}).decodeMemory(); d != 0 {
		t.Errorf("a negative limit sets %d, want none", d)
	}
}
