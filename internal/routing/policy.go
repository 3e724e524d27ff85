package routing

import (
	"errors"
	"fmt"
	"time"

	"mediagen/internal/provider"
)

// The routed-fallback policy: what a failed call on one account of a routed alias says about
// that account, and what it does to the account's health. Video tasks and speech requests
// both judge their failures here; whether the request then moves to the next account is each
// use case's own rule (a video create that failed with a 5xx may have made a paid job, a
// speech call never has), so Judge only classifies, records and explains.

// DefaultAccountWait is how long an account whose key was refused (401/403) is avoided when
// the caller names no wait: long enough that a revoked key is not hammered by every routed
// request, short enough that a key fixed by an operator is used again within a minute.
const DefaultAccountWait = 30 * time.Second

// minRateLimitWait is the shortest a 429 avoids its account: an upstream that answers
// Retry-After: 0 (or none) would otherwise be asked again in the same instant.
const minRateLimitWait = time.Second

// Class is what a failed call says about the account it ran on.
type Class int

const (
	// Unknown: the error names no upstream class (neither transient nor permanent).
	Unknown Class = iota
	// KeyRefused: the account's credentials were refused (401/403); the call made nothing.
	KeyRefused
	// Limited: the account was rate-limited (429); the call made nothing.
	Limited
	// Transient: a 5xx, a timeout, a dropped connection; counts against the breaker.
	Transient
	// Rejected: the upstream refused the request itself; another account would too.
	Rejected
)

// String is the class as the upstream-error metrics label it.
func (c Class) String() string {
	switch c {
	case KeyRefused:
		return "account"
	case Limited:
		return "rate_limited"
	case Transient:
		return "transient"
	case Rejected:
		return "rejected"
	}
	return "unknown"
}

// Classify names err's class. A 429 is tested before the transient class it also belongs
// to: it made nothing, so the account is avoided for its Retry-After instead of being
// counted as failing.
func Classify(err error) Class {
	switch {
	case errors.Is(err, provider.ErrAccount):
		return KeyRefused
	case RateLimited(err):
		return Limited
	case errors.Is(err, provider.ErrTransient):
		return Transient
	case errors.Is(err, provider.ErrPermanent):
		return Rejected
	}
	return Unknown
}

// Policy judges the failures of routed calls.
type Policy struct {
	// AccountWait is how long an account whose key was refused is avoided (0: DefaultAccountWait).
	AccountWait time.Duration
	// BlameUnknown counts a failure of the Unknown class against the account's breaker, as a
	// transient one. A video create's unclassified failure may be the account's (true); a
	// speech call's is taken as the request's own (false).
	BlameUnknown bool
}

// Verdict is what Judge found and did.
type Verdict struct {
	Class Class
	// Why says, for a route event, why the request may leave the account: set for the
	// account's own refusals (KeyRefused, Limited), empty otherwise.
	Why string
	// Opened: this failure opened the account's breaker (worth a warning in the log).
	Opened bool
}

// Judge classifies err, a failed call on account, and records it in r: a refused key avoids
// the account for the account wait, a 429 for its Retry-After (at least a second), a
// transient failure (and an unknown one, when the policy blames it) counts against the
// breaker. A rejected request leaves the account's health alone.
func (p Policy) Judge(r *Router, account string, err error) Verdict {
	v := Verdict{Class: Classify(err)}
	switch v.Class {
	case KeyRefused:
		wait := p.AccountWait
		if wait <= 0 {
			wait = DefaultAccountWait
		}
		v.Why = "its key was refused (401/403)"
		r.Avoid(account, wait, "key refused (401/403)")
	case Limited:
		d := max(provider.RetryDelay(err), minRateLimitWait)
		v.Why = fmt.Sprintf("rate-limited (429, Retry-After %s)", d)
		r.Avoid(account, d, "rate-limited (429)")
	case Transient:
		v.Opened = r.Failure(account)
	case Unknown:
		if p.BlameUnknown {
			v.Opened = r.Failure(account)
		}
	}
	return v
}
