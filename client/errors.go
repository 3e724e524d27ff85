package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Error is an error answer of the API: {"error":{"message","type","code","param"}}.
type Error struct {
	// Status is the HTTP status code.
	Status int
	// Type is the error class: invalid_request_error, authentication_error,
	// permission_error, not_found_error, idempotency_error, insufficient_balance,
	// rate_limit_error or api_error.
	Type string
	// Code is the specific reason, for program logic (e.g. idempotency_conflict).
	Code string
	// Param names the offending request field by its path (metadata.content[2].role), when
	// there is one.
	Param string
	// Message is for people; it never carries internals.
	Message string
	// RequestID is the X-Request-Id of the answer; quote it to the operator.
	RequestID string
	// RetryAfter is the server's Retry-After, when it sent one.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mediagen: %d", e.Status)
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", e.Type)
	}
	if e.Code != "" && e.Code != e.Type {
		fmt.Fprintf(&b, " (%s)", e.Code)
	}
	if e.Param != "" {
		fmt.Fprintf(&b, " on %s", e.Param)
	}
	if e.Message != "" {
		fmt.Fprintf(&b, ": %s", e.Message)
	}
	if e.RequestID != "" {
		fmt.Fprintf(&b, " [request %s]", e.RequestID)
	}
	return b.String()
}

// UnreachableError is returned when the service refused the connection (after one short
// retry): nothing listens at BaseURL. The request was not sent.
type UnreachableError struct {
	BaseURL string
	Err     error // the dial error
}

func (e *UnreachableError) Error() string {
	return "mediagen: cannot reach mediagen at " + e.BaseURL + ": connection refused — is the service running?"
}

func (e *UnreachableError) Unwrap() error { return e.Err }

func parseError(res *http.Response, raw []byte) *Error {
	e := &Error{Status: res.StatusCode, RequestID: res.Header.Get("X-Request-Id"),
		RetryAfter: parseRetryAfter(res.Header.Get("Retry-After"), time.Now())}
	var env struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
			Code    string `json:"code"`
			Param   string `json:"param"`
		} `json:"error"`
	}
	if json.Unmarshal(raw, &env) == nil && (env.Error.Type != "" || env.Error.Message != "") {
		e.Type, e.Code, e.Param, e.Message = env.Error.Type, env.Error.Code, env.Error.Param, env.Error.Message
		return e
	}
	// Not our envelope (a proxy or load balancer answered): keep the status only.
	e.Message = http.StatusText(res.StatusCode)
	return e
}

// TaskError is the error of a video task that ended failed or expired.
type TaskError struct {
	TaskID string
	Status string // failed or expired
	// Code is for program logic: video_generation_failed when nothing more specific is
	// known, InvalidParameter.TaskTypeMismatch, task_expired, …
	Code    string
	Message string
}

func (e *TaskError) Error() string {
	return fmt.Sprintf("mediagen: task %s %s: %s: %s", e.TaskID, e.Status, e.Code, e.Message)
}
