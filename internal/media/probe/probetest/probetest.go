// Package probetest makes real media files with ffmpeg and serves them from
// 127.0.0.1, for the probe tests and the probe benchmark. It is test
// support: nothing in the service imports it.
package probetest

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// RequireFFmpeg skips the test when ffmpeg/ffprobe are missing, except
// under CI=true, where a missing tool is a broken environment.
func RequireFFmpeg(t testing.TB) {
	t.Helper()
	if err := HaveFFmpeg(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// HaveFFmpeg reports whether ffmpeg and ffprobe are on PATH.
func HaveFFmpeg() error {
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s not found: %w", tool, err)
		}
	}
	return nil
}

// Shape is one file layout the probe must handle.
type Shape struct {
	Name       string
	File       string   // output name; the extension picks the muxer
	Video      bool     // testsrc input
	Audio      bool     // sine input
	Args       []string // codec and muxer flags
	Fragmented bool
	Mehd       bool // a mehd box is added after muxing (ffmpeg never writes one)
}

// The clip is long enough for several 1 s fragments and short enough to
// encode in a fraction of a second; the noise makes the video files larger
// than 1 MiB, so "reads well under 1 MiB" means something.
const (
	clip        = "3.2"
	VideoWidth  = 320
	VideoHeight = 240
	VideoFPS    = 25
)

// Shapes are the layouts tested and benchmarked.
func Shapes() []Shape {
	h264 := []string{"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", "25"}
	aac := []string{"-c:a", "aac", "-b:a", "48k"}
	return []Shape{
		{Name: "faststart", File: "faststart.mp4", Video: true, Audio: true, Args: cat(h264, aac, []string{"-movflags", "+faststart"})},
		{Name: "moov-at-end", File: "moov_end.mp4", Video: true, Audio: true, Args: cat(h264, aac)},
		{Name: "mov", File: "clip.mov", Video: true, Audio: true, Args: []string{"-c:v", "mjpeg", "-q:v", "5", "-c:a", "pcm_s16le"}},
		{Name: "audio-only", File: "audio.m4a", Audio: true, Args: aac},
		{Name: "fragmented", File: "frag.mp4", Video: true, Audio: true, Fragmented: true, Args: cat(h264, aac, []string{"-movflags", "frag_keyframe+empty_moov"})},
		{Name: "fragmented-mehd", File: "frag_mehd.mp4", Video: true, Audio: true, Fragmented: true, Mehd: true, Args: cat(h264, aac, []string{"-movflags", "frag_keyframe+empty_moov"})},
	}
}

func cat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// Generate writes s into dir and returns its path.
func Generate(ctx context.Context, dir string, s Shape) (string, error) {
	out := filepath.Join(dir, s.File)
	args := []string{"-hide_banner", "-loglevel", "error", "-y"}
	if s.Video {
		args = append(args, "-f", "lavfi", "-i", "testsrc=size=320x240:rate=25,noise=alls=60:allf=t")
	}
	if s.Audio {
		args = append(args, "-f", "lavfi", "-i", "sine=frequency=440:sample_rate=48000")
	}
	args = append(args, "-t", clip)
	args = append(args, s.Args...)
	args = append(args, out)
	if err := run(ctx, "ffmpeg", args...); err != nil {
		return "", err
	}
	if s.Mehd {
		d, err := FFprobeDuration(ctx, out)
		if err != nil {
			return "", err
		}
		// ffmpeg's fragmented moov uses a 1000 Hz movie timescale. Rounded up, as an honest
		// muxer's header says at least what its samples play (the probe takes the samples'
		// length whenever they run past the header).
		if err := InsertMehd(out, uint64(math.Ceil(d*1000))); err != nil {
			return "", err
		}
	}
	return out, nil
}

// PNG writes a one-frame PNG: a real file that is not a video.
func PNG(ctx context.Context, dir string) (string, error) {
	out := filepath.Join(dir, "frame.png")
	return out, run(ctx, "ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "testsrc=size=64x48", "-frames:v", "1", out)
}

// FFprobeDuration is the reference: ffprobe's format duration in seconds.
func FFprobeDuration(ctx context.Context, path string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "default=nw=1:nk=1", path).Output()
	if err != nil {
		return 0, fmt.Errorf("ffprobe %s: %w", path, err)
	}
	return strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
}

func run(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, out)
	}
	return nil
}
