package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// Enhance limits.
const (
	MaxShortSide   = 8192
	MaxBitrateKbps = 500_000
)

// ErrNoVideo means the input has no video stream to enhance.
var ErrNoVideo = errors.New("input has no video stream")

// EnhanceSpec describes the output of Enhance.
type EnhanceSpec struct {
	// ShortSide is the target short side in pixels; the long side keeps the
	// aspect ratio, rounded to the nearest even number. Odd values are
	// rounded down to even. 0 keeps the source size (made even).
	ShortSide int
	// FPS resamples to this rate, duplicating or dropping frames; 0 keeps the
	// source timestamps.
	FPS int
	// BitrateKbps targets an average video bitrate; 0 uses BitrateLevel.
	BitrateKbps int
	// BitrateLevel is "low", "medium" (default) or "high"; see the package
	// documentation for the CRF values.
	BitrateLevel string
	// BitDepth is 8 (default when 0), 10, 12 or 16; see the package
	// documentation for what each becomes.
	BitDepth int
	// MaxSeconds, when > 0, is the longest the output may measure: the length the task was
	// priced for. ffmpeg is told to stop OutputCapMargin before it (a container runs a little
	// past -t), and an output that still measures longer is refused with ErrOverLength, so
	// whatever a source's headers claim, the output never measures past MaxSeconds.
	MaxSeconds float64
	// Source, when set, is the source as the caller measured it with Probe just before (the
	// file unchanged since): Enhance does not start ffprobe on it again. nil: Enhance probes.
	Source *Info
}

func (s EnhanceSpec) validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("enhance: %w: %s", ErrInvalidSpec, fmt.Sprintf(format, a...))
	}
	if s.ShortSide != 0 && (s.ShortSide < MinRenderSide || s.ShortSide > MaxShortSide) {
		return bad("short side %d outside %d..%d", s.ShortSide, MinRenderSide, MaxShortSide)
	}
	if s.FPS < 0 || s.FPS > MaxRenderFPS {
		return bad("fps %d outside 0..%d", s.FPS, MaxRenderFPS)
	}
	if s.MaxSeconds < 0 || (s.MaxSeconds > 0 && s.MaxSeconds <= OutputCapMargin) {
		return bad("max seconds %v: must be 0 (none) or above the %v s cap margin", s.MaxSeconds, OutputCapMargin)
	}
	if s.BitrateKbps < 0 || s.BitrateKbps > MaxBitrateKbps {
		return bad("bitrate %d kbit/s outside 0..%d", s.BitrateKbps, MaxBitrateKbps)
	}
	if _, err := crf("libx264", s.BitrateLevel); err != nil {
		return fmt.Errorf("enhance: %w", err)
	}
	if _, err := encodingCandidates(s.BitDepth); err != nil {
		return fmt.Errorf("enhance: %w", err)
	}
	return nil
}

// Enhance re-encodes the video at in into an MP4 at out as spec asks,
// keeping its first audio track. in and out may be the same file.
func (t Tools) Enhance(ctx context.Context, in, out string, spec EnhanceSpec) error {
	if err := spec.validate(); err != nil {
		return err
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()

	enc, err := t.videoEncoding(ctx, spec.BitDepth)
	if err != nil {
		return fmt.Errorf("enhance: %w", err)
	}
	var info Info
	if spec.Source != nil {
		info = *spec.Source
	} else if info, err = t.probe(ctx, in); err != nil {
		return fmt.Errorf("enhance: %w", err)
	}
	if !info.HasVideo {
		return fmt.Errorf("enhance: %w", ErrNoVideo)
	}
	args, err := t.enhanceArgs(in, spec, enc, info)
	if err != nil {
		return fmt.Errorf("enhance: %w", err)
	}
	return writeAtomic(out, func(tmp string) error {
		if err := run(ctx, proc{mem: t.encodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: append(args, fileURL(tmp))}); err != nil {
			return fmt.Errorf("enhance: %w", err)
		}
		if err := t.checkLength(ctx, tmp, spec.MaxSeconds); err != nil {
			return fmt.Errorf("enhance: %w", err)
		}
		return nil
	})
}

// mp4AudioCopy lists audio codecs MP4 holds as they are; others become AAC.
var mp4AudioCopy = map[string]bool{"aac": true, "mp3": true, "ac3": true, "eac3": true}

// enhanceArgs builds the command line up to, not including, the output file.
func (t Tools) enhanceArgs(in string, s EnhanceSpec, enc VideoEncoding, info Info) ([]string, error) {
	args := append(append(ffmpegArgs(), videoInput()...), "-i", fileURL(in), "-map", "0:v:0")
	switch {
	case !info.HasAudio:
		args = append(args, "-an")
	case mp4AudioCopy[info.AudioCodec]:
		args = append(args, "-map", "0:a:0", "-c:a", "copy")
	default:
		args = append(args, "-map", "0:a:0", "-c:a", "aac", "-b:a", "192k")
	}

	args = append(args, "-vf", strings.Join(enhanceFilters(s, enc), ","),
		"-c:v", enc.Encoder, "-preset", t.preset(), "-pix_fmt", enc.PixFmt)
	if s.BitrateKbps > 0 {
		args = append(args,
			"-b:v", itoa(s.BitrateKbps)+"k",
			"-maxrate", itoa(s.BitrateKbps*3/2)+"k",
			"-bufsize", itoa(s.BitrateKbps*2)+"k")
	} else {
		q, err := crf(enc.Encoder, s.BitrateLevel)
		if err != nil {
			return nil, err
		}
		args = append(args, "-crf", q)
	}
	if enc.Encoder == "libx265" {
		// hvc1 is the sample entry Apple players require; x265 logs its
		// banner itself unless told not to.
		params := "log-level=error"
		if t.Threads > 0 {
			params += ":pools=" + itoa(t.Threads)
		}
		args = append(args, "-tag:v", "hvc1", "-x265-params", params)
	}
	if s.FPS == 0 {
		// Keep the source timestamps; the default would resample a
		// variable-rate source to a guessed constant rate.
		args = append(args, "-fps_mode", "passthrough")
	}
	args = append(args,
		"-sn", "-dn",
		"-movflags", "+faststart",
		// Source metadata may name the upstream that made the video.
		"-map_metadata", "-1", "-map_chapters", "-1", "-fflags", "+bitexact",
	)
	args = append(args, t.threadArgs()...)
	args = append(args, capArgs(s.MaxSeconds)...)
	return append(args, "-f", "mp4"), nil
}

// enhanceFilters scales, resamples and converts. The "-2" in the scale
// expressions asks ffmpeg for the aspect-keeping side rounded to the
// nearest even number; evaluating it in ffmpeg (not from Probe) also sees
// the size after ffmpeg applied any rotation metadata.
func enhanceFilters(s EnhanceSpec, enc VideoEncoding) []string {
	var fs []string
	if s.ShortSide > 0 {
		short := itoa(s.ShortSide - s.ShortSide%2)
		fs = append(fs, filter("scale",
			"w", "if(gte(iw,ih),-2,"+short+")",
			"h", "if(gte(iw,ih),"+short+",-2)",
			"flags", "lanczos"))
	} else {
		fs = append(fs, filter("scale", "w", "trunc(iw/2)*2", "h", "trunc(ih/2)*2"))
	}
	fs = append(fs, "setsar=1")
	if s.FPS > 0 {
		fs = append(fs, filter("fps", "fps", itoa(s.FPS)))
	}
	return append(fs, filter("format", "pix_fmts", enc.PixFmt))
}
