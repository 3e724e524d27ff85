package catalog

import (
	"fmt"
	"math"
	"strconv"

	"gopkg.in/yaml.v3"
)

// Limits per API key and per tenant (docs/catalog.md, "Limits"). A setting is given at the
// catalog's top level (for every tenant) or in a tenant's own limits block (for that tenant),
// field by field; what neither gives takes the built-in default below. Every limit can be the
// word unlimited.

// Unlimited is the value of a limit that does not limit.
const Unlimited = -1

// Count is a limit on a number of things: a whole number of at least 1, or Unlimited. Zero
// means the file did not give it (0 itself is refused: a limit that admits nothing would lock
// the tenant out, which is what revoking keys is for).
type Count int64

// PerSecond is a request rate: a positive decimal number of requests per second, or Unlimited.
// Zero means not given.
type PerSecond float64

// Burst is how many requests a full token bucket admits back to back: a whole number of at
// least 1. Zero means not given.
type Burst int64

// LimitSettings is a limits block of the file: catalog-wide or a tenant's own.
type LimitSettings struct {
	Key    KeyLimitSettings    `yaml:"key"`
	Tenant TenantLimitSettings `yaml:"tenant"`
}

// KeyLimitSettings apply to each API key on its own.
type KeyLimitSettings struct {
	RequestsPerSecond    PerSecond `yaml:"requests_per_second"`
	Burst                Burst     `yaml:"burst"`
	ConcurrentRequests   Count     `yaml:"concurrent_requests"`
	VideoTasksInFlight   Count     `yaml:"video_tasks_in_flight"`
	SpeechInFlight       Count     `yaml:"speech_in_flight"`
	AssetIngestsInFlight Count     `yaml:"asset_ingests_in_flight"`
}

// TenantLimitSettings apply to all keys of a tenant together.
type TenantLimitSettings struct {
	RequestsPerSecond    PerSecond `yaml:"requests_per_second"`
	Burst                Burst     `yaml:"burst"`
	VideoTasksInFlight   Count     `yaml:"video_tasks_in_flight"`
	SpeechInFlight       Count     `yaml:"speech_in_flight"`
	AssetIngestsInFlight Count     `yaml:"asset_ingests_in_flight"`
}

// Limits are a tenant's effective limits: every field set, Unlimited where nothing is limited.
type Limits struct {
	Key    KeyLimits
	Tenant TenantLimits
}

// KeyLimits are the effective limits of each key of a tenant.
type KeyLimits struct {
	// RequestsPerSecond and Burst are a token bucket over every authenticated request.
	RequestsPerSecond PerSecond
	Burst             Burst
	// ConcurrentRequests bounds the key's requests being processed at once (speech requests
	// hold theirs while the audio is generated).
	ConcurrentRequests Count
	// VideoTasksInFlight bounds the key's queued and in-progress video tasks.
	VideoTasksInFlight Count
	// SpeechInFlight bounds the key's speech generations that have not finished.
	SpeechInFlight Count
	// AssetIngestsInFlight bounds the key's assets still Processing (queued for ingestion or
	// being fetched): the asset workers are few and shared by every tenant.
	AssetIngestsInFlight Count
}

// TenantLimits are the effective limits of a tenant's keys together.
type TenantLimits struct {
	RequestsPerSecond    PerSecond
	Burst                Burst
	VideoTasksInFlight   Count
	SpeechInFlight       Count
	AssetIngestsInFlight Count
}

// DefaultLimits apply where the catalog says nothing. Each is a number someone chose:
//
//   - key rate 100 requests/s: a client polling every one of its 200 in-flight tasks once every
//     2 s (the API reference suggests polling every few seconds) plus its creates fits; a loop
//     that polls as fast as it can does not. Burst defaults to twice the rate: 2 s of traffic.
//   - key concurrent requests 32: the HTTP client pools of common SDKs hold 10 to 20
//     connections; 32 leaves room above them, and a client that opens hundreds of parallel
//     connections is stopped before it occupies the server's workers.
//   - key video tasks in flight 200: a batch of 200 videos of several minutes each is a large
//     job for one key; more would only wait in the queue behind each other while holding the
//     upstreams' capacity from other keys.
//   - key speech in flight 8: a speech generation holds an engine for seconds; 8 at once per
//     key is far above an interactive user and keeps one key from taking the whole engine.
//   - key asset ingestions in flight 10: a batch of ten reference images or clips is admitted at
//     once, and a larger upload that honours Retry-After keeps ten going (an image ingests in
//     seconds). It is far below what starves the ingestion workers (2 per replica, each fetch up
//     to 10 minutes): ten sources as slow as allowed hold one replica's workers for about 50
//     minutes at worst, where an unbounded key could queue thousands and hold them for days.
//   - tenant: five times the key limits (rate 500/s, 1000 tasks, 32 speech): a tenant's keys
//     together are bounded, so one organisation with many keys cannot crowd out the others.
//     Asset ingestions are the exception at three times (30): every tenant shares the same two
//     workers per replica, so one tenant's keys together may fill the queue less far.
//
// Benchmarks that drive thousands of requests per second on one key set their own catalog
// with unlimited limits (bench/api).
func DefaultLimits() Limits {
	return Limits{
		Key: KeyLimits{RequestsPerSecond: 100, Burst: 200, ConcurrentRequests: 32,
			VideoTasksInFlight: 200, SpeechInFlight: 8, AssetIngestsInFlight: 10},
		Tenant: TenantLimits{RequestsPerSecond: 500, Burst: 1000, VideoTasksInFlight: 1000, SpeechInFlight: 32,
			AssetIngestsInFlight: 30},
	}
}

// Limits returns the tenant's effective limits.
func (t *Tenant) Limits() Limits { return t.limits }

// resolveLimits fills the tenant's effective limits: its own settings, then the catalog's,
// then the defaults, field by field. A rate and its burst go together: a block that sets a rate
// without a burst gets twice that rate, rather than a burst chosen for another rate.
func resolveLimits(catalogWide, own LimitSettings) Limits {
	d := DefaultLimits()
	ck, ok := catalogWide.Key, own.Key
	ct, ot := catalogWide.Tenant, own.Tenant
	l := Limits{
		Key: KeyLimits{
			ConcurrentRequests:   first(ok.ConcurrentRequests, ck.ConcurrentRequests, d.Key.ConcurrentRequests),
			VideoTasksInFlight:   first(ok.VideoTasksInFlight, ck.VideoTasksInFlight, d.Key.VideoTasksInFlight),
			SpeechInFlight:       first(ok.SpeechInFlight, ck.SpeechInFlight, d.Key.SpeechInFlight),
			AssetIngestsInFlight: first(ok.AssetIngestsInFlight, ck.AssetIngestsInFlight, d.Key.AssetIngestsInFlight),
		},
		Tenant: TenantLimits{
			VideoTasksInFlight:   first(ot.VideoTasksInFlight, ct.VideoTasksInFlight, d.Tenant.VideoTasksInFlight),
			SpeechInFlight:       first(ot.SpeechInFlight, ct.SpeechInFlight, d.Tenant.SpeechInFlight),
			AssetIngestsInFlight: first(ot.AssetIngestsInFlight, ct.AssetIngestsInFlight, d.Tenant.AssetIngestsInFlight),
		},
	}
	l.Key.RequestsPerSecond, l.Key.Burst = bucket(ok.RequestsPerSecond, ok.Burst, ck.RequestsPerSecond, ck.Burst, d.Key.RequestsPerSecond)
	l.Tenant.RequestsPerSecond, l.Tenant.Burst = bucket(ot.RequestsPerSecond, ot.Burst, ct.RequestsPerSecond, ct.Burst, d.Tenant.RequestsPerSecond)
	return l
}

// bucket resolves a rate and its burst. The defaults' burst is twice their rate too.
func bucket(ownRate PerSecond, ownBurst Burst, wideRate PerSecond, wideBurst Burst, defRate PerSecond) (PerSecond, Burst) {
	rate := first(ownRate, wideRate, defRate)
	burst := ownBurst
	if burst == 0 && ownRate == 0 {
		burst = wideBurst
	}
	if burst == 0 {
		burst = twice(rate)
	}
	return rate, burst
}

// first returns the first value that was given (non-zero).
func first[T ~int64 | ~float64](vs ...T) T {
	for _, v := range vs {
		if v != 0 {
			return v
		}
	}
	return 0
}

func twice(r PerSecond) Burst {
	if r == Unlimited {
		return 1 // unused: an unlimited rate has no bucket
	}
	return Burst(max(1, math.Ceil(2*float64(r))))
}

// Unlimited reports whether the count does not limit.
func (c Count) Unlimited() bool { return c == Unlimited }

// Unlimited reports whether the rate does not limit.
func (r PerSecond) Unlimited() bool { return r == Unlimited }

// String shows a count as the file would write it.
func (c Count) String() string {
	if c == Unlimited {
		return "unlimited"
	}
	return strconv.FormatInt(int64(c), 10)
}

// String shows a rate as the file would write it.
func (r PerSecond) String() string {
	if r == Unlimited {
		return "unlimited"
	}
	return strconv.FormatFloat(float64(r), 'f', -1, 64)
}

// The range of requests_per_second. The upper bound is maxCount, like every count. The lower
// bound is about one request a day (one every 100 000 s, 27.8 h): a slower limit is a
// revoked key in all but name, and the token bucket must be able to time a wait of
// 1/rate as a time.Duration (at most 292 years) even when --limit-replicas divides the
// rate by limits.MaxReplicas: 1000/0.00001 s is 3.2 years.
const (
	MinRequestsPerSecond PerSecond = 0.00001
	MaxRequestsPerSecond PerSecond = maxCount
)

// maxCount keeps counts far inside every integer type they meet (database integers, float
// arithmetic of the buckets).
const maxCount = 1_000_000_000

func (c *Count) UnmarshalYAML(n *yaml.Node) error {
	if isUnlimited(n) {
		*c = Unlimited
		return nil
	}
	v, err := wholeNumber(n, "a limit", " or unlimited")
	if err != nil {
		return err
	}
	*c = Count(v)
	return nil
}

func (b *Burst) UnmarshalYAML(n *yaml.Node) error {
	if isUnlimited(n) {
		return fmt.Errorf("line %d: burst must be a whole number of at least 1 (an unlimited rate needs no burst)", n.Line)
	}
	v, err := wholeNumber(n, "burst", "")
	if err != nil {
		return err
	}
	*b = Burst(v)
	return nil
}

func (r *PerSecond) UnmarshalYAML(n *yaml.Node) error {
	if isUnlimited(n) {
		*r = Unlimited
		return nil
	}
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
		return fmt.Errorf("line %d: requests_per_second must be a number or unlimited, not %s", n.Line, shown(n))
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	// NaN fails both comparisons, so it is refused too.
	if err != nil || !(v >= float64(MinRequestsPerSecond) && v <= float64(MaxRequestsPerSecond)) {
		return fmt.Errorf("line %d: requests_per_second must be from %s (about one request a day) to %s, or unlimited, not %s",
			n.Line, MinRequestsPerSecond, MaxRequestsPerSecond, n.Value)
	}
	*r = PerSecond(v)
	return nil
}

func isUnlimited(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" && n.Value == "unlimited"
}

// wholeNumber reads a count; orUnlimited is what the messages add to "a whole number".
func wholeNumber(n *yaml.Node, what, orUnlimited string) (int64, error) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
		return 0, fmt.Errorf("line %d: %s must be a whole number of at least 1%s, not %s", n.Line, what, orUnlimited, shown(n))
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil || v < 1 || v > maxCount {
		msg := fmt.Sprintf("line %d: %s must be a whole number from 1 to %d%s, not %s", n.Line, what, maxCount, orUnlimited, n.Value)
		if err == nil && v == 0 {
			msg += " (0 would refuse every request; revoke keys to stop a tenant)"
		}
		return 0, fmt.Errorf("%s", msg)
	}
	return v, nil
}

// shown names a node in an error: its text for a scalar, its kind otherwise.
func shown(n *yaml.Node) string {
	switch n.Kind {
	case yaml.ScalarNode:
		return written(n)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "this value"
}
