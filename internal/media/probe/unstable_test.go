package probe

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/media/safefetch"
)

// A server that behaves one way on the first request and another way
// afterwards: the file must be rejected, not measured from two versions.
func TestProbeURL_ServerThatChangesBetweenRequestsIsUnstable(t *testing.T) {
	t.Parallel()
	orig, err := os.ReadFile(fixture(t, "moov-at-end"))
	if err != nil {
		t.Fatal(err)
	}
	grown := append(append([]byte{}, orig...), make([]byte, 100)...)
	cases := []struct {
		name  string
		later func(w http.ResponseWriter, r *http.Request)
	}{
		{"length changes", func(w http.ResponseWriter, r *http.Request) {
			http.ServeContent(w, r, "m", time.Time{}, bytes.NewReader(grown))
		}},
		{"ranges ignored later", func(w http.ResponseWriter, r *http.Request) {
			r.Header.Del("Range")
			http.ServeContent(w, r, "m", time.Time{}, bytes.NewReader(orig))
		}},
		{"wrong range returned", func(w http.ResponseWriter, r *http.Request) {
			r.Header.Set("Range", "bytes=0-99")
			http.ServeContent(w, r, "m", time.Time{}, bytes.NewReader(orig))
		}},
		{"etag appears", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("ETag", `"new"`)
			http.ServeContent(w, r, "m", time.Time{}, bytes.NewReader(orig))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) == 1 {
					http.ServeContent(w, r, "m", time.Time{}, bytes.NewReader(orig))
					return
				}
				tc.later(w, r)
			}))
			defer srv.Close()
			res, err := ProbeURL(context.Background(), loopbackClient(t), srv.URL, Options{AllowHTTP: true})
			assertIs(t, err, ErrUnstable)
			if res.BytesRead > 1<<20 {
				t.Fatalf("read %d bytes to find out", res.BytesRead)
			}
		})
	}
}

func TestProbeURL_CompressedAnswerIsRefused(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Range", "bytes 0-9/10")
		w.WriteHeader(http.StatusPartialContent)
		w.Write(make([]byte, 10))
	}))
	defer srv.Close()
	_, err := ProbeURL(context.Background(), loopbackClient(t), srv.URL, Options{AllowHTTP: true})
	assertIs(t, err, safefetch.ErrUnsupportedMedia)
}

// A moov over the in-memory limit is parsed in place: its sample tables
// are skipped by their headers, not read.
func TestProbeReaderAt_HugeMoovSkipsSampleTables(t *testing.T) {
	t.Parallel()
	bigTable := mkFull("stsz", 0, 0, be32(0), be32(1<<19), make([]byte, 4<<20))
	trak := mkBox("trak", tkhdBox(1, 320, 240), mkBox("mdia", mdhdBox(12800, 50*512), hdlrBox("vide"),
		mkBox("minf", mkBox("stbl", stsdVisual(320, 240), sttsBox([2]uint32{50, 512}), bigTable))))
	file := ftypBox("isom")
	file = append(file, mkBox("mdat", make([]byte, 300<<10))...)
	file = append(file, mkBox("moov", mvhdBox(1000, 2000), trak)...)
	res, err := probeBytes(file, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Duration != 2 || res.FPS != 25 || res.Width != 320 {
		t.Fatalf("%+v", res)
	}
	if res.BytesRead > 512<<10 {
		t.Fatalf("read %d bytes of a %d-byte file with a 4 MiB table", res.BytesRead, len(file))
	}
}

func TestPublicMessage_CoversProbeKinds(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, k := range []error{ErrNotMP4, ErrTruncated, ErrBadDuration, ErrTooLarge, ErrNoRanges, ErrUnstable} {
		msg := PublicMessage(k)
		if msg == "" || seen[msg] || msg == safefetch.PublicMessage(k) && k != ErrTooLarge {
			t.Errorf("%v: message %q not specific", k, msg)
		}
		seen[msg] = true
	}
	if PublicMessage(safefetch.ErrForbiddenAddress) != safefetch.PublicMessage(safefetch.ErrForbiddenAddress) {
		t.Error("safefetch kinds are not passed through")
	}
}

// The first answer sets the size of the buffer it is read into: a server that answers the
// opening 64 KiB request with a far larger range must be refused before anything is
// allocated for it or read from it, or one request could hold gigabytes of the process.
func TestProbeURL_FirstRangeLargerThanAskedIsUnstable(t *testing.T) {
	// Not parallel: the test reads the process's allocation counter.
	const claimed = 100 << 20
	cases := []struct {
		name         string
		contentRange string
	}{
		{"100 MiB of a 100 MiB file", fmt.Sprintf("bytes 0-%d/%d", claimed-1, claimed)},
		{"one byte more than asked", fmt.Sprintf("bytes 0-%d/%d", firstFetch, claimed)},
		{"16 GiB claimed", fmt.Sprintf("bytes 0-%d/%d", int64(16<<30)-2, int64(16<<30)-1)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Range", tc.contentRange)
				w.WriteHeader(http.StatusPartialContent)
				chunk := make([]byte, 32<<10)
				for range claimed / len(chunk) {
					if _, err := w.Write(chunk); err != nil {
						return
					}
				}
			}))
			defer srv.Close()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			res, err := ProbeURL(context.Background(), loopbackClient(t), srv.URL, Options{AllowHTTP: true})
			runtime.ReadMemStats(&after)
			assertIs(t, err, ErrUnstable)
			if res.BytesRead > 2*firstFetch {
				t.Errorf("read %d bytes of a range it never asked for", res.BytesRead)
			}
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
				t.Errorf("allocated %d bytes for a %d-byte request", grew, firstFetch)
			}
			srv.CloseClientConnections()
		})
	}
}

// A server may answer the opening request with less than was asked for (RFC 9110 lets it);
// the probe goes on from the bytes it has.
func TestProbeURL_ShorterFirstRangeIsMeasured(t *testing.T) {
	t.Parallel()
	orig, err := os.ReadFile(fixture(t, "moov-at-end"))
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			r.Header.Set("Range", "bytes=0-4095")
		}
		http.ServeContent(w, r, "m", time.Time{}, bytes.NewReader(orig))
	}))
	defer srv.Close()
	res, err := ProbeURL(context.Background(), loopbackClient(t), srv.URL, Options{AllowHTTP: true})
	if err != nil {
		t.Fatal(err)
	}
	if !(res.Duration > 0) {
		t.Fatalf("duration %v", res.Duration)
	}
}
