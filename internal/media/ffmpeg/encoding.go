package ffmpeg

import (
	"context"
	"errors"
	"fmt"
)

// ErrUnsupportedBitDepth means this ffmpeg has no MP4 video encoder for the
// requested bit depth.
var ErrUnsupportedBitDepth = errors.New("bit depth not supported by this ffmpeg")

// VideoEncoding is the encoder and pixel format Enhance uses for a bit depth.
type VideoEncoding struct {
	Encoder  string // "libx264" or "libx265"
	PixFmt   string // e.g. "yuv420p10le"
	BitDepth int    // what the output really has; below the request only for 16
}

// encodingCandidates lists, best first, the encodings acceptable for a
// requested depth; see the package documentation for the reasons.
func encodingCandidates(depth int) ([]VideoEncoding, error) {
	x264 := func(pf string, d int) VideoEncoding { return VideoEncoding{"libx264", pf, d} }
	x265 := func(pf string, d int) VideoEncoding { return VideoEncoding{"libx265", pf, d} }
	switch depth {
	case 0, 8:
		return []VideoEncoding{x264("yuv420p", 8)}, nil
	case 10:
		return []VideoEncoding{x265("yuv420p10le", 10), x264("yuv420p10le", 10)}, nil
	case 12:
		return []VideoEncoding{x265("yuv420p12le", 12)}, nil
	case 16:
		// Best effort, as the contract allows: the deepest we can store.
		return []VideoEncoding{x265("yuv420p12le", 12), x265("yuv420p10le", 10), x264("yuv420p10le", 10), x264("yuv420p", 8)}, nil
	}
	return nil, fmt.Errorf("%w: bit depth %d is not 8, 10, 12 or 16", ErrInvalidSpec, depth)
}

// VideoEncodingFor reports how Enhance would encode bitDepth (0 means 8)
// with this ffmpeg, or ErrUnsupportedBitDepth.
func (t Tools) VideoEncodingFor(ctx context.Context, bitDepth int) (VideoEncoding, error) {
	ctx, cancel := t.bound(ctx)
	defer cancel()
	return t.videoEncoding(ctx, bitDepth)
}

func (t Tools) videoEncoding(ctx context.Context, depth int) (VideoEncoding, error) {
	candidates, err := encodingCandidates(depth)
	if err != nil {
		return VideoEncoding{}, err
	}
	for _, c := range candidates {
		fmts, err := t.pixFmts(ctx, c.Encoder)
		if err != nil {
			return VideoEncoding{}, fmt.Errorf("list encoder formats: %w", err)
		}
		if fmts[c.PixFmt] {
			return c, nil
		}
	}
	return VideoEncoding{}, fmt.Errorf("%w: %d bits", ErrUnsupportedBitDepth, depth)
}

// crf maps a BitrateLevel to a constant rate factor for the encoder.
func crf(encoder, level string) (string, error) {
	x264 := map[string]string{"high": "18", "medium": "23", "low": "28"}
	x265 := map[string]string{"high": "23", "medium": "28", "low": "33"}
	table := x264
	if encoder == "libx265" {
		table = x265
	}
	v, ok := table[orDefault(level, "medium")]
	if !ok {
		return "", fmt.Errorf("%w: bitrate level %q is not low, medium or high", ErrInvalidSpec, level)
	}
	return v, nil
}
