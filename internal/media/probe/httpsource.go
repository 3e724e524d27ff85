package probe

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"mediagen/internal/media/safefetch"
)

// firstFetch is the size of the opening range request: enough for ftyp, a
// faststart moov of a short clip, and the mdat header of a moov-at-end file.
const firstFetch = 64 << 10

// httpSource reads a URL through byte-range requests. It pins the file's
// identity from the first answer (total length and ETag) and rejects any
// later answer that disagrees: a file that changes under us could be
// measured from two different versions.
type httpSource struct {
	c    *safefetch.Client
	url  string
	ropt safefetch.RequestOptions
	size int64
	etag string
}

// openHTTP makes the first request. It returns the source (nil when the
// whole file came back in memory), the file size and the first bytes.
//
// A 200 answer to the range request means the server ignores Range: the
// body is then read in full, but only up to opt.FullReadMax; a larger or
// undeclared-and-larger body is rejected with ErrNoRanges.
func openHTTP(ctx context.Context, c *safefetch.Client, url string, opt Options) (*httpSource, int64, []byte, int64, error) {
	s := &httpSource{c: c, url: url, ropt: safefetch.RequestOptions{AllowHTTP: opt.AllowHTTP, NoRedirects: opt.NoRedirects}}
	resp, err := s.get(ctx, 0, firstFetch, opt.MaxFileSize)
	if err != nil {
		var se *safefetch.StatusError
		if errors.As(err, &se) && se.Code == http.StatusRequestedRangeNotSatisfiable {
			return nil, 0, nil, 0, fmt.Errorf("%w: empty file", ErrNotMP4)
		}
		if errors.Is(err, safefetch.ErrTooLarge) {
			return nil, 0, nil, 0, fmt.Errorf("%w: %w", ErrTooLarge, err)
		}
		return nil, 0, nil, 0, err
	}
	defer resp.Body.Close()
	if err := checkEncoding(resp.Header); err != nil {
		return nil, 0, nil, 0, err
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, end, total, err := parseContentRange(resp.Header.Get("Content-Range"))
		if err != nil {
			return nil, 0, nil, 0, err
		}
		if start != 0 || total <= 0 {
			return nil, 0, nil, 0, fmt.Errorf("%w: first range starts at %d of %d", ErrUnstable, start, total)
		}
		// The answer's own range sizes the buffer below: more than was asked for is the
		// server's word against our memory. Less is allowed (the probe reads on from there).
		if end >= firstFetch {
			return nil, 0, nil, 0, fmt.Errorf("%w: asked for %d bytes, got a range of %d", ErrUnstable, int64(firstFetch), end-start+1)
		}
		if total > opt.MaxFileSize {
			return nil, 0, nil, 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, total)
		}
		s.size, s.etag = total, resp.Header.Get("ETag")
		data, n, err := readExactly(resp.Body, end-start+1)
		return s, total, data, n, err
	case http.StatusOK:
		if resp.ContentLength > opt.MaxFileSize {
			return nil, 0, nil, 0, fmt.Errorf("%w: %d bytes", ErrTooLarge, resp.ContentLength)
		}
		if resp.ContentLength > opt.FullReadMax {
			return nil, 0, nil, 0, fmt.Errorf("%w: %d bytes without range support", ErrNoRanges, resp.ContentLength)
		}
		data, err := io.ReadAll(io.LimitReader(resp.Body, opt.FullReadMax+1))
		n := int64(len(data))
		if err != nil {
			return nil, 0, nil, n, err
		}
		if n > opt.FullReadMax {
			return nil, 0, nil, n, fmt.Errorf("%w: undeclared length over %d bytes", ErrNoRanges, opt.FullReadMax)
		}
		if resp.ContentLength >= 0 && n != resp.ContentLength {
			return nil, 0, nil, n, fmt.Errorf("%w: body shorter than declared", ErrTruncated)
		}
		return nil, n, data, n, nil
	default:
		return nil, 0, nil, 0, fmt.Errorf("%w: status %d to a range request", ErrNoRanges, resp.StatusCode)
	}
}

func (s *httpSource) get(ctx context.Context, off, n, maxBytes int64) (*safefetch.Response, error) {
	ro := s.ropt
	ro.Header = http.Header{"Range": {fmt.Sprintf("bytes=%d-%d", off, off+n-1)}}
	ro.MaxBytes = maxBytes
	return s.c.Get(ctx, s.url, ro)
}

// fetch implements fetcher for every request after the first.
func (s *httpSource) fetch(ctx context.Context, off, n int64) ([]byte, error) {
	resp, err := s.get(ctx, off, n, n)
	if err != nil {
		if errors.Is(err, safefetch.ErrTooLarge) {
			// More than the range we asked for: the server stopped
			// honouring ranges since the first answer.
			return nil, fmt.Errorf("%w: %w", ErrUnstable, err)
		}
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusPartialContent {
		// A 200 now, after a 206 before, means the server changed how it
		// serves the file; do not download it to find out why.
		return nil, fmt.Errorf("%w: status %d to a later range request", ErrUnstable, resp.StatusCode)
	}
	if err := checkEncoding(resp.Header); err != nil {
		return nil, err
	}
	start, end, total, err := parseContentRange(resp.Header.Get("Content-Range"))
	if err != nil {
		return nil, err
	}
	if total != s.size || start != off || end != off+n-1 {
		return nil, fmt.Errorf("%w: asked %d+%d of %d, got %d-%d of %d", ErrUnstable, off, n, s.size, start, end, total)
	}
	if etag := resp.Header.Get("ETag"); etag != s.etag {
		return nil, fmt.Errorf("%w: ETag changed", ErrUnstable)
	}
	data, _, err := readExactly(resp.Body, n)
	return data, err
}

// readExactly reads n bytes and then confirms the end of the body, which
// also lets the connection be reused.
func readExactly(r io.Reader, n int64) ([]byte, int64, error) {
	buf := make([]byte, n)
	m, err := io.ReadFull(r, buf)
	if err != nil {
		return nil, int64(m), fmt.Errorf("%w: range body shorter than its Content-Range: %w", ErrUnstable, err)
	}
	var one [1]byte
	if k, _ := r.Read(one[:]); k > 0 {
		return nil, int64(m + k), fmt.Errorf("%w: range body longer than its Content-Range", ErrUnstable)
	}
	return buf, n, nil
}

// parseContentRange accepts only "bytes start-end/total" with a known total;
// "*" totals and multipart answers are not usable for random access.
func parseContentRange(v string) (start, end, total int64, err error) {
	bad := fmt.Errorf("%w: unusable Content-Range", ErrNoRanges)
	rest, ok := strings.CutPrefix(v, "bytes ")
	if !ok {
		return 0, 0, 0, bad
	}
	rng, tot, ok := strings.Cut(rest, "/")
	if !ok {
		return 0, 0, 0, bad
	}
	a, b, ok := strings.Cut(rng, "-")
	if !ok {
		return 0, 0, 0, bad
	}
	start, err1 := strconv.ParseInt(a, 10, 64)
	end, err2 := strconv.ParseInt(b, 10, 64)
	total, err3 := strconv.ParseInt(tot, 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || start < 0 || end < start || end >= total {
		return 0, 0, 0, bad
	}
	return start, end, total, nil
}

// checkEncoding refuses compressed answers: byte offsets would then refer to
// the compressed stream (we never ask for compression).
func checkEncoding(h http.Header) error {
	if ce := h.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return fmt.Errorf("%w: content-encoding %s", safefetch.ErrUnsupportedMedia, ce)
	}
	return nil
}
