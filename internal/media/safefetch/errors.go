package safefetch

import (
	"context"
	"errors"
	"fmt"
	"net"
)

// Error kinds. Every error returned by this package wraps exactly one of
// them (a few wrap two, e.g. a redirect that downgrades to http), so callers
// map failures to client errors with errors.Is and never show err.Error(),
// which may contain addresses and upstream details.
var (
	ErrForbiddenAddress = errors.New("safefetch: destination not allowed")
	ErrForbiddenScheme  = errors.New("safefetch: scheme not allowed")
	ErrForbiddenHost    = errors.New("safefetch: host not allowed for this request")
	ErrBadURL           = errors.New("safefetch: malformed or unsafe URL")
	ErrTooLarge         = errors.New("safefetch: body exceeds byte cap")
	ErrRedirect         = errors.New("safefetch: redirect not allowed")
	ErrUnreachable      = errors.New("safefetch: destination unreachable")
	ErrTimeout          = errors.New("safefetch: timed out")
	ErrHTTPStatus       = errors.New("safefetch: unexpected HTTP status")
	ErrUnsupportedMedia = errors.New("safefetch: unsupported media")
)

// Refused reports an error of the fetch policy itself: a destination, scheme, host or URL
// form the policy does not accept, or a redirect it does not follow. Such a fetch fails the
// same way however often it is tried, so a caller fails at once instead of retrying; a
// timeout, an unreachable server or an error status may go away and are not refusals.
func Refused(err error) bool {
	for _, k := range []error{ErrForbiddenAddress, ErrForbiddenScheme, ErrForbiddenHost, ErrBadURL, ErrRedirect} {
		if errors.Is(err, k) {
			return true
		}
	}
	return false
}

// StatusError carries the status code of a non-2xx answer. It matches
// ErrHTTPStatus with errors.Is; use errors.As to read Code.
type StatusError struct {
	Code int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("safefetch: unexpected HTTP status %d", e.Code)
}

// Is lets errors.Is(err, ErrHTTPStatus) match without exposing the code in
// the sentinel.
func (e *StatusError) Is(target error) bool { return target == ErrHTTPStatus }

// kinds lists the sentinels in the order PublicMessage tests them: the more
// specific cause first. A redirect to a private address carries only
// ErrForbiddenAddress; an https → http redirect carries ErrRedirect and
// ErrForbiddenScheme and is reported as a redirect problem.
var kinds = []struct {
	err error
	msg string
}{
	{ErrForbiddenAddress, "The URL points to a destination that is not allowed; use a public address on the standard HTTPS port."},
	{ErrRedirect, "The URL redirects in a way that is not allowed (too many hops, a downgrade to http, or any redirect where none is accepted)."},
	{ErrForbiddenScheme, "The URL scheme is not allowed; use an https:// URL."},
	{ErrBadURL, "The URL is malformed or uses a form that is not accepted (credentials, numeric or local host names)."},
	{ErrTooLarge, "The media at the URL is larger than the accepted size."},
	{ErrTimeout, "The URL did not answer in time."},
	{ErrHTTPStatus, "The URL answered with an error status."},
	{ErrUnsupportedMedia, "The media at the URL is not in a supported format."},
	{ErrUnreachable, "The URL could not be reached."},
}

// PublicMessage returns a sentence that is safe to show to a tenant for any
// error from this package: it names the kind of problem and nothing else (no
// address, no upstream text). Unknown errors get a generic sentence.
func PublicMessage(err error) string {
	if err == nil {
		return ""
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return k.msg
		}
	}
	return "The URL could not be fetched."
}

// classify makes sure an I/O error carries one of our kinds, so that the
// caller never has to look at net/http internals. Errors that already carry
// a kind, and cancellation by the caller, pass through unchanged.
func classify(err error) error {
	if err == nil {
		return nil
	}
	for _, k := range kinds {
		if errors.Is(err, k.err) {
			return err
		}
	}
	if errors.Is(err, context.Canceled) {
		return err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return fmt.Errorf("%w: %w", ErrUnreachable, err)
}
