package netlimit

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"mediagen/internal/apierr"
)

// Pace bounds the read of a request body the way the write side bounds an answer: the
// connection's read deadline moves forward only while bytes arrive, so a body of any size
// goes on at any rate above Piece per Stall, and a body that stops arriving is cut Stall
// after it stopped. Total is a sanity bound on the whole body, from the end of its headers:
// without it a large body sent just above the minimum rate would hold its connection for
// hours. docs/http.md, "Timeouts and bounds", has the numbers and why.
type Pace struct {
	// Stall is how long each Piece bytes of the body may take to arrive, counted only while
	// the server is waiting for them (a server busy elsewhere, storing the last part of an
	// upload say, does not use up the client's time). The first piece's clock starts when
	// the body's read starts; a body smaller than a piece must arrive whole within Stall.
	Stall time.Duration
	// Piece is the unit of progress: Piece/Stall is the minimum rate.
	Piece int
	// Total bounds the whole body from the end of the request's headers.
	Total time.Duration
}

// MinRate is the rate below which a body is cut, in bytes a second.
func (p Pace) MinRate() float64 { return float64(p.Piece) / p.Stall.Seconds() }

// ErrBodyTimeout is in the chain of the error a paced body returns once its deadline has
// passed, beside os.ErrDeadlineExceeded and the *apierr.Error that answers it (408
// request_timeout): whoever wraps the read error with %w — a blob store's Put, a multipart
// reader — hands the kind on to the edge's error table.
var ErrBodyTimeout = errors.New("request body did not arrive in time")

// Body is a request body read under a Pace. It also notes whether the body was read to its
// end: then the deadline is lifted, since net/http's background read of the idle connection
// would otherwise hit it while the handler still works, and that cancels the request's
// context.
type Body struct {
	io.ReadCloser
	set  func(time.Time) error // nil: the connection has no deadline to set (HTTP/2, tests)
	pace Pace
	end  time.Time // the Total bound
	// Of the current piece: bytes still to arrive, and time spent waiting for them.
	left  int
	spent time.Duration

	sawEOF bool
	err    error // the answer once the body timed out
}

// NewBody paces rc from now. set sets the connection's read deadline (a ResponseController's
// SetReadDeadline); when it is nil or fails, the body is passed through unpaced.
func NewBody(rc io.ReadCloser, set func(time.Time) error, p Pace) *Body {
	b := &Body{ReadCloser: rc, pace: p, end: time.Now().Add(p.Total)}
	if set != nil && set(b.deadline(time.Now(), 0)) == nil {
		b.set = set
	}
	return b
}

func (b *Body) deadline(now time.Time, spent time.Duration) time.Time {
	d := now.Add(b.pace.Stall - spent)
	if d.After(b.end) {
		return b.end
	}
	return d
}

// Read reads the next bytes with the current piece's remaining time as the deadline.
func (b *Body) Read(p []byte) (int, error) {
	if b.set == nil || b.sawEOF {
		return b.track(b.ReadCloser.Read(p))
	}
	if b.left <= 0 {
		b.left, b.spent = b.pace.Piece, 0
	}
	start := time.Now()
	_ = b.set(b.deadline(start, b.spent))
	n, err := b.ReadCloser.Read(p)
	b.spent += time.Since(start)
	b.left -= n
	return b.track(n, err)
}

func (b *Body) track(n int, err error) (int, error) {
	switch {
	case err == io.EOF && !b.sawEOF:
		b.sawEOF = true
		if b.set != nil {
			_ = b.set(time.Time{})
		}
	case err != nil && b.err == nil && errors.Is(err, os.ErrDeadlineExceeded):
		b.err = &apierr.Error{Kind: apierr.KindRequestTimeout, Message: b.message(),
			Err: fmt.Errorf("%w: %w", ErrBodyTimeout, err)}
		err = b.err
	case err != nil && b.err != nil:
		err = b.err // the connection's read failed for good: say why each time
	}
	return n, err
}

func (b *Body) message() string {
	return fmt.Sprintf("The request body did not arrive in time: each %d KiB must arrive within %s (at least %.1f KiB/s), "+
		"and the whole body within %s of the headers. Send the body at once, as fast as the link allows.",
		b.pace.Piece>>10, b.pace.Stall, b.pace.MinRate()/1024, b.pace.Total)
}

// SawEOF reports whether the body was read to its end.
func (b *Body) SawEOF() bool { return b.sawEOF }

// Err is the 408 answer (an *apierr.Error, with ErrBodyTimeout in its chain) when the body
// timed out, else nil. A handler's error can lose the read error on its way (a store that
// does not wrap it); the edge asks the body itself.
func (b *Body) Err() error {
	if b == nil || b.err == nil {
		return nil
	}
	return b.err
}

type bodyKey struct{}

// PaceBodies paces the body of every request h serves (the listeners other than the API's,
// whose edge paces bodies itself) and makes the body findable from the request's context
// (BodyErr).
func PaceBodies(h http.Handler, p Pace) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
			h.ServeHTTP(w, r)
			return
		}
		b := NewBody(r.Body, http.NewResponseController(w).SetReadDeadline, p)
		r = r.WithContext(context.WithValue(r.Context(), bodyKey{}, b))
		r.Body = b
		h.ServeHTTP(w, r)
	})
}

// BodyErr is the 408 answer when the body of the request with this context (paced by
// PaceBodies) timed out, else nil.
func BodyErr(ctx context.Context) error {
	b, _ := ctx.Value(bodyKey{}).(*Body)
	return b.Err()
}
