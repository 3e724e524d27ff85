package catalog

import (
	"fmt"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Strategy is how a task picks among an alias's accounts (upstreams: [a, b, …]).
type Strategy string

const (
	// StrategyPriority: the first account in list order that is healthy and has capacity.
	StrategyPriority Strategy = "priority"
	// StrategyWeighted: accounts drawn at random in proportion to weights, one per account.
	StrategyWeighted Strategy = "weighted"
	// StrategyLeastBusy: the account with the lowest in-flight jobs against its max_in_flight.
	StrategyLeastBusy Strategy = "least_busy"
)

func (s *Strategy) UnmarshalYAML(n *yaml.Node) (err error) {
	*s, err = enum(n, "strategy", StrategyPriority, StrategyWeighted, StrategyLeastBusy)
	return err
}

// RoutingStrategy is the alias's strategy (priority when it sets none).
func (a *Alias) RoutingStrategy() Strategy {
	if a.Strategy == "" {
		return StrategyPriority
	}
	return a.Strategy
}

// Accounts are the accounts of the alias's generation half (or of the whole alias for the
// other products), in the catalog's order: upstreams, or the one upstream.
func (a *Alias) Accounts() []Upstream {
	if len(a.Upstreams) > 0 {
		return names(a.Upstreams)
	}
	if a.Upstream == "" {
		return nil
	}
	return []Upstream{a.Upstream}
}

// EnhancementAccounts are the accounts of a production alias's enhancement half:
// enhance_upstreams, or the one EnhancementUpstream.
func (a *Alias) EnhancementAccounts() []Upstream {
	if len(a.EnhanceUpstreams) > 0 {
		return names(a.EnhanceUpstreams)
	}
	if u := a.EnhancementUpstream(); u != "" {
		return []Upstream{u}
	}
	return nil
}

// Cooldown is a duration written as Go does ("60s", "2m").
type Cooldown time.Duration

func (d *Cooldown) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: cooldown must be a duration such as 60s", n.Line)
	}
	v, err := time.ParseDuration(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: cooldown %q must be a duration such as 60s or 2m", n.Line, n.Value)
	}
	*d = Cooldown(v)
	return nil
}

// BreakerSettings are an account's circuit breaker: after Failures transient failures in a
// row the account is skipped for Cooldown, then one task is let through (half-open).
type BreakerSettings struct {
	Failures int      `yaml:"failures"`
	Cooldown Cooldown `yaml:"cooldown"`
}

// Breaker defaults: 5 transient failures in a row open the breaker for 60 s.
const (
	DefaultBreakerFailures = 5
	DefaultBreakerCooldown = 60 * time.Second
)

// BreakerPolicy is the account's breaker with the defaults filled in.
func (u UpstreamAccount) BreakerPolicy() (failures int, cooldown time.Duration) {
	failures, cooldown = DefaultBreakerFailures, DefaultBreakerCooldown
	if b := u.Breaker; b != nil {
		if b.Failures > 0 {
			failures = b.Failures
		}
		if b.Cooldown > 0 {
			cooldown = time.Duration(b.Cooldown)
		}
	}
	return failures, cooldown
}

func (u *UpstreamAccount) checkBreaker() []error {
	b := u.Breaker
	if b == nil {
		return nil
	}
	var errs []error
	if b.Failures < 0 || b.Failures > 1000 {
		errs = append(errs, fmt.Errorf("upstream %q: breaker.failures must be 1 to 1000 (absent: %d)", u.Name, DefaultBreakerFailures))
	}
	if b.Cooldown < 0 || time.Duration(b.Cooldown) > time.Hour || (b.Cooldown > 0 && time.Duration(b.Cooldown) < time.Second) {
		errs = append(errs, fmt.Errorf("upstream %q: breaker.cooldown must be 1s to 1h (absent: %s)", u.Name, DefaultBreakerCooldown))
	}
	return errs
}

// checkRouting checks the alias's routing fields on their own (the accounts themselves are
// checked by checkBindings): upstream and upstreams exclusive, no duplicates, weights for
// weighted only, one positive weight per account, a model for every entry. It makes the
// first account of a list the alias's Upstream (and EnhanceUpstream), the binding every
// single-account reader uses.
func (a *Alias) checkRouting() []string {
	var msgs []string
	list := func(field, single string, entries []RouteEntry, one *Upstream) {
		names := names(entries)
		if len(names) == 0 {
			return
		}
		if *one != "" {
			msgs = append(msgs, fmt.Sprintf("give either %s (one account) or %s (a list), not both", single, field))
			return
		}
		seen := map[Upstream]bool{}
		for _, n := range names {
			if n == "" {
				msgs = append(msgs, field+" has an empty entry")
				continue
			}
			if seen[n] {
				msgs = append(msgs, fmt.Sprintf("%s names %q twice", field, n))
			}
			seen[n] = true
		}
		*one = names[0]
	}
	list("upstreams", "upstream", a.Upstreams, &a.Upstream)
	msgs = append(msgs, checkEntryModels("upstreams", "model", a.Upstreams, &a.Model)...)
	if len(a.EnhanceUpstreams) > 0 && a.Product != ProductProduction {
		msgs = append(msgs, "enhance_upstreams does not apply to product "+string(a.Product))
	} else {
		list("enhance_upstreams", "enhance_upstream", a.EnhanceUpstreams, &a.EnhanceUpstream)
		msgs = append(msgs, checkEntryModels("enhance_upstreams", "enhance_model", a.EnhanceUpstreams, &a.EnhanceModel)...)
	}
	switch {
	case a.RoutingStrategy() == StrategyWeighted && len(a.Weights) != len(a.Accounts()):
		msgs = append(msgs, fmt.Sprintf("strategy weighted needs weights, one per account of upstreams (%d accounts, %d weights)", len(a.Accounts()), len(a.Weights)))
	case a.RoutingStrategy() != StrategyWeighted && a.Weights != nil:
		msgs = append(msgs, "weights apply to strategy weighted only")
	}
	for i, w := range a.Weights {
		if w < 1 || w > 1000 {
			msgs = append(msgs, fmt.Sprintf("weights[%d] is %d: each weight must be a whole number 1 to 1000", i, w))
		}
	}
	return msgs
}

// accountList names accounts for a message.
func accountList(us []Upstream) string {
	s := make([]string, len(us))
	for i, u := range us {
		s[i] = string(u)
	}
	return strings.Join(s, ", ")
}
