package safefetch

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strconv"
)

// Samples is an opt-in, sandbox-only source of built-in media. A request for an https URL
// whose host is exactly Host (on the default port) is answered by Handler inside the process:
// nothing is resolved or dialled, so no address is opened to tenants. Every other URL follows
// the policy unchanged, and the static checks still run on sample URLs.
//
// The zero Options has no Samples: a production configuration is unaffected. The service sets
// it only when its sandbox samples are on (serve --sandbox-samples; by default only with the
// embedded demo catalog). Host should be a name under a reserved top-level domain such as
// .example, which never resolves, so the same URL fails cleanly where samples are off.
type Samples struct {
	Host    string
	Handler http.Handler
}

func (s *Samples) serves(u *url.URL) bool {
	return s != nil && s.Handler != nil && s.Host != "" && u.Scheme == "https" &&
		u.Hostname() == s.Host && (u.Port() == "" || u.Port() == "443")
}

// roundTrip runs the handler and returns its answer as a response. Sample files are small,
// so buffering them is fine.
func (s *Samples) roundTrip(req *http.Request) (*http.Response, error) {
	w := &memWriter{header: http.Header{}}
	s.Handler.ServeHTTP(w, req)
	if w.code == 0 {
		w.code = http.StatusOK
	}
	n := int64(w.buf.Len())
	if cl, err := strconv.ParseInt(w.header.Get("Content-Length"), 10, 64); err == nil && req.Method == http.MethodHead {
		n = cl
	}
	return &http.Response{
		Status: strconv.Itoa(w.code) + " " + http.StatusText(w.code), StatusCode: w.code,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(bytes.NewReader(w.buf.Bytes())), ContentLength: n, Request: req,
	}, nil
}

type memWriter struct {
	header http.Header
	code   int
	buf    bytes.Buffer
}

func (w *memWriter) Header() http.Header { return w.header }

func (w *memWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *memWriter) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.buf.Write(p)
}
