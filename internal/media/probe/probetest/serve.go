package probetest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"time"
)

// Mode is how the test server misbehaves.
type Mode int

const (
	Ranges           Mode = iota // http.ServeContent: 206 with Content-Range and ETag
	IgnoreRange                  // answers 200 with the whole file
	NoContentLength              // ranges served, but chunked (no Content-Length)
	IgnoreRangeNoLen             // whole file, chunked
	ChangingETag                 // a new ETag on every request
)

func (m Mode) String() string {
	return [...]string{"ranges", "ignore-range", "no-content-length", "ignore-range-no-length", "changing-etag"}[m]
}

// Stats are what the server saw, to cross-check the probe's own figures.
type Stats struct {
	Requests  atomic.Int64
	BytesSent atomic.Int64
}

// Serve serves path at /media on 127.0.0.1 in the given mode. Close the
// server when done.
func Serve(path string, mode Mode) (*httptest.Server, *Stats) {
	st := &Stats{}
	modTime := time.Unix(1_700_000_000, 0)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := st.Requests.Add(1)
		f, err := os.Open(path)
		if err != nil {
			http.Error(w, "gone", http.StatusNotFound)
			return
		}
		defer f.Close()
		cw := &countingWriter{ResponseWriter: w, st: st, dropLength: mode == NoContentLength || mode == IgnoreRangeNoLen}
		switch mode {
		case IgnoreRange, IgnoreRangeNoLen:
			r.Header.Del("Range")
		}
		etag := `"v1"`
		if mode == ChangingETag {
			etag = fmt.Sprintf(`"v%d"`, n)
		}
		w.Header().Set("ETag", etag)
		http.ServeContent(cw, r, "media", modTime, f)
	}))
	return srv, st
}

type countingWriter struct {
	http.ResponseWriter
	st         *Stats
	dropLength bool
}

func (w *countingWriter) WriteHeader(code int) {
	if w.dropLength {
		w.Header().Del("Content-Length")
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write counts before writing: the client may finish reading before this
// handler returns, and the test must already see the bytes by then.
func (w *countingWriter) Write(p []byte) (int, error) {
	w.st.BytesSent.Add(int64(len(p)))
	n, err := w.ResponseWriter.Write(p)
	w.st.BytesSent.Add(int64(n - len(p)))
	return n, err
}
