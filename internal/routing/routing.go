// Package routing is the in-process health of upstream accounts shared by every routed use
// case (video tasks, speech requests): a circuit breaker per account, the accounts to avoid
// for a while, and the order a strategy tries an alias's accounts in.
package routing

import (
	"errors"
	"math/rand/v2"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/catalog"
	"mediagen/internal/provider/rest"
)

// Breaker states, as the metric mediagen_upstream_breaker_state reports them.
const (
	BreakerClosed   = 0
	BreakerOpen     = 1
	BreakerHalfOpen = 2
)

// Router is the in-process health of upstream accounts that routed tasks (an alias with
// several accounts, catalog upstreams) pick from: a circuit breaker per account, and the
// accounts to avoid for a while (a refused key, a 429's Retry-After). It is per process: each
// replica learns on its own, which is acceptable — a replica that has not yet seen an
// account fail sends it at most `failures` more tasks before its own breaker opens.
// A task of a one-account alias never consults it: it goes to its account as before.
type Router struct {
	// Policy gives an account's breaker (failures in a row, cooldown); nil: the defaults.
	Policy func(account string) (failures int, cooldown time.Duration)
	// State, when set, is the breaker gauge (NewBreakerState).
	State *prometheus.GaugeVec
	Now   func() time.Time

	mu    sync.Mutex
	accts map[string]*health
}

type health struct {
	fails      int
	state      int
	openUntil  time.Time // open: skipped until then; half-open: the trial's bound
	avoidUntil time.Time
	avoidWhy   string
}

// NewBreakerState registers the breaker gauge on reg.
func NewBreakerState(reg prometheus.Registerer) *prometheus.GaugeVec {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "mediagen_upstream_breaker_state",
		Help: "Circuit breaker of an upstream account in this process, by upstream: 0 closed, 1 open (skipped by routed tasks), 2 half-open (one task let through).",
	}, []string{"upstream"})
	reg.MustRegister(g)
	return g
}

func (r *Router) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *Router) policy(account string) (int, time.Duration) {
	if r.Policy != nil {
		if n, d := r.Policy(account); n > 0 && d > 0 {
			return n, d
		}
	}
	return catalog.DefaultBreakerFailures, catalog.DefaultBreakerCooldown
}

func (r *Router) get(account string) *health {
	if r.accts == nil {
		r.accts = map[string]*health{}
	}
	h := r.accts[account]
	if h == nil {
		h = &health{}
		r.accts[account] = h
		if r.State != nil {
			r.State.WithLabelValues(account).Set(BreakerClosed)
		}
	}
	return h
}

func (r *Router) set(account string, h *health, state int) {
	h.state = state
	if r.State != nil {
		r.State.WithLabelValues(account).Set(float64(state))
	}
}

// Admit reports whether a routed task may use the account now, and if not why and until
// when. An open breaker whose cooldown has passed turns half-open and admits one task (the
// trial); another is admitted once that trial's bound (a cooldown) passes without an answer.
func (r *Router) Admit(account string) (ok bool, why string, until time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h, now := r.get(account), r.now()
	if now.Before(h.avoidUntil) {
		return false, h.avoidWhy, h.avoidUntil
	}
	_, cooldown := r.policy(account)
	switch h.state {
	case BreakerOpen:
		if now.Before(h.openUntil) {
			return false, "breaker open", h.openUntil
		}
		r.set(account, h, BreakerHalfOpen)
		h.openUntil = now.Add(cooldown)
		return true, "", time.Time{}
	case BreakerHalfOpen:
		if now.Before(h.openUntil) {
			return false, "breaker half-open, its trial task running", h.openUntil
		}
		h.openUntil = now.Add(cooldown)
	}
	return true, "", time.Time{}
}

// BreakerState is an account's breaker state (BreakerClosed, BreakerOpen, BreakerHalfOpen).
func (r *Router) BreakerState(account string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.get(account).state
}

// Success closes the account's breaker.
func (r *Router) Success(account string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.get(account)
	h.fails = 0
	r.set(account, h, BreakerClosed)
}

// Failure counts a transient failure; it opens the breaker after the account's failures in a
// row, or at once when half-open (the trial failed). It reports whether it opened.
func (r *Router) Failure(account string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.get(account)
	h.fails++
	n, cooldown := r.policy(account)
	if h.state == BreakerHalfOpen || (h.state == BreakerClosed && h.fails >= n) {
		r.set(account, h, BreakerOpen)
		h.openUntil = r.now().Add(cooldown)
		return true
	}
	return false
}

// Avoid skips the account for routed tasks for d (a refused key, a Retry-After).
func (r *Router) Avoid(account string, d time.Duration, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.get(account)
	if until := r.now().Add(d); until.After(h.avoidUntil) {
		h.avoidUntil, h.avoidWhy = until, why
	}
}

// Order is the accounts in the order a task tries them: priority keeps the catalog's order;
// weighted draws without replacement in proportion to the weights; least_busy sorts by
// in-flight jobs over max_in_flight (busy, from the store; an account without a limit counts
// its jobs against a large one), ties in catalog order.
func Order(accounts []string, strategy string, weights []int, busy func(string) (held, limit int)) []string {
	out := slices.Clone(accounts)
	switch catalog.Strategy(strategy) {
	case catalog.StrategyWeighted:
		if len(weights) != len(out) {
			return out
		}
		w := slices.Clone(weights)
		for i := range out {
			total := 0
			for _, x := range w[i:] {
				total += x
			}
			if total <= 0 {
				break
			}
			pick := rand.IntN(total)
			for j := i; j < len(out); j++ {
				if pick < w[j] {
					out[i], out[j] = out[j], out[i]
					w[i], w[j] = w[j], w[i]
					break
				}
				pick -= w[j]
			}
		}
	case catalog.StrategyLeastBusy:
		if busy == nil {
			return out
		}
		load := map[string]float64{}
		for _, a := range out {
			held, limit := busy(a)
			if limit <= 0 {
				limit = 1 << 20
			}
			load[a] = float64(held) / float64(limit)
		}
		slices.SortStableFunc(out, func(a, b string) int {
			switch {
			case load[a] < load[b]:
				return -1
			case load[a] > load[b]:
				return 1
			}
			return 0
		})
	}
	return out
}

// RateLimited: the upstream answered 429 (the call made nothing; try another account now).
func RateLimited(err error) bool {
	var se *rest.StatusError
	return errors.As(err, &se) && se.Status == http.StatusTooManyRequests
}
