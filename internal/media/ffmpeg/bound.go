package ffmpeg

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// OutputCapMargin is how far below a length bound ffmpeg is told to stop (-t), so that what
// it writes measures within the bound. An output runs past -t by what its last video frame
// and its last audio packet hold beyond the cut, and its container duration is rounded up to
// the millisecond:
//
//   - a video frame lasts at most 1/15 s = 0.0667 s at the contract's lowest fps (15), and
//     1/24 s for the sandbox's and the usual upstreams' 24 fps;
//   - an AAC packet holds 1024 samples, 0.0213 s at 48 kHz and 0.0232 s at 44.1 kHz; an MP3
//     frame 1152 samples, 0.048 s at 24 kHz (the speech engines');
//   - the streams overlap (the container's length is the longest stream's end), and the
//     millisecond rounding of mvhd adds at most 0.001 s.
//
// So a normal output ends at most max(0.0667, 0.048) + 0.001 ≈ 0.068 s past -t; 0.1 s
// leaves a third of that again. An output that runs further (a source of less than 10 fps
// cut mid-frame, a hostile audio track) is caught by measuring it: ErrOverLength.
const OutputCapMargin = 0.1

// ErrOverLength means an output still measured longer than its bound after it was cut
// OutputCapMargin before it: its last frame or packet lasts longer than any normal stream's.
var ErrOverLength = errors.New("output measures longer than its bound")

// capArgs is the -t of an output that must measure at most maxSeconds (none when 0).
func capArgs(maxSeconds float64) []string { return capArgsMargin(maxSeconds, OutputCapMargin) }

// capArgsMargin is the -t that stops margin before maxSeconds.
func capArgsMargin(maxSeconds, margin float64) []string {
	if maxSeconds <= 0 {
		return nil
	}
	// Rounded down to the millisecond: ffmpeg reads the decimal, and a cap one
	// microsecond above what was meant must not appear.
	cut := math.Floor((maxSeconds-margin)*1000) / 1000
	return []string{"-t", strconv.FormatFloat(max(cut, 0.001), 'f', 3, 64)}
}

// frameMargin is the cut margin for a video whose frames last 1/fps: a whole frame may end
// past the cut, so a video slower than 15 fps is cut that much earlier.
func frameMargin(fps float64) float64 {
	if fps <= 0 {
		return OutputCapMargin
	}
	return max(OutputCapMargin, 1/fps+0.002)
}

// Length is what a media file plays at most: the longer of its container's duration and its
// longest stream's. Bounds are checked against it.
func (i Info) Length() float64 { return max(i.Duration, i.Longest) }

// HeaderRounding is how far a stream may run past its container's duration in an honest
// file: the container's header is rounded to its timescale (a millisecond in ffmpeg's MP4s).
const HeaderRounding = 0.001

// Billable is the length a result is billed for: the container's duration (what ffprobe
// reports and the contract's examples use), or the longest stream's when that runs more
// than HeaderRounding past it — a container header rewritten to say less than the streams
// hold.
func (i Info) Billable() float64 {
	if i.Longest > i.Duration+HeaderRounding {
		return i.Longest
	}
	return i.Duration
}

// checkLength refuses an output at path that measures longer than maxSeconds (0: no bound).
func (t Tools) checkLength(ctx context.Context, path string, maxSeconds float64) error {
	if maxSeconds <= 0 {
		return nil
	}
	info, err := t.probe(ctx, path)
	if err != nil {
		return err
	}
	if l := info.Length(); l > maxSeconds {
		return fmt.Errorf("%w: %.3f s over %.3f s", ErrOverLength, l, maxSeconds)
	}
	return nil
}

// Trim writes in, cut to measure at most maxSeconds, to out (in and out may be the same
// file): an upstream's result that runs longer than its request is cut to the request's bound.
// The streams are copied when that is enough (a cut on packets: cheap, nothing re-encoded);
// when the copy fails or still measures too long (a video frame or audio packet lasting past
// the bound), it is re-encoded — video to H.264, audio to AAC in an MP4, or MP3 for an MP3.
// Both cut OutputCapMargin before the bound, or one frame and a little more for a video slower
// than 15 fps. A file ffmpeg cannot decode is an error; so is one whose re-encoded cut still
// measures longer (ErrOverLength: frames of very uneven length).
func (t Tools) Trim(ctx context.Context, in, out string, maxSeconds float64) error {
	if !(maxSeconds > OutputCapMargin) {
		return fmt.Errorf("trim: %w: bound %v s", ErrInvalidSpec, maxSeconds)
	}
	ctx, cancel := t.bound(ctx)
	defer cancel()
	info, err := t.probe(ctx, in)
	if err != nil {
		return fmt.Errorf("trim: %w", err)
	}
	if !info.HasVideo && !info.HasAudio {
		return fmt.Errorf("trim: %w", ErrNoVideo)
	}
	// The cut keeps its container: an MP4 or MOV stays one (an upstream's MOV result is stored
	// and served as video/quicktime), and speech audio stays MP3 or WAV (its key's extension
	// and content type say so).
	format, audioCodec := "mp4", "aac"
	switch {
	case info.Container == "mov":
		format = "mov"
	case !info.HasVideo && info.Container == "mp3":
		format, audioCodec = "mp3", "libmp3lame"
	case !info.HasVideo && info.Container == "wav":
		format, audioCodec = "wav", "pcm_s16le"
	}
	cut := capArgsMargin(maxSeconds, frameMargin(info.FPS))
	base := append(append(ffmpegArgs(), videoInput()...), "-i", fileURL(in), "-map", "0:v:0?", "-map", "0:a:0?", "-sn", "-dn",
		"-map_metadata", "-1", "-map_chapters", "-1", "-fflags", "+bitexact")
	copyArgs := append(append(append([]string{}, base...), "-c", "copy"), cut...)
	err = writeAtomic(out, func(tmp string) error {
		if err := run(ctx, proc{mem: t.encodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: append(copyArgs, "-f", format, fileURL(tmp))}); err != nil {
			return err
		}
		return t.checkLength(ctx, tmp, maxSeconds)
	})
	if err == nil || ctx.Err() != nil {
		return wrapTrim(err)
	}
	enc := append(append([]string{}, base...), "-c:a", audioCodec)
	if info.HasVideo {
		enc = append(enc, "-c:v", "libx264", "-preset", t.preset(), "-pix_fmt", "yuv420p", "-crf", renderCRF)
	}
	enc = append(append(enc, t.threadArgs()...), cut...)
	if format == "mp4" || format == "mov" {
		enc = append(enc, "-movflags", "+faststart")
	}
	return wrapTrim(writeAtomic(out, func(tmp string) error {
		if err := run(ctx, proc{mem: t.encodeMemory(), tool: "ffmpeg", bin: t.ffmpegBin(), args: append(enc, "-f", format, fileURL(tmp))}); err != nil {
			return err
		}
		return t.checkLength(ctx, tmp, maxSeconds)
	}))
}

func wrapTrim(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("trim: %w", err)
}
