// Package limits enforces the catalog's limits per API key and per tenant: request rates
// (token buckets kept in this process), requests being processed at once (also in this
// process), and unfinished video tasks, speech generations and asset ingestions (counted in
// the database, so exact across replicas). A refused request is answered 429 rate_limit_error with Retry-After,
// and nothing is written or reserved for it. docs/limits.md describes the whole.
package limits

import (
	"fmt"
	"math"
	"time"

	"mediagen/internal/apierr"
)

// Scopes and kinds of limit: the closed label sets of mediagen_rate_limited_total.
const (
	ScopeKey    = "key"
	ScopeTenant = "tenant"

	LimitRate     = "rate"
	LimitInFlight = "in_flight"
)

// Codes of the 429 envelope.
const (
	CodeRate           = "rate_limit_exceeded"
	CodeConcurrent     = "too_many_concurrent_requests"
	CodeTasksInFlight  = "too_many_tasks_in_flight"
	CodeSpeechInFlight = "too_many_speech_in_flight"
	CodeAssetsInFlight = "too_many_assets_in_flight"
)

// Retry-After hints for in-flight refusals, in seconds. Nothing says when a slot frees up, so
// these are small fixed numbers in the order of how long each kind of work takes: a request
// ends within seconds, a speech generation within seconds to a minute, a video in minutes (a
// client retrying every 5 s costs one cheap refused request each time). An asset ingests in
// seconds (an image) to minutes (a large video from a slow source): 5 s, like a video.
const (
	retryConcurrent = 1
	retrySpeech     = 2
	retryTasks      = 5
	retryAssets     = 5
)

// Refusal is a request refused by a limit. It wraps the client-facing error, so
// apierr.As finds the envelope, and carries what the transport needs besides: the
// Retry-After value and the metric labels.
type Refusal struct {
	Scope      string // ScopeKey or ScopeTenant
	Limit      string // LimitRate or LimitInFlight
	RetryAfter int    // whole seconds, at least 1
	err        *apierr.Error
}

func (r *Refusal) Error() string { return r.err.Error() }
func (r *Refusal) Unwrap() error { return r.err }

func refuse(scope, limit, code string, retryAfter int, msg string) *Refusal {
	return &Refusal{Scope: scope, Limit: limit, RetryAfter: max(1, retryAfter),
		err: &apierr.Error{Kind: apierr.KindRateLimit, Code: code, Message: msg}}
}

// whom names the scope in messages.
func whom(scope string) string {
	if scope == ScopeTenant {
		return "this account's API keys together"
	}
	return "this API key"
}

func rateRefusal(scope string, wait time.Duration) *Refusal {
	secs := seconds(wait)
	return refuse(scope, LimitRate, CodeRate, secs,
		fmt.Sprintf("Too many requests for %s. Slow down and retry after %d s (Retry-After).", whom(scope), secs))
}

func concurrentRefusal(limit int64) *Refusal {
	return refuse(ScopeKey, LimitInFlight, CodeConcurrent, retryConcurrent,
		fmt.Sprintf("This API key already has %d requests being processed, its limit. Wait for one to finish, then retry.", limit))
}

// seconds rounds a wait up to whole seconds, at least 1: Retry-After has no fractions, and a
// client that comes back early would only be refused again.
func seconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}
