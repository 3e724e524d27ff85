package billing

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Usage rollups (docs/billing.md, "Usage reports") are kept by the settlement itself:
// SettleUsage posts the settlement and adds it to its hour's rollup row in the same
// transaction, so the rollups can never disagree with the ledger. The figures are computed
// from the terminal record alone (TaskUsage, SpeechUsage), exactly as the usage migration's
// backfill computes them in SQL from records settled before it: keep the two in step.

// SettleUsage is Settle for a record that has just moved to its terminal state, plus its
// usage: d (from TaskUsage or SpeechUsage) names the key, the reservation and the final
// charge. It returns the overage Settle collected.
func SettleUsage(ctx context.Context, tx store.Tx, ref string, d store.UsageDelta, at time.Time) (money.Micros, error) {
	overage, err := Settle(ctx, tx, d.KeyID, ref, d.Reserved, d.Charged, at)
	if err != nil {
		return 0, err
	}
	d.Hour = at
	if err := tx.AddUsage(ctx, d); err != nil {
		return 0, fmt.Errorf("settle %s: %w", ref, err)
	}
	if d.CostAccount != "" {
		c := store.RecordCost{Ref: ref, Speech: d.Route == "speech", Account: d.CostAccount, Currency: d.CostCurrency, Micros: d.Cost}
		if err := tx.SetCost(ctx, c); err != nil {
			return 0, fmt.Errorf("settle %s: %w", ref, err)
		}
	}
	return overage, nil
}

// outcome is the rollup outcome of a terminal status.
func outcome(status string) string {
	if status == store.StatusCompleted { // also store.SpeechCompleted
		return store.OutcomeSucceeded
	}
	return status
}

// amounts fills the money figures the way Settle moves them.
func amounts(reserved, charged money.Micros) store.UsageFigures {
	over := max(charged-reserved, 0)
	return store.UsageFigures{Count: 1, Reserved: reserved, Charged: charged, Overage: over, Refunded: reserved - (charged - over)}
}

// TaskUsage is what a video task in its terminal state (Status, Charged, Result and
// FinishedAt set; Request and Pricing as stored) adds to the rollups.
func TaskUsage(t store.Task) store.UsageDelta {
	var req struct {
		Upstream string `json:"upstream"`
	}
	_ = json.Unmarshal(t.Request, &req) // a record without a binding counts under ""
	d := store.UsageDelta{
		UsageKey: store.UsageKey{Hour: t.FinishedAt, TenantID: t.TenantID, KeyID: t.KeyID, Alias: t.Model, Route: t.Route,
			Upstream: req.Upstream, Currency: QuoteCurrency(t.Pricing), Outcome: outcome(t.Status)},
		UsageFigures: amounts(t.Reserved, t.Charged),
	}
	if t.Status == store.StatusCompleted && len(t.Result) > 0 {
		var res struct {
			Duration         float64 `json:"duration"`
			CompletionTokens int64   `json:"completion_tokens"`
		}
		if json.Unmarshal(t.Result, &res) == nil {
			d.SecondsMicros = int64(math.Round(res.Duration * 1_000_000))
			d.Tokens = res.CompletionTokens
		}
	}
	return d
}

// SpeechUsage is what a speech record in its terminal state adds to the rollups.
func SpeechUsage(s store.Speech) store.UsageDelta {
	var req struct {
		Upstream string `json:"upstream"`
	}
	_ = json.Unmarshal(s.Request, &req)
	var q SpeechQuote
	_ = json.Unmarshal(s.Pricing, &q)
	d := store.UsageDelta{
		UsageKey: store.UsageKey{Hour: s.FinishedAt, TenantID: s.TenantID, KeyID: s.KeyID, Alias: s.Model, Route: "speech",
			Upstream: req.Upstream, Currency: q.Currency, Outcome: outcome(s.Status)},
		UsageFigures: amounts(s.Reserved, s.Charged),
	}
	d.Characters = int64(q.Characters)
	if s.Status == store.SpeechCompleted && len(s.Result) > 0 {
		var res struct {
			DurationMicros int64 `json:"duration_us"`
		}
		if json.Unmarshal(s.Result, &res) == nil {
			d.SecondsMicros = res.DurationMicros
		}
	}
	return d
}
