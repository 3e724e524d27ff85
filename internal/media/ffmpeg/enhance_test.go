package ffmpeg

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// source renders a 2 s 30 fps clip to enhance.
func source(t *testing.T, tools Tools, w, h int, audio bool) string {
	t.Helper()
	return render(t, tools, RenderSpec{Width: w, Height: h, FPS: 30, Duration: 2, Audio: audio},
		filepath.Join(t.TempDir(), "src.mp4"))
}

func enhance(t *testing.T, tools Tools, in string, spec EnhanceSpec) Info {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out.mp4")
	if err := tools.Enhance(context.Background(), in, out, spec); err != nil {
		t.Fatalf("Enhance(%+v): %v", spec, err)
	}
	return probe(t, tools, out)
}

func TestEnhanceScalesAndResamples(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	landscape := source(t, tools, 320, 180, true)
	silent := source(t, tools, 320, 180, false)
	portrait := source(t, tools, 180, 320, true)
	// MP4 cannot carry PCM, so Enhance must re-encode it instead of copying.
	pcm := filepath.Join(t.TempDir(), "pcm.mov")
	ffmpegT(t, "-f", "lavfi", "-i", "testsrc2=s=320x180:r=30:d=2", "-f", "lavfi", "-i", "sine=d=2",
		"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "pcm_s16le", "-t", "2", pcm)

	tests := []struct {
		name       string
		in         string
		spec       EnhanceSpec
		w, h       int
		fps        float64
		audioCodec string // "" means no audio stream
	}{
		{"short side 480 rounds 853.3 to even 854", landscape, EnhanceSpec{ShortSide: 480}, 854, 480, 30, "aac"},
		{"odd short side is rounded down", landscape, EnhanceSpec{ShortSide: 481}, 854, 480, 30, "aac"},
		{"portrait keeps its orientation", portrait, EnhanceSpec{ShortSide: 480}, 480, 854, 30, "aac"},
		{"downscale works too", landscape, EnhanceSpec{ShortSide: 90}, 160, 90, 30, "aac"},
		{"fps 60 doubles the rate", landscape, EnhanceSpec{FPS: 60}, 320, 180, 60, "aac"},
		{"fps 0 keeps 30", landscape, EnhanceSpec{}, 320, 180, 30, "aac"},
		{"pcm audio becomes aac", pcm, EnhanceSpec{ShortSide: 180}, 320, 180, 30, "aac"},
		{"silent source stays silent", silent, EnhanceSpec{ShortSide: 360, FPS: 24}, 640, 360, 24, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			info := enhance(t, tools, tc.in, tc.spec)
			if info.Width != tc.w || info.Height != tc.h {
				t.Errorf("size = %dx%d, want %dx%d", info.Width, info.Height, tc.w, tc.h)
			}
			if !near(info.FPS, tc.fps, 0.01) {
				t.Errorf("fps = %v, want %v", info.FPS, tc.fps)
			}
			if !near(info.Duration, 2, 0.1) {
				t.Errorf("duration = %v, want 2 ± 0.1", info.Duration)
			}
			if info.AudioCodec != tc.audioCodec {
				t.Errorf("audio codec = %q, want %q", info.AudioCodec, tc.audioCodec)
			}
			if info.Container != "mp4" || info.VideoCodec != "h264" || info.PixFmt != "yuv420p" {
				t.Errorf("got %s %s %s, want mp4 h264 yuv420p", info.Container, info.VideoCodec, info.PixFmt)
			}
		})
	}
}

func TestEnhanceHitsTargetBitrate(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	// Noise defeats compression, so the encoder has to spend the budget
	// rather than undershoot it as it would on a flat test pattern.
	noisy := filepath.Join(t.TempDir(), "noisy.mp4")
	ffmpegT(t, "-f", "lavfi", "-i", "testsrc2=s=320x180:r=30:d=3,noise=alls=40:allf=t",
		"-c:v", "libx264", "-preset", "ultrafast", "-crf", "18", "-pix_fmt", "yuv420p", noisy)

	for _, kbps := range []int{300, 1200} {
		info := enhance(t, tools, noisy, EnhanceSpec{ShortSide: 360, BitrateKbps: kbps})
		got := float64(info.VideoBitRate) / 1000
		t.Logf("target %d kbit/s → video %.0f kbit/s", kbps, got)
		if got < 0.6*float64(kbps) || got > 1.4*float64(kbps) {
			t.Errorf("%d kbit/s target: video bitrate %.0f kbit/s, want within ±40%%", kbps, got)
		}
	}
}

func TestEnhanceBitrateLevelsOrderFileSizes(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	in := source(t, tools, 320, 180, false)
	var last int64
	for _, level := range []string{"low", "medium", "high"} {
		info := enhance(t, tools, in, EnhanceSpec{BitrateLevel: level})
		t.Logf("level %s → video %d bit/s", level, info.VideoBitRate)
		if info.VideoBitRate <= last {
			t.Errorf("level %s: %d bit/s, not above the previous level's %d", level, info.VideoBitRate, last)
		}
		last = info.VideoBitRate
	}
}

func TestEnhanceBitDepth(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	in := source(t, tools, 320, 180, true)
	for _, depth := range []int{8, 10, 12, 16} {
		t.Run(itoa(depth)+" bits", func(t *testing.T) {
			enc, err := tools.VideoEncodingFor(context.Background(), depth)
			if errors.Is(err, ErrUnsupportedBitDepth) {
				t.Skipf("this ffmpeg cannot encode %d-bit video into MP4: %v", depth, err)
			}
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d bits → %s %s (%d-bit)", depth, enc.Encoder, enc.PixFmt, enc.BitDepth)
			info := enhance(t, tools, in, EnhanceSpec{ShortSide: 180, BitDepth: depth})
			if info.PixFmt != enc.PixFmt || info.BitDepth != enc.BitDepth {
				t.Errorf("output %s (%d-bit), want %s (%d-bit)", info.PixFmt, info.BitDepth, enc.PixFmt, enc.BitDepth)
			}
			if depth <= 12 && enc.BitDepth != depth {
				t.Errorf("encoding gives %d bits for a request of %d", enc.BitDepth, depth)
			}
			wantCodec := map[string]string{"libx264": "h264", "libx265": "hevc"}[enc.Encoder]
			if info.VideoCodec != wantCodec || info.AudioCodec != "aac" {
				t.Errorf("codecs %s/%s, want %s/aac", info.VideoCodec, info.AudioCodec, wantCodec)
			}
		})
	}
}

func TestEnhanceRejectsBadInput(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	mp3 := filepath.Join(t.TempDir(), "tone.mp3")
	ffmpegT(t, "-f", "lavfi", "-i", "sine=d=1", mp3)
	video := source(t, tools, 160, 90, false)

	tests := []struct {
		name string
		in   string
		spec EnhanceSpec
		want error
	}{
		{"audio-only input", mp3, EnhanceSpec{}, ErrNoVideo},
		{"bit depth 9", video, EnhanceSpec{BitDepth: 9}, ErrInvalidSpec},
		{"unknown bitrate level", video, EnhanceSpec{BitrateLevel: "ultra"}, ErrInvalidSpec},
		{"negative fps", video, EnhanceSpec{FPS: -1}, ErrInvalidSpec},
		{"tiny short side", video, EnhanceSpec{ShortSide: 4}, ErrInvalidSpec},
		{"negative bitrate", video, EnhanceSpec{BitrateKbps: -5}, ErrInvalidSpec},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := tools.Enhance(context.Background(), tc.in, filepath.Join(dir, "out.mp4"), tc.spec)
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			assertOnlyFiles(t, dir)
		})
	}
}

func TestEnhanceInPlaceReplacesInput(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	in := source(t, tools, 160, 90, true)
	if err := tools.Enhance(context.Background(), in, in, EnhanceSpec{ShortSide: 180}); err != nil {
		t.Fatal(err)
	}
	if info := probe(t, tools, in); info.Width != 320 || info.Height != 180 {
		t.Errorf("size = %dx%d, want 320x180", info.Width, info.Height)
	}
	assertOnlyFiles(t, filepath.Dir(in), "src.mp4")
}

// rewriteMvhd sets the movie header's duration of the MP4 at path to secs, leaving the
// streams as they are: what a hostile source does to be measured shorter than it plays.
func rewriteMvhd(t *testing.T, path string, secs float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("mvhd"))
	if i < 0 || b[i+4] != 0 {
		t.Fatalf("no version 0 mvhd in %s", path)
	}
	// type(4) version/flags(4) creation(4) modification(4) timescale(4) duration(4)
	scale := binary.BigEndian.Uint32(b[i+16:])
	binary.BigEndian.PutUint32(b[i+20:], uint32(secs*float64(scale)))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// The enhancement's output ends at MaxSeconds, the length the task was priced for, whatever
// the source's header says: a source whose mvhd was rewritten to claim less is still cut
// there, and the probe's Longest sees through the header.
func TestEnhanceStopsAtMaxSeconds(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	honest := source(t, tools, 320, 180, true)
	lying := source(t, tools, 320, 180, true)
	rewriteMvhd(t, lying, 0.5)

	if info := probe(t, tools, lying); !near(info.Longest, 2, 0.1) {
		t.Errorf("rewritten header: duration %v, longest stream %v; want the longest near 2", info.Duration, info.Longest)
	}
	for _, tc := range []struct {
		name string
		in   string
		max  float64
		want float64
	}{
		{"honest source longer than priced", honest, 1, 1},
		{"rewritten header, streams longer than priced", lying, 1, 1},
		{"bound above the source changes nothing", honest, 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := enhance(t, tools, tc.in, EnhanceSpec{ShortSide: 180, MaxSeconds: tc.max})
			if !near(info.Duration, tc.want, 0.1) || info.Longest > tc.max+0.1 {
				t.Errorf("output %v s (longest stream %v), want %v", info.Duration, info.Longest, tc.want)
			}
		})
	}
}

// MaxSeconds bounds what the output measures, not where ffmpeg is told to stop: a container
// runs past -t by up to a video frame and an audio packet (a 2 s source cut at -t 1.000 used
// to measure 1.003 s, billed as 2 s). Every output here measures at most MaxSeconds, with
// and without audio, resampled or keeping the source timing.
func TestEnhanceOutputNeverMeasuresPastMaxSeconds(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	withAudio := source(t, tools, 320, 180, true)
	silent := source(t, tools, 320, 180, false)
	for _, tc := range []struct {
		name string
		in   string
		spec EnhanceSpec
	}{
		{"audio copied, source timing kept", withAudio, EnhanceSpec{ShortSide: 90, MaxSeconds: 1}},
		{"audio copied, resampled to 24 fps", withAudio, EnhanceSpec{ShortSide: 90, FPS: 24, MaxSeconds: 1}},
		{"audio copied, resampled to 15 fps (the contract's lowest)", withAudio, EnhanceSpec{ShortSide: 90, FPS: 15, MaxSeconds: 1.01}},
		{"no audio, 60 fps", silent, EnhanceSpec{ShortSide: 90, FPS: 60, MaxSeconds: 1.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := enhance(t, tools, tc.in, tc.spec)
			if info.Duration > tc.spec.MaxSeconds || info.Longest > tc.spec.MaxSeconds {
				t.Fatalf("output measures %v s (longest stream %v s), past MaxSeconds %v", info.Duration, info.Longest, tc.spec.MaxSeconds)
			}
			if info.Duration < tc.spec.MaxSeconds-0.2 {
				t.Errorf("output measures %v s: cut far more than the margin below %v", info.Duration, tc.spec.MaxSeconds)
			}
		})
	}
}

// A source the caller measured is not probed again: with no ffprobe to run, Enhance still
// scales it (and still refuses one the measurement says has no video).
func TestEnhanceUsesTheSourceAsMeasured(t *testing.T) {
	t.Parallel()
	tools := testTools(t)
	in := source(t, tools, 160, 90, true)
	measured := probe(t, tools, in)
	noProbe := tools
	noProbe.FFprobe = filepath.Join(t.TempDir(), "no-ffprobe")
	out := filepath.Join(t.TempDir(), "out.mp4")
	if err := noProbe.Enhance(context.Background(), in, out, EnhanceSpec{ShortSide: 180, Source: &measured}); err != nil {
		t.Fatalf("Enhance with the measured source: %v", err)
	}
	if info := probe(t, tools, out); info.Width != 320 || info.Height != 180 {
		t.Errorf("size = %dx%d, want 320x180", info.Width, info.Height)
	}
	if err := noProbe.Enhance(context.Background(), in, out, EnhanceSpec{ShortSide: 180}); err == nil {
		t.Error("Enhance without a measured source ran without ffprobe")
	}
	audioOnly := Info{HasAudio: true, Duration: 2}
	if err := noProbe.Enhance(context.Background(), in, out, EnhanceSpec{Source: &audioOnly}); !errors.Is(err, ErrNoVideo) {
		t.Errorf("a source measured without video: %v, want ErrNoVideo", err)
	}
}
