package probe

import (
	"errors"
	"strings"

	"mediagen/internal/media/pixels"
	"mediagen/internal/media/safefetch"
)

// kindError is a sentinel that also matches a safefetch kind, so callers
// that only know safefetch (errors.Is(err, safefetch.ErrUnsupportedMedia))
// still classify probe failures correctly.
type kindError struct {
	msg    string
	parent error
}

func (e *kindError) Error() string { return e.msg }
func (e *kindError) Unwrap() error { return e.parent }

// Error kinds. Every error from this package wraps one of them or a
// safefetch kind (network, address and status failures of the fetch).
var (
	// ErrNotMP4: no ftyp/moov structure, or a box layout no muxer writes.
	ErrNotMP4 error = &kindError{"probe: not an MP4/MOV file", safefetch.ErrUnsupportedMedia}
	// ErrTruncated: a box claims bytes the file does not have, or a box's
	// payload is malformed.
	ErrTruncated error = &kindError{"probe: truncated or corrupt box", safefetch.ErrUnsupportedMedia}
	// ErrBadDuration: duration absent, zero, or over Options.MaxDuration.
	ErrBadDuration error = &kindError{"probe: duration missing, zero or over the limit", safefetch.ErrUnsupportedMedia}
	// ErrTooLarge: file over Options.MaxFileSize.
	ErrTooLarge error = &kindError{"probe: file over the size cap", safefetch.ErrTooLarge}
	// ErrNoRanges: the server ignores Range and the file is larger than
	// Options.FullReadMax (or its length is not declared and it proves to be).
	ErrNoRanges error = &kindError{"probe: server does not serve byte ranges", safefetch.ErrUnsupportedMedia}
	// ErrUnstable: validators (ETag, length) changed between requests, or the
	// server answered a range request inconsistently.
	ErrUnstable error = &kindError{"probe: file changed while it was read", safefetch.ErrUnsupportedMedia}
	// ErrNoVideo: a well-formed MP4/MOV without a video track (audio only), where a caller
	// needs a video (see RequireVideo).
	ErrNoVideo error = &kindError{"probe: no video track", safefetch.ErrUnsupportedMedia}
	// ErrFrameTooLarge: a video track states a frame over the pixel budget
	// (pixels.MaxVideoFramePixels). The error also matches pixels.ErrOverBudget and carries
	// the *pixels.OverBudgetError with the size found.
	ErrFrameTooLarge error = &kindError{"probe: video frame over the pixel budget", safefetch.ErrUnsupportedMedia}
)

// RequireVideo is r, or ErrNoVideo when r has no video track.
func RequireVideo(r Result) error {
	if !r.HasVideo {
		return ErrNoVideo
	}
	return nil
}

var publicMessages = []struct {
	err error
	msg string
}{
	{ErrNotMP4, "The media is not an MP4 or MOV file."},
	{ErrTruncated, "The media file is truncated or damaged."},
	{ErrBadDuration, "The media duration is missing, zero or longer than accepted."},
	{ErrTooLarge, "The media file is larger than accepted."},
	{ErrNoRanges, "The media server must support byte-range requests for a file of this size."},
	{ErrUnstable, "The media file changed while it was being read; use a stable URL."},
	{ErrNoVideo, "The media has no video track."},
}

// PublicMessage is safefetch.PublicMessage with sentences for the probe
// kinds; like it, it never includes addresses or upstream text.
func PublicMessage(err error) string {
	var over *pixels.OverBudgetError
	if errors.As(err, &over) {
		s := over.Error()
		return strings.ToUpper(s[:1]) + s[1:] + "."
	}
	for _, m := range publicMessages {
		if errors.Is(err, m.err) {
			return m.msg
		}
	}
	return safefetch.PublicMessage(err)
}
