package probe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"

	"mediagen/internal/media/pixels"
	"mediagen/internal/media/safefetch"
)

// ProbeURL measures the MP4/MOV at url through c with byte-range requests.
func ProbeURL(ctx context.Context, c *safefetch.Client, url string, opt Options) (Result, error) {
	opt = opt.withDefaults()
	src, size, first, n, err := openHTTP(ctx, c, url, opt)
	if err != nil {
		return Result{}, err
	}
	var f fetcher = src
	if src == nil {
		// The server sent the whole (small) file; probe it from memory.
		f = readerAtFetcher{bytes.NewReader(first)}
	}
	r := newCachedReader(ctx, f, size)
	r.seed(first)
	res, err := probe(ctx, r, size, opt)
	res.Requests, res.BytesRead = 1, n
	if src != nil {
		reqs, bytes := r.stats()
		res.Requests += reqs
		res.BytesRead += bytes
	}
	return res, err
}

// ProbeFile measures the MP4/MOV at path as a submission measures a remote one: the longer of
// its header and its samples (the local engines and the result bounds check files with it).
func ProbeFile(ctx context.Context, path string, opt Options) (Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Result{}, err
	}
	return ProbeReaderAt(ctx, f, st.Size(), opt)
}

// ProbeReaderAt measures a local file (the service's stored copies).
// Requests counts ReadAt calls on r.
func ProbeReaderAt(ctx context.Context, r io.ReaderAt, size int64, opt Options) (Result, error) {
	opt = opt.withDefaults()
	if size > opt.MaxFileSize {
		return Result{}, fmt.Errorf("%w: %d bytes", ErrTooLarge, size)
	}
	if size <= 0 {
		return Result{}, fmt.Errorf("%w: empty file", ErrNotMP4)
	}
	cr := newCachedReader(ctx, readerAtFetcher{r}, size)
	res, err := probe(ctx, cr, size, opt)
	res.Requests, res.BytesRead = cr.stats()
	return res, err
}

// probe walks the top-level boxes by their headers, so an mdat costs one
// header read however large it is, and a moov at the end costs one more
// region.
func probe(ctx context.Context, r *cachedReader, size int64, opt Options) (res Result, err error) {
	var m *movie
	boxes := 0
	for off := int64(0); off < size; {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if boxes++; boxes > opt.MaxBoxes {
			return res, fmt.Errorf("%w: more than %d top-level boxes", ErrNotMP4, opt.MaxBoxes)
		}
		if boxes == 1 && size < 8 {
			return res, fmt.Errorf("%w: %d bytes", ErrNotMP4, size)
		}
		h, err := readBoxHeader(r, off, size)
		if boxes == 1 && h.typ != "" && !firstBoxTypes[h.typ] {
			return res, fmt.Errorf("%w: starts with %q", ErrNotMP4, h.typ)
		}
		if err != nil {
			return res, err
		}
		switch h.typ {
		case "ftyp":
			if boxes == 1 {
				res.Brand, err = readBrand(r, h)
			}
		case "moov":
			if m != nil {
				return res, fmt.Errorf("%w: second moov", ErrNotMP4)
			}
			m, err = withBox(r, h, parseMoov)
			if err == nil && m.fragmented {
				for _, t := range m.tracks {
					t.running = t.moovSamples.duration
					t.fragEnd = t.running
				}
				// Fragment headers are small and spread out: fetch less per
				// region from here on.
				r.setReadahead(blockSize)
			}
		case "moof":
			if m == nil || !m.fragmented {
				return res, fmt.Errorf("%w: fragment without a fragmented moov", ErrNotMP4)
			}
			_, err = withBox(r, h, func(br boxReader) (struct{}, error) { return struct{}{}, parseMoof(br, m) })
		}
		if err != nil {
			return res, err
		}
		off = h.end()
	}
	if m == nil {
		return res, fmt.Errorf("%w: no moov box", ErrNotMP4)
	}
	return compose(res, m, opt)
}

// withBox parses a box in memory when it is small (one request for all of
// it) and in place otherwise (only the parts the parser touches are read).
func withBox[T any](r *cachedReader, h boxHeader, parse func(boxReader) (T, error)) (T, error) {
	if h.size <= inlineBoxMax {
		buf := make([]byte, h.size)
		if _, err := r.ReadAt(buf, h.off); err != nil {
			var zero T
			return zero, err
		}
		return parse(bytes.NewReader(buf))
	}
	return parse(io.NewSectionReader(r, h.off, h.size))
}

func readBrand(r io.ReaderAt, h boxHeader) (string, error) {
	if h.size-h.hdrLen < 8 {
		return "", fmt.Errorf("%w: short ftyp", ErrNotMP4)
	}
	var b [4]byte
	if _, err := r.ReadAt(b[:], h.payloadOff()); err != nil {
		return "", err
	}
	return strings.TrimRight(string(b[:]), " \x00"), nil
}

// compose turns the parsed movie into a Result. The duration is the longer of the header's
// (mvhd, mehd) and the samples' own length. The header is what ffprobe reports and what an
// honest file agrees with to the millisecond, but it is one field anyone can rewrite, while a
// decoder plays the samples: a reservation computed from a header shorter than the samples by
// any amount is one the engine's output can run past (a 1.2 s file whose headers said 0.75 s
// was reserved for 1 s and charged 2 s). A header longer than its samples is kept: a
// reservation may be larger than its charge, never smaller.
func compose(res Result, m *movie, opt Options) (Result, error) {
	res.Fragmented = m.fragmented
	for _, t := range m.tracks {
		switch t.handler {
		case "vide":
			// A frame over the budget is refused from the header, before any decoder holds
			// it; a decoder's own limit (ffmpeg's -max_pixels) catches a header that
			// understates what the bitstream holds.
			if err := pixels.CheckVideoFrame(t.largestW, t.largestH); err != nil {
				return res, fmt.Errorf("%w: %w", ErrFrameTooLarge, err)
			}
			if !res.HasVideo {
				res.HasVideo = true
				res.Width, res.Height = t.width, t.height
				res.FPS = trackFPS(t)
			}
		case "soun":
			res.HasAudio = true
		}
	}
	var secs float64
	switch {
	case m.fragmented && m.hasMehd && m.mehd > 0:
		secs, res.DurationSource = ratio(m.mehd, m.timescale), "mehd"
		if frags := fragmentedDuration(m); secs > 0 && frags > secs {
			secs, res.DurationSource = frags, "fragments"
		}
	case m.fragmented:
		secs, res.DurationSource = fragmentedDuration(m), "fragments"
	default:
		secs, res.DurationSource = movieDuration(m), "mvhd"
		if tracks := trackSpan(m); secs > 0 && tracks > secs {
			secs, res.DurationSource = tracks, "tracks"
		}
	}
	if !(secs > 0) || math.IsInf(secs, 0) {
		return res, fmt.Errorf("%w: %v s", ErrBadDuration, secs)
	}
	if secs > opt.MaxDuration.Seconds() {
		return res, fmt.Errorf("%w: %.3f s over %v", ErrBadDuration, secs, opt.MaxDuration)
	}
	res.Duration = secs
	return res, nil
}

// movieDuration is mvhd's duration, as ffprobe reports it. A muxer that left
// it unset (0 or all ones) falls back to the longest track.
func movieDuration(m *movie) float64 {
	if m.duration != 0 && m.duration != math.MaxUint32 && m.duration != math.MaxUint64 {
		return ratio(m.duration, m.timescale)
	}
	var best float64
	for _, t := range m.tracks {
		best = max(best, ratio(t.moovSamples.duration, t.timescale))
	}
	return best
}

// trackSpan is the longest a track of an unfragmented file plays: its samples (stts) from
// its edit list's media_time on, or the edit list's own span where that is shorter (a
// trimmed track), after any initial empty edit.
func trackSpan(m *movie) float64 {
	var best float64
	for _, t := range m.tracks {
		if t.timescale == 0 || t.moovSamples.duration == 0 {
			continue
		}
		media := ratio(t.moovSamples.duration-min(uint64(max(t.mediaTime, 0)), t.moovSamples.duration), t.timescale)
		if t.edits > 0 && m.timescale > 0 {
			edited := ratio(t.editSpan, m.timescale)
			if t.edits > 1 {
				// Several edits may show the same media more than once.
				media = edited
			} else {
				media = min(media, edited)
			}
		}
		best = max(best, ratio(t.emptyEdit, max(m.timescale, 1))+media)
	}
	return best
}

// fragmentedDuration is the presentation span over all tracks: the latest
// track end minus the earliest track start, where an edit list's media_time
// starts a track early (AAC priming) and an empty edit starts it late. This
// matches how ffprobe reports fragmented files.
func fragmentedDuration(m *movie) float64 {
	first := true
	var lo, hi float64
	for _, t := range m.tracks {
		if t.fragEnd == 0 || t.timescale == 0 {
			continue
		}
		start := ratio(t.emptyEdit, m.timescale) - ratio(uint64(max(t.mediaTime, 0)), t.timescale)
		end := start + ratio(t.fragEnd, t.timescale)
		if first || start < lo {
			lo = start
		}
		if first || end > hi {
			hi = end
		}
		first = false
	}
	return hi - lo
}

func trackFPS(t *track) float64 {
	totals := t.moovSamples
	if t.frag.samples > totals.samples {
		totals = t.frag
	}
	d := totals.dominantDelta()
	if d == 0 || t.timescale == 0 {
		return 0
	}
	return float64(t.timescale) / float64(d)
}

func ratio(n uint64, scale uint32) float64 {
	if scale == 0 {
		return 0
	}
	return float64(n) / float64(scale)
}

// isKind reports errors that already say what went wrong.
func isKind(err error) bool {
	for _, k := range []error{ErrNotMP4, ErrTruncated, ErrBadDuration, ErrTooLarge, ErrNoRanges, ErrUnstable,
		safefetch.ErrUnsupportedMedia, safefetch.ErrTooLarge, safefetch.ErrTimeout, safefetch.ErrUnreachable,
		safefetch.ErrHTTPStatus, safefetch.ErrForbiddenAddress, safefetch.ErrForbiddenScheme, safefetch.ErrBadURL,
		safefetch.ErrRedirect, context.Canceled, context.DeadlineExceeded} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}
