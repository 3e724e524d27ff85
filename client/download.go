package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// Progress is told the bytes written so far and the total size (-1 while unknown). It is
// called from the downloading goroutine after every write; keep it quick.
type Progress func(done, total int64)

// ErrSourceChanged means the file behind a link changed while it was being downloaded into a
// writer that cannot start over (see Download).
var ErrSourceChanged = errors.New("mediagen: the file changed on the server during the download")

// dlState is what a resumed request must agree with: where the written part ends, and the
// validators and size of the file it came from.
type dlState struct {
	Offset       int64  `json:"-"`
	Total        int64  `json:"total"` // -1 unknown
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
}

// sink is where the bytes go; restart empties it when the server sends the whole file again.
type sink struct {
	w       io.Writer
	restart func() error // nil: cannot start over
	saved   func(dlState) error
}

// Download streams the file at rawURL (a result or speech link) into w, in constant memory.
// A connection that drops part-way is resumed with a range request, checked with If-Range
// against the first answer's ETag (or Last-Modified) and with Content-Range; at most
// MaxRetries resumptions follow each other without progress. If the file changed on the
// server after bytes were written, Download returns ErrSourceChanged (w cannot be emptied;
// DownloadFile can, and starts over). The API key is never sent: links carry their own
// signature, and may point to another host such as object storage.
func (c *Client) Download(ctx context.Context, rawURL string, w io.Writer, progress Progress) (int64, error) {
	st := dlState{Total: -1}
	err := c.fetch(ctx, rawURL, &st, sink{w: w}, progress)
	return st.Offset, err
}

// DownloadFile downloads rawURL to path. The bytes go to path+".part" (with what a resumption
// must match in path+".part.json"), renamed to path when complete. A call that finds such a
// partial file — after an error, a Ctrl-C or in another process, even with a freshly minted
// link to the same file — continues from where it stopped; a file that changed on the server
// meanwhile is downloaded again from the start.
func (c *Client) DownloadFile(ctx context.Context, rawURL, path string, progress Progress) (int64, error) {
	part, metaPath := path+".part", path+".part.json"
	st := dlState{Total: -1}
	f, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return 0, fmt.Errorf("mediagen: download: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 0 {
		if b, err := os.ReadFile(metaPath); err == nil && json.Unmarshal(b, &st) == nil && (st.ETag != "" || st.LastModified != "" || st.Total > 0) {
			st.Offset = fi.Size()
			if st.Total >= 0 && st.Offset > st.Total {
				st = dlState{Total: -1}
			}
		} else {
			st = dlState{Total: -1}
		}
	}
	if err := f.Truncate(st.Offset); err != nil {
		return 0, fmt.Errorf("mediagen: download: %w", err)
	}
	if _, err := f.Seek(st.Offset, io.SeekStart); err != nil {
		return 0, fmt.Errorf("mediagen: download: %w", err)
	}
	s := sink{
		w: f,
		restart: func() error {
			if err := f.Truncate(0); err != nil {
				return err
			}
			_, err := f.Seek(0, io.SeekStart)
			return err
		},
		saved: func(st dlState) error {
			b, _ := json.Marshal(st)
			return os.WriteFile(metaPath, b, 0o644)
		},
	}
	if err := c.fetch(ctx, rawURL, &st, s, progress); err != nil {
		return st.Offset, err
	}
	if err := f.Sync(); err != nil {
		return st.Offset, fmt.Errorf("mediagen: download: %w", err)
	}
	if err := f.Close(); err != nil {
		return st.Offset, fmt.Errorf("mediagen: download: %w", err)
	}
	if err := os.Rename(part, path); err != nil {
		return st.Offset, fmt.Errorf("mediagen: download: %w", err)
	}
	_ = os.Remove(metaPath)
	return st.Offset, nil
}

// fetch runs attempts until the file is complete. The retry budget is per stall: an attempt
// that wrote bytes resets it, so a long download over a flaky link keeps going.
func (c *Client) fetch(ctx context.Context, rawURL string, st *dlState, s sink, progress Progress) error {
	failures := 0
	for {
		before := st.Offset
		wait, err := c.fetchOnce(ctx, rawURL, st, s, progress)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if st.Offset > before {
			failures = 0
		}
		failures++
		if wait < 0 || failures > c.o.MaxRetries {
			return err
		}
		if wait == 0 {
			wait = c.backoff(failures - 1)
		}
		if err := sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// fetchOnce makes one request; wait as in Client.once.
func (c *Client) fetchOnce(ctx context.Context, rawURL string, st *dlState, s sink, progress Progress) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return -1, fmt.Errorf("mediagen: download: %w", err)
	}
	req.Header.Set("User-Agent", c.o.UserAgent)
	// Byte offsets must address the stored bytes, not a compressed stream.
	req.Header.Set("Accept-Encoding", "identity")
	if st.Offset > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(st.Offset, 10)+"-")
		switch {
		case st.ETag != "" && !strings.HasPrefix(st.ETag, "W/"):
			req.Header.Set("If-Range", st.ETag)
		case st.LastModified != "":
			req.Header.Set("If-Range", st.LastModified)
		}
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, fmt.Errorf("mediagen: download: %w", err)
	}
	defer res.Body.Close()
	switch {
	case res.StatusCode == http.StatusPartialContent && st.Offset > 0:
		start, total, ok := parseContentRange(res.Header.Get("Content-Range"))
		changed := !ok || start != st.Offset ||
			(st.Total >= 0 && total >= 0 && total != st.Total) ||
			(st.ETag != "" && res.Header.Get("ETag") != "" && res.Header.Get("ETag") != st.ETag)
		if changed {
			if err := restart(st, s); err != nil {
				return -1, err
			}
			return 0, errors.New("mediagen: download: the file changed; starting again")
		}
		if total >= 0 {
			st.Total = total
		}
	case res.StatusCode == http.StatusOK:
		// The whole file: the first answer, or the server ignored the range or judged the
		// file changed (If-Range). Either way it replaces what was written.
		if st.Offset > 0 {
			if err := restart(st, s); err != nil {
				return -1, err
			}
		}
		st.Total = res.ContentLength
		st.ETag, st.LastModified = res.Header.Get("ETag"), res.Header.Get("Last-Modified")
		if s.saved != nil {
			if err := s.saved(*st); err != nil {
				return -1, fmt.Errorf("mediagen: download: %w", err)
			}
		}
	case res.StatusCode == http.StatusRequestedRangeNotSatisfiable && st.Offset > 0 && st.Offset == st.Total:
		return -1, nil // already complete
	default:
		raw, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		e := parseError(res, raw)
		wait := time.Duration(-1)
		if res.StatusCode == http.StatusTooManyRequests || res.StatusCode >= 500 {
			wait = e.RetryAfter
		}
		if res.StatusCode == http.StatusRequestedRangeNotSatisfiable {
			if err := restart(st, s); err != nil {
				return -1, err
			}
			wait = 0
		}
		return wait, fmt.Errorf("mediagen: download: %w", e)
	}
	if progress != nil {
		progress(st.Offset, st.Total)
	}
	buf := make([]byte, 32<<10)
	for {
		n, rerr := res.Body.Read(buf)
		if n > 0 {
			if _, err := s.w.Write(buf[:n]); err != nil {
				return -1, fmt.Errorf("mediagen: download: write: %w", err)
			}
			st.Offset += int64(n)
			if progress != nil {
				progress(st.Offset, st.Total)
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			if ctx.Err() != nil {
				return -1, ctx.Err()
			}
			return 0, fmt.Errorf("mediagen: download interrupted at byte %d: %w", st.Offset, rerr)
		}
	}
	if st.Total >= 0 && st.Offset != st.Total {
		return 0, fmt.Errorf("mediagen: download: got %d of %d bytes", st.Offset, st.Total)
	}
	return -1, nil
}

func restart(st *dlState, s sink) error {
	if s.restart == nil {
		return ErrSourceChanged
	}
	if err := s.restart(); err != nil {
		return fmt.Errorf("mediagen: download: %w", err)
	}
	*st = dlState{Total: -1}
	return nil
}

// parseContentRange reads "bytes START-END/TOTAL" (TOTAL may be "*", giving -1).
func parseContentRange(v string) (start, total int64, ok bool) {
	rest, found := strings.CutPrefix(v, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, tot, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	first, _, found := strings.Cut(rng, "-")
	if !found {
		return 0, 0, false
	}
	start, err := strconv.ParseInt(first, 10, 64)
	if err != nil || start < 0 {
		return 0, 0, false
	}
	if tot == "*" {
		return start, -1, true
	}
	total, err = strconv.ParseInt(tot, 10, 64)
	if err != nil || total <= start {
		return 0, 0, false
	}
	return start, total, true
}
