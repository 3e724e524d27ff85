package billing

import (
	"encoding/json"
	"errors"

	"mediagen/internal/catalog"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// The operator's cost (docs/billing.md, "Cost and margin"). A settled record's cost is
// computed once, at its settlement, from the cost block of the account it ran on (the catalog
// in force then) and what the upstream reported: completion tokens × per_million_tokens when
// the account prices tokens and the upstream reported some, else the output's measured
// seconds × per_second at the resolution it generated (a production task's generation
// resolution, a native request's resolution, an enhancement's band); for speech, the
// characters spoken × per_character. A record that failed or expired produced nothing
// billable: its cost is 0 where the account has a cost block. Whatever the block leaves out
// is unknown, never 0: the cost's currency is then "" and reports show it as unknown.

// Accounts looks up an upstream account by name (catalog.Holder.Upstream).
type Accounts func(name string) (catalog.UpstreamAccount, bool)

// WithTaskCost adds to a terminal task's usage d the operator's cost of t on the account it
// ran on. reported is the completion tokens the upstream reported (0: none, then the result's
// are used): what the upstream bills, which may differ from the tokens billed to the tenant
// (bounded by the measured video, docs/billing.md).
func WithTaskCost(d store.UsageDelta, t store.Task, reported int64, accounts Accounts) store.UsageDelta {
	return WithTaskCostSeconds(d, t, reported, 0, accounts)
}

// WithTaskCostSeconds is WithTaskCost with the seconds of output the upstream reported
// (DashScope's usage.video_duration; 0: none, then the result's measured seconds are used):
// what a per-second upstream bills, which may differ from the seconds the tenant is billed
// (the stored result is cut to the request).
func WithTaskCostSeconds(d store.UsageDelta, t store.Task, reported int64, reportedSeconds float64, accounts Accounts) store.UsageDelta {
	var req struct {
		Upstream    string `json:"upstream"`
		GenerateRes string `json:"generate_resolution"`
		Request     struct {
			Native *struct {
				Resolution string `json:"Resolution"`
			} `json:"Native"`
		} `json:"request"`
	}
	_ = json.Unmarshal(t.Request, &req)
	// d.Upstream is the account the task ran on (TaskUsage's binding, or a routed task's
	// account set by the settlement); the stored binding is the fallback.
	d.CostAccount = d.Upstream
	if d.CostAccount == "" {
		d.CostAccount = req.Upstream
	}
	cost := accountCost(d.CostAccount, accounts)
	if cost == nil {
		return d
	}
	if t.Status != store.StatusCompleted {
		d.CostCurrency, d.Cost = cost.Currency, 0
		return d
	}
	var res struct {
		Duration         float64 `json:"duration"`
		CompletionTokens int64   `json:"completion_tokens"`
	}
	if json.Unmarshal(t.Result, &res) != nil {
		return d
	}
	tokens := res.CompletionTokens
	if reported > 0 {
		tokens = reported
	}
	if rate, ok := cost.TokenRate(); ok && tokens > 0 {
		return withCost(d, cost.Currency, func() (money.Micros, error) { return TokenCost(rate, tokens) })
	}
	// The resolution the account generated at: production's generation half's, a native
	// request's, an enhancement's billing band.
	var resolution string
	switch {
	case req.GenerateRes != "":
		resolution = req.GenerateRes
	case req.Request.Native != nil:
		resolution = req.Request.Native.Resolution
	default:
		var q struct {
			Band string `json:"band"`
		}
		_ = json.Unmarshal(t.Pricing, &q)
		resolution = q.Band
	}
	if rate, ok := cost.SecondRate(resolution); ok {
		secs := res.Duration
		if reportedSeconds > 0 {
			secs = reportedSeconds
		}
		return withCost(d, cost.Currency, func() (money.Micros, error) { return SecondsCost(rate, SecondsToMicros(secs)) })
	}
	return d
}

// WithSpeechCost adds to a terminal speech record's usage d the operator's cost of s.
func WithSpeechCost(d store.UsageDelta, s store.Speech, accounts Accounts) store.UsageDelta {
	d.CostAccount = d.Upstream
	cost := accountCost(d.CostAccount, accounts)
	if cost == nil {
		return d
	}
	if s.Status != store.SpeechCompleted {
		d.CostCurrency, d.Cost = cost.Currency, 0
		return d
	}
	if rate, ok := cost.CharacterRate(); ok {
		return withCost(d, cost.Currency, func() (money.Micros, error) {
			v, ok := money.MulDiv(rate, d.Characters, 1)
			if !ok {
				return 0, errOverflow
			}
			return v, nil
		})
	}
	return d
}

var errOverflow = errors.New("cost overflows")

func accountCost(name string, accounts Accounts) *catalog.Cost {
	if accounts == nil || name == "" {
		return nil
	}
	acc, ok := accounts(name)
	if !ok {
		return nil
	}
	return acc.Cost
}

// withCost sets d's cost, leaving it unknown if it cannot be computed (an overflow).
func withCost(d store.UsageDelta, currency string, compute func() (money.Micros, error)) store.UsageDelta {
	v, err := compute()
	if err != nil {
		return d
	}
	d.CostCurrency, d.Cost = currency, v
	return d
}
