// Package apierr is the client-facing error vocabulary: a small set of kinds, each with one
// HTTP status and envelope type in this package's table, so every layer can say what went
// wrong without knowing HTTP. The edge (internal/httpapi) writes an *Error as it says, and any
// other error as an internal error whose text the client never sees (docs/http.md).
package apierr

import (
	"errors"
	"fmt"
	"net/http"
)

// Kind is a class of client-visible failure.
type Kind int

const (
	KindInternal Kind = iota
	KindInvalid
	KindAuthentication
	KindInsufficientBalance
	KindPermission
	KindNotFound
	KindMethodNotAllowed
	KindIdempotency
	KindTooLarge
	KindUnsupportedMediaType
	KindRateLimit
	KindUnavailable
	// KindUpstream is a failure of the upstream engine (502 api_error); callers set a
	// specific Code such as speech_generation_failed.
	KindUpstream
	// KindTimeout is work that did not finish within the service's bounded wait (504
	// api_error); callers set a specific Code such as speech_timeout.
	KindTimeout
	// KindRangeNotSatisfiable is a byte range that selects nothing of a file (416); the file
	// server sets Content-Range: bytes */SIZE beside it.
	KindRangeNotSatisfiable
	// KindPreconditionFailed is a conditional request whose condition is false (412).
	KindPreconditionFailed
	// KindURITooLong is a request target longer than the edge's bound (414).
	KindURITooLong
	// KindRequestTimeout is a request body that did not arrive within the edge's bound (408).
	KindRequestTimeout
)

type kindInfo struct {
	status int
	typ    string
	code   string // default code
}

// table is the one place where kinds meet HTTP.
var table = map[Kind]kindInfo{
	KindInternal:             {http.StatusInternalServerError, "api_error", "internal_error"},
	KindInvalid:              {http.StatusBadRequest, "invalid_request_error", "invalid_request_error"},
	KindAuthentication:       {http.StatusUnauthorized, "authentication_error", "invalid_api_key"},
	KindInsufficientBalance:  {http.StatusPaymentRequired, "insufficient_balance", "insufficient_balance"},
	KindPermission:           {http.StatusForbidden, "permission_error", "permission_denied"},
	KindNotFound:             {http.StatusNotFound, "not_found_error", "not_found"},
	KindMethodNotAllowed:     {http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed"},
	KindIdempotency:          {http.StatusConflict, "idempotency_error", "idempotency_conflict"},
	KindTooLarge:             {http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large"},
	KindUnsupportedMediaType: {http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type"},
	KindRateLimit:            {http.StatusTooManyRequests, "rate_limit_error", "rate_limit_exceeded"},
	KindUnavailable:          {http.StatusServiceUnavailable, "api_error", "service_unavailable"},
	KindUpstream:             {http.StatusBadGateway, "api_error", "upstream_error"},
	KindTimeout:              {http.StatusGatewayTimeout, "api_error", "timeout"},
	KindRangeNotSatisfiable:  {http.StatusRequestedRangeNotSatisfiable, "invalid_request_error", "range_not_satisfiable"},
	KindPreconditionFailed:   {http.StatusPreconditionFailed, "invalid_request_error", "precondition_failed"},
	KindURITooLong:           {http.StatusRequestURITooLong, "invalid_request_error", "uri_too_long"},
	KindRequestTimeout:       {http.StatusRequestTimeout, "invalid_request_error", "request_timeout"},
}

// Error is a client-visible error. Message must be safe to show: no internal text.
type Error struct {
	Kind    Kind
	Code    string // optional override of the kind's default code
	Message string
	Param   string
	// RetryAfter, when above 0, is sent as the Retry-After header (whole seconds): a refusal
	// of work that would succeed later (503 busy, 429).
	RetryAfter int
	Err        error // internal cause, logged, never sent
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %v", e.Message, e.Err)
	}
	return e.Message
}

func (e *Error) Unwrap() error { return e.Err }

// Status is the HTTP status of the error's kind.
func (e *Error) Status() int { return table[e.Kind].status }

// Type is the envelope type of the error's kind.
func (e *Error) Type() string { return table[e.Kind].typ }

// CodeOrDefault is the envelope code.
func (e *Error) CodeOrDefault() string {
	if e.Code != "" {
		return e.Code
	}
	return table[e.Kind].code
}

// New builds an error of a kind.
func New(k Kind, message string) *Error { return &Error{Kind: k, Message: message} }

// Invalid is a 400 naming the offending field.
func Invalid(param, message string) *Error {
	return &Error{Kind: KindInvalid, Param: param, Message: message}
}

// As returns the *Error in err's chain, or an internal error wrapping err.
func As(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Kind: KindInternal, Message: "The server could not complete the request. Retry later; if it persists, contact the operator with the request id.", Err: err}
}
