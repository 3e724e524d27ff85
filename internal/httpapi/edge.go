package httpapi

import (
	"log"
	"net/http"
	"time"

	"mediagen/internal/netlimit"
)

// The bounds of every listener: what a client, authenticated or not, can make the process
// hold. docs/http.md, "Timeouts and bounds", has them as a table with the same reasons.
const (
	// MaxHeaderBytes bounds a request's line and headers (net/http reads up to 4 KiB more
	// before it answers 431). The contract's headers are small — a Bearer key of 43 bytes, an
	// X-Request-Id of at most 128, a Range of at most 32 ranges —, and 16 KiB leaves room for
	// a console's cookies (browsers send up to about 8 KiB). Go's default, 1 MiB, let one
	// unauthenticated connection hold several megabytes (issue 25).
	MaxHeaderBytes = 16 << 10
	// ReadHeaderTimeout is how long a request's line and headers may take to arrive once its
	// first byte has: a header fits in one or two packets, and 5 s covers two lost packets'
	// retransmission (1 s, then 2 s) on a slow mobile link. It bounds how long a slow-header
	// client holds a connection.
	ReadHeaderTimeout = 5 * time.Second
	// IdleTimeout is how long a keep-alive connection waits for its next request. It is
	// longer than the 60 s idle timeout of common balancers (AWS ALB, nginx's
	// keepalive_timeout), so the balancer, not this server, closes a pooled connection: the
	// other order races a request sent on a connection being closed. When the listener is
	// full, idle connections are closed first anyway (internal/netlimit).
	IdleTimeout = 75 * time.Second
	// DefaultBodyReadStall is how long each readPiece bytes of a request body may take to
	// arrive while the server waits for them (the first piece from when the body's read
	// starts): the read deadline moves forward only while bytes flow, as the write side's
	// does, so a body of any size goes on at any rate above 1.6 KiB/s, and one that stops
	// arriving is cut 10 s later. A whole-body deadline cut uploads on ordinary links: at
	// 30 s a 32 MiB input_reference needed 1.1 MB/s (issue 41). 10 s covers a few lost
	// packets' retransmissions (1 s, 2 s, 4 s) on a bad mobile link.
	DefaultBodyReadStall = 10 * time.Second
	// readPiece is the unit of progress of DefaultBodyReadStall (its minimum rate), the same
	// 16 KiB as the write side's.
	readPiece = 16 << 10
	// DefaultBodyReadTimeout bounds a whole request body from the end of its headers, a
	// sanity bound above the rate: the largest body, an input_reference upload of 32 MiB
	// (DefaultMaxUploadBytes), goes through within it at 37 KB/s (300 kbit/s, a poor mobile
	// uplink), and without it a body sent just above the minimum rate would hold its
	// connection for hours (32 MiB at 1.6 KiB/s is 6 h). There is no http.Server
	// ReadTimeout: its deadline stays on the connection after the body and, when it passes,
	// cancels the request's context — it would cut a synchronous speech request that waits
	// for its audio (--speech-timeout, 60 s).
	DefaultBodyReadTimeout = 15 * time.Minute
	// DefaultWriteStall is how long a response may wait for the client to take each piece of
	// writePiece bytes: the deadline moves forward only while bytes flow, so a download of any
	// size goes on at any rate above 1.6 KiB/s, and a client that stops reading is cut off
	// after 10 s. (A whole-response WriteTimeout would cut a large file on a slow link, or
	// leave a stalled one for minutes.)
	DefaultWriteStall = 10 * time.Second
	// writePiece is the unit of progress of DefaultWriteStall (its minimum rate). 16 KiB is
	// half of io.Copy's buffer, so a file moves in two deadline updates per buffer.
	writePiece = 16 << 10
	// MaxRequestTarget bounds the path and query of a request, answered 414 by the service.
	// The longest target the API hands out is a signed file link (a key of at most a few
	// hundred bytes, a 64-digit signature); 8 KiB is the request line many proxies accept.
	// A target past MaxHeaderBytes gets net/http's 431 before the service's code runs.
	MaxRequestTarget = 8 << 10
	// DebugWriteTimeout bounds a response of --debug-listen: a CPU profile or trace runs for
	// the seconds it is asked (net/http/pprof refuses a duration at or past the timeout), and
	// two minutes is longer than any profile worth taking.
	DebugWriteTimeout = 2 * time.Minute
	// MetricsWriteTimeout bounds a response of --metrics-listen: a scrape's body is a few
	// hundred KiB at most, and Prometheus's own scrape timeout defaults to 10 s.
	MetricsWriteTimeout = 30 * time.Second
)

// BodyPace is how request bodies are read: stall and total override DefaultBodyReadStall
// and DefaultBodyReadTimeout (0: the default). The admin listener reads its bodies the same
// way.
func BodyPace(stall, total time.Duration) netlimit.Pace {
	if stall <= 0 {
		stall = DefaultBodyReadStall
	}
	if total <= 0 {
		total = DefaultBodyReadTimeout
	}
	return netlimit.Pace{Stall: stall, Piece: readPiece, Total: total}
}

// NewHTTPServer is the http.Server of the API listener: header, idle and size bounds. The
// body and write bounds are per request (observe), so that a handler's own wait is not cut.
func NewHTTPServer(h http.Handler, errLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          errLog,
	}
}

// NewOpsServer is the http.Server of an operator listener (--debug-listen, --metrics-listen):
// the API's header and idle bounds, a whole-response write timeout (these responses are
// short, or as long as a profile asked for), and no request bodies.
func NewOpsServer(h http.Handler, writeTimeout time.Duration, errLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           noBody(h),
		ReadHeaderTimeout: ReadHeaderTimeout,
		IdleTimeout:       IdleTimeout,
		WriteTimeout:      writeTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          errLog,
	}
}

// noBody answers a request that declares a body with 413 at once and closes its connection:
// the operator routes are GETs, and net/http would otherwise wait for up to 256 KiB of an
// unread body after the answer, with no read timeout on these servers.
func noBody(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !declaresBody(r) {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(unreadBodyGrace))
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody{Error: errorObject{
			Message: "This address takes no request body.", Type: "invalid_request_error", Code: "request_too_large"}})
	})
}
