package catalog

import (
	"strings"
	"testing"
)

// withLimits is minimal with a catalog-wide limits block and a second tenant with its own.
const withLimits = `limits:
  key:
    requests_per_second: 5
    video_tasks_in_flight: 10
  tenant:
    speech_in_flight: unlimited
tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-fast
        product: native
        family: fast-2.0
        upstream: sandbox
        model: up-fast
    rates:
      native:
        acme-fast: 1.5
  - id: bulk
    name: Bulk
    currency: EUR
    limits:
      key:
        requests_per_second: 0.5
        burst: 3
        concurrent_requests: unlimited
        asset_ingests_in_flight: 3
      tenant:
        requests_per_second: unlimited
        video_tasks_in_flight: 7
        asset_ingests_in_flight: unlimited
    aliases:
      - alias: bulk-fast
        product: native
        family: fast-2.0
        upstream: sandbox
        model: up-fast-b
    rates:
      native:
        bulk-fast: 1.5
`

func TestLimitsResolveTenantThenCatalogThenDefaults(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withLimits))
	if err != nil {
		t.Fatal(err)
	}
	d := DefaultLimits()
	acme, _ := c.Tenant("acme")
	want := d
	want.Key.RequestsPerSecond, want.Key.Burst, want.Key.VideoTasksInFlight = 5, 10, 10
	want.Tenant.SpeechInFlight = Unlimited
	if got := acme.Limits(); got != want {
		t.Errorf("acme limits\n got %+v\nwant %+v", got, want)
	}
	bulk, _ := c.Tenant("bulk")
	want = d
	// bulk's own rates come with their own bursts (given, or twice the rate), not acme's 10.
	want.Key.RequestsPerSecond, want.Key.Burst, want.Key.ConcurrentRequests, want.Key.VideoTasksInFlight = 0.5, 3, Unlimited, 10
	want.Tenant.RequestsPerSecond, want.Tenant.Burst, want.Tenant.VideoTasksInFlight, want.Tenant.SpeechInFlight = Unlimited, 1, 7, Unlimited
	want.Key.AssetIngestsInFlight, want.Tenant.AssetIngestsInFlight = 3, Unlimited
	if got := bulk.Limits(); got != want {
		t.Errorf("bulk limits\n got %+v\nwant %+v", got, want)
	}
}

func TestLimitsBurstFollowsTheBlockThatSetsTheRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		wide, own KeyLimitSettings
		wantRate  PerSecond
		wantBurst Burst
	}{
		{"nothing set", KeyLimitSettings{}, KeyLimitSettings{}, 100, 200},
		{"catalog burst for the default rate", KeyLimitSettings{Burst: 7}, KeyLimitSettings{}, 100, 7},
		{"catalog rate and burst inherited", KeyLimitSettings{RequestsPerSecond: 4, Burst: 5}, KeyLimitSettings{}, 4, 5},
		{"tenant rate drops the catalog burst", KeyLimitSettings{RequestsPerSecond: 4, Burst: 5}, KeyLimitSettings{RequestsPerSecond: 30}, 30, 60},
		{"tenant burst on the catalog rate", KeyLimitSettings{RequestsPerSecond: 4, Burst: 5}, KeyLimitSettings{Burst: 9}, 4, 9},
		{"fractional rate rounds the burst up", KeyLimitSettings{}, KeyLimitSettings{RequestsPerSecond: 0.2}, 0.2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := resolveLimits(LimitSettings{Key: tt.wide}, LimitSettings{Key: tt.own})
			if l.Key.RequestsPerSecond != tt.wantRate || l.Key.Burst != tt.wantBurst {
				t.Errorf("rate, burst = %v, %v; want %v, %v", l.Key.RequestsPerSecond, l.Key.Burst, tt.wantRate, tt.wantBurst)
			}
		})
	}
}

func TestLimitsDefaultWhenTheCatalogSaysNothing(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(minimal))
	if err != nil {
		t.Fatal(err)
	}
	acme, _ := c.Tenant("acme")
	if got := acme.Limits(); got != DefaultLimits() {
		t.Errorf("limits = %+v, want the defaults %+v", got, DefaultLimits())
	}
	if d := DefaultLimits(); d.Key.Burst != twice(d.Key.RequestsPerSecond) || d.Tenant.Burst != twice(d.Tenant.RequestsPerSecond) {
		t.Errorf("default bursts are not twice the default rates: %+v", d)
	}
}

func TestLimitsRejectBadValuesWithTheirLine(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, old, new, want string
	}{
		{"zero count", "video_tasks_in_flight: 10", "video_tasks_in_flight: 0", "line 4: a limit must be a whole number from 1 to 1000000000 or unlimited, not 0 (0 would refuse every request"},
		{"negative count", "video_tasks_in_flight: 10", "video_tasks_in_flight: -3", "line 4: a limit must be a whole number from 1 to 1000000000 or unlimited, not -3"},
		{"fractional count", "video_tasks_in_flight: 10", "video_tasks_in_flight: 2.5", "line 4: a limit must be a whole number of at least 1 or unlimited, not 2.5"},
		{"quoted count", "video_tasks_in_flight: 10", `video_tasks_in_flight: "10"`, `line 4: a limit must be a whole number of at least 1 or unlimited, not "10"`},
		{"misspelt unlimited", "speech_in_flight: unlimited", "speech_in_flight: infinite", "line 6: a limit must be a whole number of at least 1 or unlimited, not infinite"},
		{"count list", "video_tasks_in_flight: 10", "video_tasks_in_flight: [1]", "line 4: a limit must be a whole number of at least 1 or unlimited, not a list"},
		{"zero rate", "requests_per_second: 5", "requests_per_second: 0", "line 3: requests_per_second must be from 0.00001 (about one request a day) to 1000000000, or unlimited, not 0"},
		{"rate text", "requests_per_second: 5", "requests_per_second: fast", "line 3: requests_per_second must be a number or unlimited, not fast"},
		{"rate infinity", "requests_per_second: 5", "requests_per_second: .inf", "line 3: requests_per_second must be from 0.00001 (about one request a day) to 1000000000, or unlimited, not .inf"},
		{"rate below one a day", "requests_per_second: 5", "requests_per_second: 0.000001", "line 3: requests_per_second must be from 0.00001 (about one request a day) to 1000000000, or unlimited, not 0.000001"},
		{"rate too small for a wait to be timed", "requests_per_second: 5", "requests_per_second: 1e-11", "line 3: requests_per_second must be from 0.00001"},
		{"smallest float rate", "requests_per_second: 0.5", "requests_per_second: 5e-324", "line 25: requests_per_second must be from 0.00001"},
		{"rate above the maximum", "requests_per_second: 5", "requests_per_second: 1000000001", "line 3: requests_per_second must be from 0.00001 (about one request a day) to 1000000000, or unlimited, not 1000000001"},
		{"unlimited burst", "burst: 3", "burst: unlimited", "line 26: burst must be a whole number of at least 1 (an unlimited rate needs no burst)"},
		{"zero burst", "burst: 3", "burst: 0", "line 26: burst must be a whole number from 1 to 1000000000, not 0"},
		{"unknown limit", "video_tasks_in_flight: 7", "video_tasks_in_flight: 7\n        tasks: 3", `line 32: unknown key "tasks"`},
		{"concurrent requests per tenant", "video_tasks_in_flight: 7", "video_tasks_in_flight: 7\n        concurrent_requests: 3", `line 32: unknown key "concurrent_requests"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseEdited(t, withLimits, tt.old, tt.new)
			if !strings.HasPrefix(err.Error(), "catalog c.yaml: ") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q\nwant it to contain %q", err, tt.want)
			}
		})
	}
}

func TestLimitsAcceptTheRateBounds(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"0.00001", "1e-5", "1000000000"} {
		c, err := Parse("c.yaml", []byte(strings.Replace(withLimits, "requests_per_second: 5", "requests_per_second: "+v, 1)))
		if err != nil {
			t.Errorf("requests_per_second %s: %v", v, err)
			continue
		}
		acme, _ := c.Tenant("acme")
		if r := acme.Limits().Key.RequestsPerSecond; r < MinRequestsPerSecond || r > MaxRequestsPerSecond {
			t.Errorf("requests_per_second %s read as %v", v, r)
		}
	}
}

func TestDemoAndExampleStateTheirLimits(t *testing.T) {
	t.Parallel()
	demo, _ := Demo().Tenant("demo")
	if demo.Limits() != DefaultLimits() {
		t.Errorf("demo limits %+v differ from the defaults %+v; docs/catalog.md says the demo uses them", demo.Limits(), DefaultLimits())
	}
	c, err := Load("../../examples/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, ten := range c.Tenants {
		if ten.Limits() == DefaultLimits() {
			t.Errorf("example tenant %q shows no limits setting", ten.ID)
		}
	}
}
