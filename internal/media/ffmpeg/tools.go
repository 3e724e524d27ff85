package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"time"
)

// Defaults used when the matching Tools field is zero.
const (
	DefaultTimeout  = 5 * time.Minute
	DefaultFontFile = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"
	DefaultPreset   = "veryfast"
)

// Presets are the x264/x265 speed presets, fastest first ("placebo" is left out: it is
// for experiments, many times slower than veryslow for no visible gain).
var Presets = []string{"ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"}

// KnownPreset reports whether p is one of Presets.
func KnownPreset(p string) bool { return slices.Contains(Presets, p) }

// Tools locates the binaries and holds the limits for every run. The zero
// value is ready to use: binaries are looked up on PATH.
type Tools struct {
	FFmpeg  string // path or name of ffmpeg; "" means "ffmpeg" on PATH
	FFprobe string // "" means "ffprobe" on PATH
	Espeak  string // "" means "espeak-ng" on PATH

	// FontFile is the TrueType font for text drawn by Render.
	FontFile string
	// Timeout bounds each public method as a whole (all processes it runs).
	Timeout time.Duration
	// Preset is the libx264/libx265 speed preset ("ultrafast" … "veryslow").
	Preset string
	// Threads caps encoder and filter threads; 0 lets ffmpeg decide. Useful
	// on a shared machine, where ffmpeg would otherwise take every core.
	Threads int
	// Budget, when set, admits every process the methods start (gate.go); the wait for it
	// counts against Timeout. nil starts them at once.
	Budget Gate
	// DecodeMemory and EncodeMemory are the memory limits (bytes) of the children that only
	// decode and of those that encode (rlimit.go); 0 uses DefaultDecodeMemory and
	// DefaultEncodeMemory, a negative value sets none.
	DecodeMemory, EncodeMemory int64
}

func (t Tools) ffmpegBin() string  { return orDefault(t.FFmpeg, "ffmpeg") }
func (t Tools) ffprobeBin() string { return orDefault(t.FFprobe, "ffprobe") }
func (t Tools) espeakBin() string  { return orDefault(t.Espeak, "espeak-ng") }
func (t Tools) fontFile() string   { return orDefault(t.FontFile, DefaultFontFile) }
func (t Tools) preset() string     { return orDefault(t.Preset, DefaultPreset) }

func (t Tools) timeout() time.Duration {
	if t.Timeout > 0 {
		return t.Timeout
	}
	return DefaultTimeout
}

// bound applies the per-call timeout; every public method that runs a
// process starts with it.
func (t Tools) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(withGate(ctx, t.Budget), t.timeout())
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// threadArgs limits ffmpeg's worker threads; they are output options, so
// they must come after the inputs.
func (t Tools) threadArgs() []string {
	if t.Threads <= 0 {
		return nil
	}
	n := strconv.Itoa(t.Threads)
	return []string{"-threads", n, "-filter_threads", n, "-filter_complex_threads", n}
}

// ffmpegArgs starts every ffmpeg invocation: quiet stderr (errors only, so the
// captured tail is useful), never read stdin (it would steal the terminal or
// block), always overwrite our own temporary output.
func ffmpegArgs() []string {
	return []string{"-hide_banner", "-nostdin", "-nostats", "-loglevel", "error", "-y"}
}

// Check reports whether ffmpeg, ffprobe and espeak-ng run, ffmpeg has the
// encoders and filters this package uses, and the font file exists. The error
// lists everything that is missing, not only the first problem.
//
// A check that passed is remembered for the rest of the process (per binaries and font): tools
// found runnable stay so while it runs, and a check starts three processes, which every
// service start and every reload of local engines would pay again.
func (t Tools) Check(ctx context.Context) error {
	key := [4]string{t.ffmpegBin(), t.ffprobeBin(), t.espeakBin(), t.fontFile()}
	if _, ok := checksPassed.Load(key); ok {
		return nil
	}
	if err := t.check(ctx); err != nil {
		return err
	}
	checksPassed.Store(key, true)
	return nil
}

// checksPassed holds the keys of the checks that passed in this process.
var checksPassed sync.Map

func (t Tools) check(ctx context.Context) error {
	ctx, cancel := t.bound(ctx)
	defer cancel()

	var errs []error
	ffmpegOK := true
	for _, c := range []struct{ tool, bin, flag string }{
		{"ffmpeg", t.ffmpegBin(), "-version"},
		{"ffprobe", t.ffprobeBin(), "-version"},
		{"espeak-ng", t.espeakBin(), "--version"},
	} {
		if err := run(ctx, proc{mem: t.decodeMemory(), tool: c.tool, bin: c.bin, args: []string{c.flag}}); err != nil {
			errs = append(errs, fmt.Errorf("%s not runnable: %w", c.tool, err))
			ffmpegOK = ffmpegOK && c.tool != "ffmpeg"
		}
	}
	// Asking a missing ffmpeg for its features would only repeat the error.
	if ffmpegOK {
		errs = append(errs, t.checkFFmpegFeatures(ctx)...)
	}
	if _, err := os.Stat(t.fontFile()); err != nil {
		errs = append(errs, fmt.Errorf("font file: %w", err))
	}
	return errors.Join(errs...)
}

func (t Tools) checkFFmpegFeatures(ctx context.Context) []error {
	var errs []error
	encoders, err := t.listNames(ctx, "-encoders")
	if err != nil {
		return []error{err}
	}
	for _, e := range []string{"libx264", "aac", "libmp3lame", "mjpeg", "pcm_s16le"} {
		if !encoders[e] {
			errs = append(errs, fmt.Errorf("ffmpeg lacks encoder %s", e))
		}
	}
	filters, err := t.listNames(ctx, "-filters")
	if err != nil {
		return append(errs, err)
	}
	for _, f := range []string{"drawtext", "overlay", "scale", "pad", "fps", "testsrc2", "sine"} {
		if !filters[f] {
			errs = append(errs, fmt.Errorf("ffmpeg lacks filter %s", f))
		}
	}
	return errs
}
