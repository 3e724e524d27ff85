package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"mediagen/internal/money"
)

// Cost is what an upstream account costs the operator (the account's optional cost block):
// per million completion tokens, per second of output by resolution, and per character of
// speech, in one currency. Money is written as the rate cards' is (Rate). Absent means the
// cost is unknown, and reports show it so, never as 0; so is a unit the block leaves out.
type Cost struct {
	Currency         string          `yaml:"currency"`
	PerMillionTokens *Rate           `yaml:"per_million_tokens"`
	PerSecond        map[string]Rate `yaml:"per_second"` // by output resolution: 480p … 8k
	PerCharacter     *Rate           `yaml:"per_character"`
}

// costResolutions are the keys per_second takes.
var costResolutions = []string{"480p", "720p", "1080p", "2k", "4k", "8k"}

// TokenRate is the cost per million completion tokens.
func (c *Cost) TokenRate() (money.Micros, bool) {
	if c == nil || c.PerMillionTokens == nil {
		return 0, false
	}
	return c.PerMillionTokens.Micros(), true
}

// SecondRate is the cost per second of output at a resolution.
func (c *Cost) SecondRate(res string) (money.Micros, bool) {
	if c == nil {
		return 0, false
	}
	r, ok := c.PerSecond[res]
	return r.Micros(), ok
}

// CharacterRate is the cost per character of speech.
func (c *Cost) CharacterRate() (money.Micros, bool) {
	if c == nil || c.PerCharacter == nil {
		return 0, false
	}
	return c.PerCharacter.Micros(), true
}

// check: a currency, known resolutions, at least one unit.
func (c *Cost) check() []string {
	var msgs []string
	if !reCurrency.MatchString(c.Currency) {
		msgs = append(msgs, fmt.Sprintf("cost.currency %q must be a three-letter ISO 4217 code such as USD", c.Currency))
	}
	keys := make([]string, 0, len(c.PerSecond))
	for k := range c.PerSecond {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(costResolutions, k) {
			msgs = append(msgs, fmt.Sprintf("cost.per_second: %q is not a resolution (%s)", k, strings.Join(costResolutions, ", ")))
		}
	}
	if c.PerMillionTokens == nil && len(c.PerSecond) == 0 && c.PerCharacter == nil {
		msgs = append(msgs, "cost names no unit: give per_million_tokens, per_second or per_character (or leave cost out: unknown)")
	}
	return msgs
}

// Warnings are what the check found questionable but not wrong: today, aliases sold below
// their account's cost. A catalog with warnings loads; they are printed by `mediagen admin
// catalog check` and logged at start and at each reload.
func (c *Catalog) Warnings() []string { return c.warnings }

// costWarnings compares each alias's rates with its account's cost, unit by unit, where both
// are in the same currency and the same unit: per million tokens (native), per output second
// at the generated resolution (production's generation half) or at the band (enhancement).
// Speech is sold per second and bought per character, so it is not compared.
func (c *Catalog) costWarnings() []string {
	var out []string
	for _, t := range c.Tenants {
		if t == nil {
			continue
		}
		for _, a := range t.Aliases {
			if a == nil || a.Upstream == "" {
				continue
			}
			acc, ok := c.Upstream(string(a.Upstream))
			if !ok || acc.Cost == nil || acc.Cost.Currency != t.Currency {
				continue
			}
			cost := acc.Cost
			below := func(what string, rate money.Micros, costRate money.Micros, unit string) {
				if rate < costRate {
					out = append(out, fmt.Sprintf("tenant %q alias %q: sold below cost: %s %s %s %s, upstream %q costs %s %s %s",
						t.ID, a.Name, what, rate, t.Currency, unit, a.Upstream, costRate, cost.Currency, unit))
				}
			}
			switch a.Product {
			case ProductNative:
				if r, ok := t.Rates.NativeRate(a.Name); ok {
					if cr, ok := cost.TokenRate(); ok {
						below("rates.native", r, cr, "per million tokens")
					}
				}
			case ProductProduction:
				cr, ok := cost.SecondRate(string(a.GenerateResolution))
				if !ok {
					continue
				}
				for _, res := range t.Packages.Production.Resolutions {
					for _, vi := range []bool{false, true} {
						if r, ok := t.Rates.ProductionRate(a.Tier, res, vi); ok {
							mode := "no_video_input"
							if vi {
								mode = "video_input"
							}
							below(fmt.Sprintf("rates.production.%s.%s.%s", a.Tier, res, mode), r, cr, "per second")
						}
					}
				}
			case ProductEnhancement:
				for _, tier := range enhancementTiers(a.Route) {
					for _, band := range Bands(tier, t.Packages.Enhance8K) {
						cr, ok := cost.SecondRate(band)
						if !ok {
							continue
						}
						if r, ok := t.Rates.EnhancementRate(tier, band); ok {
							below(fmt.Sprintf("rates.enhancement.%s.%s", tier, bandKey(band)), r, cr, "per second")
						}
					}
				}
			}
		}
	}
	return out
}
