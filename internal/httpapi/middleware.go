package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"os"
	"runtime/debug"
	"strconv"
	"sync"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/logctx"
	"mediagen/internal/netlimit"
)

// The one context value the middleware adds is a per-request record (reqInfo) that later
// layers fill in (principal, error code), so a request is cloned once, not once per layer. It
// is stored as the request's logctx carrier, so every line logged with the request's context —
// here or in the services it calls — carries its request id, and a job enqueued by the
// request stores it for the job's runs (docs/deploy.md#logs).

// reqInfo collects what the access log and metrics report about one request.
type reqInfo struct {
	requestID string
	principal *keys.Caller
	route     string // the matched pattern; "" when nothing matched
	spanRoute string // a finer pattern for the trace span only (a console page's); "": route
	keyID     string
	errCode   string
	status    int // the answer's status, once observe has seen it
	// body is the request's paced body (nil: none declared); writeError asks it whether it
	// timed out, whatever the handler's error has kept of the read error.
	body *netlimit.Body
}

// RequestID makes the record the request's logctx.Carrier.
func (i *reqInfo) RequestID() string { return i.requestID }

func infoFrom(ctx context.Context) *reqInfo {
	i, _ := logctx.Carried(ctx).(*reqInfo)
	return i
}

func requestIDFrom(ctx context.Context) string {
	if i := infoFrom(ctx); i != nil {
		return i.requestID
	}
	return ""
}

// requestID echoes a sane X-Request-Id or makes one, so a client's logs and ours share an id.
// It also attaches the request's record (reqInfo): the only context value the chain adds.
func (s *Server) requestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !validRequestID(id) {
			id = idgen.New("req")
		}
		w.Header().Set("X-Request-Id", id)
		info := &reqInfo{requestID: id}
		next.ServeHTTP(w, r.WithContext(logctx.WithCarrier(r.Context(), info)))
	})
}

func validRequestID(id string) bool {
	if id == "" || len(id) > 128 {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c < 0x21 || c > 0x7e {
			return false
		}
	}
	return true
}

// statusWriter remembers the status for logs and metrics, closes the connection after an
// answer that leaves a declared request body unread (see unreadBody), and keeps a write
// deadline that moves forward only while the client takes the answer (DefaultWriteStall).
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
	body   *netlimit.Body // nil: the request declared no body, or is not HTTP/1
	// deadline sets the connection's write deadline (nil: the writer has none, as in tests
	// on a recorder); stall is the time each piece of the answer gets.
	deadline func(time.Time) error
	stall    time.Duration
	// stalled: a write ran out of its deadline, so the client stopped reading.
	stalled bool
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
		w.closeIfUnread()
		// The headers go out when the handler ends or writes a body: a client that never
		// reads (with answers to earlier requests filling its window) cannot hold them.
		w.extend()
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write hands b on in pieces of writePiece bytes, each with a fresh deadline: a client that
// takes each piece within the stall time gets an answer of any size; one that stops reading
// gets a write error, and net/http closes the connection.
func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
		w.closeIfUnread()
	}
	n := 0
	for len(b) > 0 {
		p := b[:min(len(b), writePiece)]
		w.extend()
		m, err := w.ResponseWriter.Write(p)
		n += m
		w.bytes += int64(m)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				w.stalled = true
			}
			return n, err
		}
		b = b[m:]
	}
	return n, nil
}

// ReadFrom copies a body (a file link's, through http.ServeContent) with a pooled piece
// buffer instead of io.Copy's fresh 32 KiB one: a download blocked on a client that does not
// read holds 16 KiB, and a download allocates nothing per request.
func (w *statusWriter) ReadFrom(src io.Reader) (int64, error) {
	bp := pieces.Get().(*[]byte)
	defer pieces.Put(bp)
	var n int64
	for {
		m, rerr := src.Read(*bp)
		if m > 0 {
			k, werr := w.Write((*bp)[:m])
			n += int64(k)
			if werr != nil {
				return n, werr
			}
		}
		if rerr == io.EOF {
			return n, nil
		}
		if rerr != nil {
			return n, rerr
		}
	}
}

// pieces are the buffers of ReadFrom, one write piece each.
var pieces = sync.Pool{New: func() any { b := make([]byte, writePiece); return &b }}

func (w *statusWriter) extend() {
	if w.deadline != nil {
		_ = w.deadline(time.Now().Add(w.stall))
	}
}

// writeDeadline finds how to set w's write deadline: net/http's own writer has the method;
// a wrapper that unwraps to one is reached through a ResponseController.
func writeDeadline(w http.ResponseWriter) func(time.Time) error {
	if d, ok := w.(interface{ SetWriteDeadline(time.Time) error }); ok {
		return d.SetWriteDeadline
	}
	if _, ok := w.(interface{ Unwrap() http.ResponseWriter }); ok {
		return http.NewResponseController(w).SetWriteDeadline
	}
	return nil
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// closeIfUnread marks the answer "Connection: close" when the handler did not read the
// request's body to its end. Without it net/http, before sending the headers, reads (and
// discards) up to 256 KiB of the unread body to keep the connection: a client that declares a
// body and never sends it (an unauthenticated one, typically) then holds its refusal until the
// body's read deadline. With it the answer goes out at once and the connection is closed after it.
func (w *statusWriter) closeIfUnread() {
	if w.body != nil && !w.body.SawEOF() {
		w.Header().Set("Connection", "close")
	}
}

// unreadBodyGrace is how long a connection whose request body was left unread is kept after
// the answer: long enough to take in a body already on its way (closing a socket with unread
// input makes the kernel reset it, which can destroy the answer before the client reads it),
// far shorter than the body's read stall (DefaultBodyReadStall).
const unreadBodyGrace = 500 * time.Millisecond

// declaresBody reports whether r announces a body (a Content-Length above zero or a chunked
// one) on HTTP/1.x, the only protocol where the Connection header means anything.
func declaresBody(r *http.Request) bool {
	return r.ProtoMajor == 1 && r.Body != nil && r.Body != http.NoBody && r.ContentLength != 0
}

// observe writes the access log line and the request metrics.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		info := infoFrom(r.Context())
		if info == nil { // observe used without requestID (tests)
			info = &reqInfo{}
			r = r.WithContext(logctx.WithCarrier(r.Context(), info))
		}
		sw := &statusWriter{ResponseWriter: w, deadline: writeDeadline(w), stall: s.writeStall}
		if declaresBody(r) {
			// The body is paced from here (each piece within the read stall, the whole within
			// the body timeout); the headers had ReadHeaderTimeout.
			sw.body = netlimit.NewBody(r.Body, http.NewResponseController(w).SetReadDeadline, s.bodyPace)
			info.body = sw.body
			r.Body = sw.body
			// A stale deadline of the connection's last answer must not fail what net/http
			// writes before the handler does (a 100 Continue when the body is read).
			sw.extend()
		}
		next.ServeHTTP(sw, r)
		if sw.status == 0 {
			sw.WriteHeader(http.StatusOK) // now, so that closeIfUnread still can mark the answer
		}
		if sw.body != nil && !sw.body.SawEOF() {
			// After the handler, net/http reads what is left of the body (up to 256 KiB) before
			// it closes the connection, bounded only by the body's read deadline. The answer is
			// already out; give the client a moment to send what it promised, then stop.
			_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyGrace))
		}
		elapsed := time.Since(start)
		info.status = sw.status
		route := info.route
		if route == "" {
			route = "unmatched"
		}
		s.metrics.observe(route, r.Method, sw.status, elapsed)
		if sw.stalled {
			s.edge.stalled.Inc()
		}
		if !s.log.Enabled(r.Context(), slog.LevelInfo) {
			return
		}
		attrs := []any{"method", r.Method, "path", r.URL.Path, "route", route, "status", sw.status,
			"duration_ms", float64(elapsed.Microseconds()) / 1000, "bytes", sw.bytes,
			"request_id", requestIDFrom(r.Context())}
		if info.keyID != "" {
			attrs = append(attrs, "key_id", info.keyID)
		}
		if info.errCode != "" {
			attrs = append(attrs, "error_code", info.errCode)
		}
		s.log.InfoContext(r.Context(), "http request", attrs...)
	})
}

// recoverer turns a handler panic into a logged 500 envelope instead of a dropped connection.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.writeError(w, r, fmt.Errorf("panic: %v\n%s", p, debug.Stack()))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// readJSONBody enforces the POST rules every JSON route shares: an application/json content
// type and a bounded body. The bytes are returned whole because the contract decoders need the
// raw document (duplicate keys, exact paths).
func (s *Server) readJSONBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return nil, apierr.New(apierr.KindUnsupportedMediaType, "Content-Type must be application/json.")
	}
	if r.ContentLength > s.maxBody {
		return nil, apiErrTooLarge(s.maxBody)
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, s.maxBody))
	if err != nil {
		if _, ok := err.(*http.MaxBytesError); ok {
			return nil, apiErrTooLarge(s.maxBody)
		}
		if errors.Is(err, netlimit.ErrBodyTimeout) {
			return nil, err // writeError answers 408 and closes the connection
		}
		return nil, apierr.Invalid("", "The request body could not be read.")
	}
	return body, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
