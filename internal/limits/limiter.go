package limits

import (
	"math"
	"sync"
	"time"

	"mediagen/internal/catalog"
)

// Limiter holds this process's request-rate buckets and its counts of requests being
// processed. The rates are per replica: with Replicas set to N, each replica enforces 1/N of
// every configured rate and burst, so N replicas behind a balancer that spreads a client's
// requests evenly admit about the configured total; with the default of 1 each replica
// enforces the full figures (docs/limits.md).
type Limiter struct {
	now      func() time.Time
	replicas float64
	// maxEntries bounds each map: past it, buckets that have refilled (and so hold no
	// state a new bucket would not) are dropped.
	maxEntries int

	mu      sync.Mutex
	keys    map[string]*bucket
	tenants map[string]*bucket
	active  map[string]int64 // requests being processed, by key id
}

// MaxReplicas bounds --limit-replicas: far above the API replicas one database serves, and
// low enough that the smallest catalog rate divided by it (catalog.MinRequestsPerSecond /
// 1000: a token every 3.2 years) still gives waits a time.Duration holds.
const MaxReplicas = 1000

// New makes a limiter. now nil is time.Now; replicas below 1 is 1, above MaxReplicas is
// MaxReplicas (the serve flag refuses such values; this keeps any other caller in range).
func New(now func() time.Time, replicas int) *Limiter {
	if now == nil {
		now = time.Now
	}
	return &Limiter{now: now, replicas: float64(min(MaxReplicas, max(1, replicas))), maxEntries: 10_000,
		keys: map[string]*bucket{}, tenants: map[string]*bucket{}, active: map[string]int64{}}
}

// share is this replica's part of a configured rate and burst.
func (l *Limiter) share(r catalog.PerSecond, b catalog.Burst) (rate, burst float64) {
	return float64(r) / l.replicas, math.Max(1, math.Ceil(float64(b)/l.replicas))
}

// Allow admits one request of the key or refuses it. It takes a token from the key's bucket
// and from the tenant's, or from neither: a refused request costs the client nothing, so a
// client that keeps to Retry-After is admitted when it comes back.
func (l *Limiter) Allow(keyID, tenantID string, lim catalog.Limits) error {
	kl, tl := lim.Key, lim.Tenant
	if kl.RequestsPerSecond.Unlimited() && tl.RequestsPerSecond.Unlimited() {
		return nil
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var kb, tb *bucket
	var kr, kbu, tr, tbu float64
	if !kl.RequestsPerSecond.Unlimited() {
		kr, kbu = l.share(kl.RequestsPerSecond, kl.Burst)
		kb = l.bucket(l.keys, keyID, now)
		kb.refill(now, kr, kbu)
		if w := kb.wait(kr); w > 0 {
			return rateRefusal(ScopeKey, w)
		}
	}
	if !tl.RequestsPerSecond.Unlimited() {
		tr, tbu = l.share(tl.RequestsPerSecond, tl.Burst)
		tb = l.bucket(l.tenants, tenantID, now)
		tb.refill(now, tr, tbu)
		if w := tb.wait(tr); w > 0 {
			return rateRefusal(ScopeTenant, w)
		}
	}
	if kb != nil {
		kb.take(now, kr, kbu)
	}
	if tb != nil {
		tb.take(now, tr, tbu)
	}
	return nil
}

// bucket returns the bucket of id, making a full one for a newcomer.
func (l *Limiter) bucket(m map[string]*bucket, id string, now time.Time) *bucket {
	if b, ok := m[id]; ok {
		return b
	}
	if len(m) >= l.maxEntries {
		for k, b := range m {
			if !now.Before(b.full) {
				delete(m, k)
			}
		}
	}
	b := &bucket{}
	m[id] = b
	return b
}

// Begin counts a request of the key as being processed, or refuses it when the key is at its
// limit. The caller calls the returned function when the request ends.
func (l *Limiter) Begin(keyID string, lim catalog.Limits) (end func(), err error) {
	c := lim.Key.ConcurrentRequests
	if c.Unlimited() {
		return func() {}, nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.active[keyID] >= int64(c) {
		return nil, concurrentRefusal(int64(c))
	}
	l.active[keyID]++
	return func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.active[keyID]--; l.active[keyID] <= 0 {
			delete(l.active, keyID) // the map holds only keys with requests running
		}
	}, nil
}
