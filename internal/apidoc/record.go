package apidoc

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
)

// MaxRecordedBody bounds each recorded request or response body. A larger body is passed on
// whole but recorded as a prefix with Exchange.Truncated set, and Check reports the exchange
// instead of validating it.
const MaxRecordedBody = 16 << 20

// Exchange is one recorded HTTP request and its response.
type Exchange struct {
	Method     string
	Path       string // the URL path as the server routed it, plus "?query" when there was one
	ReqHeader  http.Header
	ReqBody    []byte
	Status     int
	RespHeader http.Header // as the handler set them, plus the Content-Type net/http would sniff
	RespBody   []byte
	Truncated  bool // a body exceeded MaxRecordedBody; only its prefix is kept
}

func (ex Exchange) String() string {
	return fmt.Sprintf("%s %s → %d", ex.Method, ex.Path, ex.Status)
}

// Check reports, with t.Errorf, every exchange that does not conform to the document; see
// CheckExchange. Exchanges that match no documented operation are errors too: when a test
// probes unknown routes on purpose, filter those exchanges out with HasOperation and check
// them with ValidateUnrouted instead.
func (d *Doc) Check(t testing.TB, exchanges []Exchange) {
	t.Helper()
	for i, ex := range exchanges {
		if err := d.CheckExchange(ex); err != nil {
			t.Errorf("apidoc: exchange %d does not conform to %s:\n%v", i, d.path, err)
		}
	}
}

// ValidateAll is Check under another name.
func (d *Doc) ValidateAll(t testing.TB, exchanges []Exchange) {
	t.Helper()
	d.Check(t, exchanges)
}

// CheckExchange validates one exchange: the operation must exist, the response must conform,
// and when the status is 2xx the request must conform as well (a rejected request may break the
// document; an accepted one may not).
func (d *Doc) CheckExchange(ex Exchange) error {
	if ex.Truncated {
		return fmt.Errorf("%v: a body was larger than %d bytes and was not recorded whole", ex, MaxRecordedBody)
	}
	if _, _, _, err := d.lookup(ex.Method, ex.Path); err != nil {
		return fmt.Errorf("%v: %w", ex, err)
	}
	var errs []error
	if err := d.ValidateResponse(ex.Method, ex.Path, ex.Status, ex.RespHeader, ex.RespBody); err != nil {
		errs = append(errs, err)
	}
	if ex.Status >= 200 && ex.Status < 300 {
		if err := d.ValidateRequest(ex.Method, ex.Path, ex.ReqHeader, ex.ReqBody); err != nil {
			errs = append(errs, fmt.Errorf("accepted request: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Recorder collects exchanges from concurrent requests.
type Recorder struct {
	mu        sync.Mutex
	exchanges []Exchange
}

// Record appends an exchange; pass it to Middleware or Transport.
func (r *Recorder) Record(ex Exchange) {
	r.mu.Lock()
	r.exchanges = append(r.exchanges, ex)
	r.mu.Unlock()
}

// Exchanges returns a copy of the exchanges recorded so far, in completion order.
func (r *Recorder) Exchanges() []Exchange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Exchange(nil), r.exchanges...)
}

// Reset forgets the exchanges recorded so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.exchanges = nil
	r.mu.Unlock()
}

// Middleware serves next and calls record with every exchange once the handler has returned.
// The request body is recorded as the handler reads it, then completed from what the handler
// left unread, so handlers see the body exactly as they would without the middleware
// (MaxBytesReader limits, early rejections). Flush and http.ResponseController pass through.
func Middleware(next http.Handler, record func(Exchange)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ex := Exchange{Method: r.Method, Path: r.URL.Path, ReqHeader: r.Header.Clone()}
		if r.URL.RawQuery != "" {
			ex.Path += "?" + r.URL.RawQuery
		}
		r2 := r.WithContext(r.Context())
		var tee *teeBody
		if r.Body != nil && r.Body != http.NoBody {
			tee = &teeBody{rc: r.Body}
			r2.Body = tee
		}
		rw := &recordingWriter{ResponseWriter: w}
		next.ServeHTTP(rw, r2)
		if tee != nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(tee, MaxRecordedBody+1))
			ex.ReqBody, ex.Truncated = tee.buf.bytes(), tee.buf.over
		}
		rw.finish()
		ex.Status, ex.RespHeader, ex.RespBody = rw.status, rw.header, rw.body.bytes()
		ex.Truncated = ex.Truncated || rw.body.over
		record(ex)
	})
}

// capBuffer keeps the first MaxRecordedBody bytes written to it.
type capBuffer struct {
	b    bytes.Buffer
	over bool
}

func (c *capBuffer) write(p []byte) {
	if room := MaxRecordedBody - c.b.Len(); len(p) > room {
		p, c.over = p[:room], true
	}
	c.b.Write(p)
}

func (c *capBuffer) bytes() []byte {
	if c.b.Len() == 0 {
		return nil
	}
	return bytes.Clone(c.b.Bytes())
}

type teeBody struct {
	rc  io.ReadCloser
	buf capBuffer
}

func (t *teeBody) Read(p []byte) (int, error) {
	n, err := t.rc.Read(p)
	t.buf.write(p[:n])
	return n, err
}

func (t *teeBody) Close() error { return t.rc.Close() }

type recordingWriter struct {
	http.ResponseWriter
	status int
	header http.Header
	body   capBuffer
	sniff  bool // the first Write came before WriteHeader: net/http sniffs a Content-Type
}

func (w *recordingWriter) WriteHeader(code int) {
	if w.status == 0 {
		if code >= 100 && code < 200 && code != http.StatusSwitchingProtocols {
			w.ResponseWriter.WriteHeader(code) // informational: the final status is still to come
			return
		}
		w.status = code
		w.header = w.ResponseWriter.Header().Clone()
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.sniff = true
		w.WriteHeader(http.StatusOK)
	}
	n, err := w.ResponseWriter.Write(p)
	if w.sniff && w.body.b.Len() == 0 && n > 0 {
		if _, set := w.header["Content-Type"]; !set && w.header.Get("Content-Encoding") == "" {
			w.header.Set("Content-Type", http.DetectContentType(p[:n]))
		}
	}
	w.body.write(p[:n])
	return n, err
}

func (w *recordingWriter) Flush() {
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *recordingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish settles a handler that wrote nothing: net/http answers 200 with the headers as set.
func (w *recordingWriter) finish() {
	if w.status == 0 {
		w.status = http.StatusOK
		w.header = w.ResponseWriter.Header().Clone()
	}
}

// Transport is a client-side recorder: an http.RoundTripper that records every exchange it
// carries. It reads each response body completely before returning it (replayed from memory),
// so it does not suit streaming responses.
type Transport struct {
	Base   http.RoundTripper // nil means http.DefaultTransport
	Record func(Exchange)
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	ex := Exchange{Method: req.Method, Path: req.URL.Path, ReqHeader: req.Header.Clone()}
	if ex.Method == "" {
		ex.Method = http.MethodGet
	}
	if req.URL.RawQuery != "" {
		ex.Path += "?" + req.URL.RawQuery
	}
	if req.Body != nil && req.Body != http.NoBody {
		prefix, err := io.ReadAll(io.LimitReader(req.Body, MaxRecordedBody+1))
		if err != nil {
			_ = req.Body.Close()
			return nil, err
		}
		if len(prefix) > MaxRecordedBody {
			ex.Truncated = true
			ex.ReqBody = prefix[:MaxRecordedBody]
		} else {
			ex.ReqBody = prefix
		}
		orig := req.Body
		req = req.Clone(req.Context())
		req.Body = readCloser{io.MultiReader(bytes.NewReader(prefix), orig), orig}
	}
	resp, err := base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	ex.Status, ex.RespHeader = resp.StatusCode, resp.Header.Clone()
	if resp.Body != nil {
		prefix, err := io.ReadAll(io.LimitReader(resp.Body, MaxRecordedBody+1))
		if err != nil {
			_ = resp.Body.Close()
			return nil, err
		}
		orig := resp.Body
		if len(prefix) > MaxRecordedBody {
			ex.Truncated = true
			ex.RespBody = prefix[:MaxRecordedBody]
			resp.Body = readCloser{io.MultiReader(bytes.NewReader(prefix), orig), orig}
		} else {
			ex.RespBody = prefix
			_ = orig.Close()
			resp.Body = io.NopCloser(bytes.NewReader(prefix))
		}
	}
	if t.Record != nil {
		t.Record(ex)
	}
	return resp, nil
}

type readCloser struct {
	io.Reader
	io.Closer
}
