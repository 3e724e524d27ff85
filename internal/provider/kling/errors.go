package kling

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/rest"
)

// errNoSuchTask is Kling's "requested resource does not exist" (code 1203, HTTP 404) on a
// task read: no create made a task of that id.
var errNoSuchTask = errors.New("kling: no such task")

// classify maps a failed call by Kling's own error code (its reference's "Error Code" page),
// falling back to the HTTP status (rest.Classify) for an answer without one. The upstream's
// message never leaves this package.
func classify(err error) error {
	var se *rest.StatusError
	if !errors.As(err, &se) {
		return err
	}
	var env envelope
	if json.Unmarshal(se.Body, &env) == nil && env.Code != 0 {
		return byCode(env.Code, se.RetryAfter, se)
	}
	if se.Status == http.StatusNotFound {
		return fmt.Errorf("%w: %w", refused(se.Status), errNoSuchTask)
	}
	return rest.Classify(err, func(*rest.StatusError) error { return refused(se.Status) })
}

// byCode types a failure by Kling's code. base is the failure as seen (never with a key).
func byCode(code int, after time.Duration, base error) error {
	switch {
	case code >= 1000 && code <= 1004, // token refused: wrong keys, expired, not yet valid
		code >= 1100 && code <= 1103, // account: suspended, in arrears, resource pack used up, no access
		code == 1304:                 // the caller's IP is not on the account's allow list
		// Nothing is wrong with the task: it waits until the operator fixes the account.
		return fmt.Errorf("%w (code %d): %w", base, code, provider.ErrAccount)
	case code == 1203:
		return fmt.Errorf("%w: %w", refused(code), errNoSuchTask)
	case code >= 1200 && code <= 1202, code == 1300, code == 1301:
		return refused(code)
	case code == 1302 || code == 1303: // too fast; over the account's concurrency
		t := fmt.Errorf("%w (code %d): %w", base, code, provider.ErrTransient)
		if after > 0 {
			return &provider.RetryAfter{After: after, Err: t}
		}
		return t
	}
	return fmt.Errorf("%w (code %d): %w", base, code, provider.ErrTransient)
}

// refused is the permanent error of a refused request, with the contract's public code and
// a sanitized sentence for its kind.
func refused(code int) error {
	msg := "The upstream rejected the request's parameters."
	switch code {
	case 1300, 1301:
		msg = "The upstream declined to generate this content."
	case 1203, http.StatusNotFound:
		msg = "The upstream does not know the requested model or task."
	}
	return &provider.Error{Code: "video_generation_failed", Message: msg, Kind: provider.ErrPermanent}
}

// failedMessage is the public sentence of a failed task: Kling's task_status_msg is its
// own text, so only whether it names a content refusal is kept.
func failedMessage(msg string) string {
	for _, w := range []string{"risk", "safety", "sensitive", "moderation", "policy"} {
		if strings.Contains(strings.ToLower(msg), w) {
			return "The upstream declined to generate this content."
		}
	}
	return "The video could not be generated."
}
