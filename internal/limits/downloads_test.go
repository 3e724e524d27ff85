package limits

import (
	"net/netip"
	"testing"
	"time"

	"mediagen/internal/netlimit"
)

func client(s string) netlimit.Client { return netlimit.ClientOf(netip.MustParseAddr(s)) }

func TestDownloadsRefuseEachBoundWithItsScopeAndFreeOnEnd(t *testing.T) {
	t.Parallel()
	c := newClock()
	d := NewDownloads(c.Now, DownloadLimits{PerClient: 2, PerLink: 3, Total: 4, Rate: 1000, Burst: 1000})
	a, b, x := client("192.0.2.1"), client("192.0.2.2"), client("192.0.2.3")
	var ends []func()
	begin := func(cl netlimit.Client, link string) error {
		end, err := d.Begin(cl, link)
		if err == nil {
			ends = append(ends, end)
		}
		return err
	}
	steps := []struct {
		client netlimit.Client
		link   string
		scope  string // "" admitted
	}{
		{a, "f1", ""}, {a, "f1", ""},
		{a, "f2", ScopeClient}, // a holds 2
		{b, "f1", ""},
		{b, "f1", ScopeLink}, // f1 holds 3
		{b, "f2", ""},        // 4 in all
		{x, "f3", ScopeServer},
	}
	for i, s := range steps {
		err := begin(s.client, s.link)
		if s.scope == "" {
			if err != nil {
				t.Fatalf("step %d: %v, want admitted", i+1, err)
			}
			continue
		}
		r := refusal(t, err)
		if r.Scope != s.scope || r.Limit != LimitInFlight || r.RetryAfter != retryDownloads {
			t.Fatalf("step %d: %+v, want %s/in_flight", i+1, r, s.scope)
		}
	}
	if d.InFlight() != 4 {
		t.Fatalf("in flight %d, want 4", d.InFlight())
	}
	for _, end := range ends {
		end()
		end() // a second call changes nothing
	}
	if d.InFlight() != 0 || len(d.byClient) != 0 || len(d.byLink) != 0 {
		t.Errorf("after every end: %d in flight, %d clients, %d links; want none", d.InFlight(), len(d.byClient), len(d.byLink))
	}
}

func TestClientRatesAdmitTheBurstThenTheRatePerClient(t *testing.T) {
	t.Parallel()
	c := newClock()
	r := NewClientRates(c.Now, 2, 3, "file requests")
	a, b := client("192.0.2.1"), client("2001:db8::1")
	for i := range 3 {
		if err := r.Allow(a); err != nil {
			t.Fatalf("request %d of the burst: %v", i+1, err)
		}
	}
	ref := refusal(t, r.Allow(a))
	if ref.Scope != ScopeClient || ref.Limit != LimitRate || ref.RetryAfter != 1 {
		t.Errorf("refusal %+v, want client/rate, Retry-After 1", ref)
	}
	if err := r.Allow(b); err != nil {
		t.Errorf("another client: %v", err)
	}
	c.Advance(500 * time.Millisecond)
	if err := r.Allow(a); err != nil {
		t.Errorf("after a token's time: %v", err)
	}
}

// A table full of clients whose buckets still refill admits a new client untracked rather
// than growing: what it can do is bounded by the connection limits.
func TestClientRatesStayBoundedUnderManyAddresses(t *testing.T) {
	t.Parallel()
	c := newClock()
	r := NewClientRates(c.Now, 1, 1, "file requests")
	for i := range maxRateClients + 100 {
		a := netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)})
		_ = r.Allow(netlimit.ClientOf(a))
	}
	if n := len(r.buckets); n > maxRateClients {
		t.Errorf("%d buckets, more than %d", n, maxRateClients)
	}
	c.Advance(2 * time.Second) // every bucket has refilled: the next newcomer sweeps them
	_ = r.Allow(client("192.0.2.9"))
	if n := len(r.buckets); n != 1 {
		t.Errorf("%d buckets after the sweep, want 1", n)
	}
}
