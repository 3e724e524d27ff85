package limits

import (
	"errors"
	"sync"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/testkit"
)

// newClock is a still clock for the buckets.
func newClock() *testkit.Clock { return testkit.NewClock(time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)) }

func limitsOf(keyRate catalog.PerSecond, keyBurst catalog.Burst, tenantRate catalog.PerSecond, tenantBurst catalog.Burst) catalog.Limits {
	l := catalog.DefaultLimits()
	l.Key.RequestsPerSecond, l.Key.Burst = keyRate, keyBurst
	l.Tenant.RequestsPerSecond, l.Tenant.Burst = tenantRate, tenantBurst
	return l
}

// refusal returns err as a Refusal, failing the test when it is not one.
func refusal(t *testing.T, err error) *Refusal {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) {
		t.Fatalf("error %v is not a refusal", err)
	}
	return r
}

func TestBucketAdmitsTheBurstThenTheRate(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(c.Now, 1)
	lim := limitsOf(2, 3, catalog.Unlimited, 1)
	for i := 0; i < 3; i++ {
		if err := l.Allow("k", "t", lim); err != nil {
			t.Fatalf("request %d of the burst refused: %v", i+1, err)
		}
	}
	err := l.Allow("k", "t", lim)
	r := refusal(t, err)
	if r.Scope != ScopeKey || r.Limit != LimitRate || r.RetryAfter != 1 {
		t.Errorf("refusal = %+v, want key/rate with Retry-After 1 (a token in 0.5 s, rounded up)", r)
	}
	e := apierr.As(err)
	if e.Status() != 429 || e.Type() != "rate_limit_error" || e.CodeOrDefault() != CodeRate {
		t.Errorf("envelope = %d %s %s", e.Status(), e.Type(), e.CodeOrDefault())
	}
	c.Advance(499 * time.Millisecond)
	if err := l.Allow("k", "t", lim); err == nil {
		t.Fatal("admitted before a token refilled")
	}
	c.Advance(time.Millisecond)
	if err := l.Allow("k", "t", lim); err != nil {
		t.Fatalf("refused once a token refilled: %v", err)
	}
	// A long pause refills to the burst, never beyond it.
	c.Advance(time.Hour)
	for i := 0; i < 3; i++ {
		if err := l.Allow("k", "t", lim); err != nil {
			t.Fatalf("request %d after a pause refused: %v", i+1, err)
		}
	}
	if err := l.Allow("k", "t", lim); err == nil {
		t.Fatal("the bucket held more than its burst")
	}
}

func TestBucketRetryAfterIsTheWaitForOneToken(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		rate catalog.PerSecond
		want int
	}{
		{"fast rate rounds up to 1 s", 50, 1},
		{"one every 4 s", 0.25, 4},
		{"one every 2.5 s rounds up", 0.4, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(newClock().Now, 1)
			lim := limitsOf(tt.rate, 1, catalog.Unlimited, 1)
			if err := l.Allow("k", "t", lim); err != nil {
				t.Fatal(err)
			}
			if got := refusal(t, l.Allow("k", "t", lim)).RetryAfter; got != tt.want {
				t.Errorf("Retry-After = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTenantBucketIsSharedByItsKeysAndARefusalTakesNothing(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(c.Now, 1)
	lim := limitsOf(10, 2, 1, 3)
	for _, k := range []string{"a", "b", "c"} {
		if err := l.Allow(k, "t", lim); err != nil {
			t.Fatalf("key %s refused: %v", k, err)
		}
	}
	r := refusal(t, l.Allow("d", "t", lim))
	if r.Scope != ScopeTenant || r.Limit != LimitRate {
		t.Errorf("refusal = %+v, want tenant/rate", r)
	}
	// Key a keeps its second token: the tenant's refusals did not spend it.
	for i := 0; i < 5; i++ {
		_ = l.Allow("a", "t", lim)
	}
	c.Advance(time.Second) // one tenant token
	if err := l.Allow("a", "t", lim); err != nil {
		t.Fatalf("key a refused after the tenant refilled: %v", err)
	}
	// Another tenant has its own bucket.
	if err := l.Allow("x", "other", lim); err != nil {
		t.Fatalf("another tenant refused: %v", err)
	}
}

func TestUnlimitedRatesNeverRefuse(t *testing.T) {
	t.Parallel()
	l := New(newClock().Now, 1)
	lim := limitsOf(catalog.Unlimited, 1, catalog.Unlimited, 1)
	for i := 0; i < 10_000; i++ {
		if err := l.Allow("k", "t", lim); err != nil {
			t.Fatalf("request %d refused: %v", i, err)
		}
	}
	if len(l.keys)+len(l.tenants) != 0 {
		t.Errorf("unlimited rates kept buckets: %d", len(l.keys)+len(l.tenants))
	}
}

func TestReplicasShareTheRateAndBurst(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(c.Now, 4)
	lim := limitsOf(8, 8, catalog.Unlimited, 1) // each of 4 replicas: 2/s, burst 2
	admitted := 0
	for i := 0; i < 8; i++ {
		if l.Allow("k", "t", lim) == nil {
			admitted++
		}
	}
	if admitted != 2 {
		t.Errorf("admitted %d at once, want this replica's burst share of 2", admitted)
	}
	c.Advance(500 * time.Millisecond)
	if err := l.Allow("k", "t", lim); err != nil {
		t.Errorf("refused after 0.5 s at this replica's 2/s: %v", err)
	}
}

func TestIdleBucketsAreDroppedPastTheBound(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(c.Now, 1)
	l.maxEntries = 3
	lim := limitsOf(1, 1, catalog.Unlimited, 1)
	for _, k := range []string{"a", "b", "c"} {
		_ = l.Allow(k, "t", lim)
	}
	c.Advance(2 * time.Second) // a, b, c are full again
	_ = l.Allow("d", "t", lim)
	if len(l.keys) != 1 {
		t.Errorf("buckets kept = %d, want only d", len(l.keys))
	}
	// A bucket still refilling is kept: dropping it would hand its key a fresh burst.
	l.maxEntries = 1
	_ = l.Allow("e", "t", lim)
	if _, ok := l.keys["d"]; !ok {
		t.Error("a bucket still refilling was dropped")
	}
}

func TestConcurrentRequestsPerKey(t *testing.T) {
	t.Parallel()
	l := New(newClock().Now, 1)
	lim := catalog.DefaultLimits()
	lim.Key.ConcurrentRequests = 2
	end1, err := l.Begin("k", lim)
	if err != nil {
		t.Fatal(err)
	}
	end2, err := l.Begin("k", lim)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Begin("k", lim)
	r := refusal(t, err)
	if r.Scope != ScopeKey || r.Limit != LimitInFlight || r.RetryAfter != retryConcurrent ||
		apierr.As(err).CodeOrDefault() != CodeConcurrent {
		t.Errorf("refusal = %+v code %s", r, apierr.As(err).CodeOrDefault())
	}
	if _, err := l.Begin("other", lim); err != nil {
		t.Errorf("another key refused: %v", err)
	}
	end1()
	end3, err := l.Begin("k", lim)
	if err != nil {
		t.Fatalf("refused after one ended: %v", err)
	}
	end2()
	end3()
	if _, ok := l.active["k"]; ok {
		t.Error("an idle key is still tracked")
	}
}

func TestConcurrentCallersGetExactlyTheBurst(t *testing.T) {
	t.Parallel()
	l := New(newClock().Now, 1) // the clock stands still: no refill
	lim := limitsOf(1, 50, catalog.Unlimited, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 25; j++ {
				if l.Allow("k", "t", lim) == nil {
					mu.Lock()
					admitted++
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if admitted != 50 {
		t.Errorf("admitted %d of 200 concurrent requests, want the burst of 50", admitted)
	}
}

// A rate too small for a wait to fit in a time.Duration once made the wait overflow to a
// negative number, which the limiter read as "a token is there": every request was admitted.
// However small or broken the rate, the bucket refuses until it has a token.
func TestBucketWithAnExtremeRateRefusesRatherThanAdmits(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		rate     catalog.PerSecond
		replicas int
	}{
		{"one request in about 300 years", 1e-10, 1},
		{"one request in 30 000 years", 1e-12, 1},
		{"the smallest float", 5e-324, 1},
		{"zero, which no catalog gives", 0, 1},
		{"negative, which no catalog gives", -2, 1},
		{"the smallest catalog rate shared by a huge replica count", catalog.MinRequestsPerSecond, 1 << 62},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newClock()
			l := New(c.Now, tt.replicas)
			lim := limitsOf(tt.rate, 1, catalog.Unlimited, 1)
			if err := l.Allow("k", "t", lim); err != nil {
				t.Fatalf("the burst's request refused: %v", err)
			}
			c.Advance(time.Hour)
			for i := range 3 {
				r := refusal(t, l.Allow("k", "t", lim))
				if r.Scope != ScopeKey || r.Limit != LimitRate || r.RetryAfter < 1 {
					t.Errorf("refusal %d = %+v, want key/rate with a Retry-After", i+1, r)
				}
			}
		})
	}
}

// A bucket whose rate is too slow for the time until it is full to fit in a time.Duration
// is still refilling: it is kept when the map is trimmed, since dropping it would hand its
// key a fresh burst.
func TestABucketThatTakesForeverToFillIsKept(t *testing.T) {
	t.Parallel()
	c := newClock()
	l := New(c.Now, 1)
	l.maxEntries = 1
	slow := limitsOf(1e-12, 1, catalog.Unlimited, 1)
	if err := l.Allow("slow", "t", slow); err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Hour)
	_ = l.Allow("other", "t", limitsOf(1, 1, catalog.Unlimited, 1))
	if _, ok := l.keys["slow"]; !ok {
		t.Error("a bucket still refilling was dropped")
	}
	if err := l.Allow("slow", "t", slow); err == nil {
		t.Error("the slow key got a second request through")
	}
}

func TestReplicaCountIsBounded(t *testing.T) {
	t.Parallel()
	for _, n := range []int{MaxReplicas + 1, 1 << 62} {
		if got := New(nil, n).replicas; got != MaxReplicas {
			t.Errorf("New(nil, %d).replicas = %v, want MaxReplicas (%d)", n, got, MaxReplicas)
		}
	}
}
