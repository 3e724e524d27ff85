package usage

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Store is what reports read.
type Store interface {
	UsageReport(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error)
}

// Report is a report's answer: one row per group and currency, and the totals per currency.
// Amounts are exact decimals of the currency (money.Micros), seconds exact to the
// microsecond.
type Report struct {
	Object  string    `json:"object"` // "usage.report"
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	GroupBy []string  `json:"group_by"`
	Data    []Row     `json:"data"`
	Totals  []Row     `json:"totals"`

	withCost bool
}

// Columns names the report's columns: Columns(GroupBy), and the cost columns when the rows
// carry the cost.
func (rep Report) Columns() []string {
	out := Columns(rep.GroupBy)
	if rep.withCost {
		out = append(out, costColumns...)
	}
	return out
}

// Row is one group's figures. The dimensions it was not grouped by are omitted.
type Row struct {
	Day      string `json:"day,omitempty"`  // 2026-11-01, when grouped by day
	Hour     string `json:"hour,omitempty"` // 2026-11-01T13:00:00Z, when grouped by hour
	Tenant   string `json:"tenant,omitempty"`
	Key      string `json:"key,omitempty"`
	KeyName  string `json:"key_name,omitempty"`
	Alias    string `json:"alias,omitempty"`
	Route    string `json:"route,omitempty"`
	Upstream string `json:"upstream,omitempty"`
	Currency string `json:"currency"`
	Figures
	// Cost is the operator's cost and margin (operator reports only; absent in a key's own).
	// With it, rows are also split by the cost's currency, so that a row's cost is either
	// known, in one currency, or unknown.
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is the operator's cost of a row's settlements, from the cost blocks of the accounts
// that ran them (billing.WithTaskCost). Known is false for settlements whose account has no
// cost for what they used: Amount and Margin are then absent, never 0. Margin is Charged −
// Amount, present when the cost is known and in the row's currency.
type Cost struct {
	Known    bool          `json:"known"`
	Currency string        `json:"currency,omitempty"`
	Amount   *money.Micros `json:"amount,omitempty"`
	Margin   *money.Micros `json:"margin,omitempty"`
}

// setMargin fills Margin from the row's charge.
func (r *Row) setMargin() {
	if r.Cost == nil || !r.Cost.Known || r.Cost.Amount == nil || r.Cost.Currency != r.Currency {
		return
	}
	m := r.Charged - *r.Cost.Amount
	r.Cost.Margin = &m
}

// addCost adds a store row's cost to r.
func (r *Row) addCost(u store.UsageRow) {
	if r.Cost == nil || !r.Cost.Known {
		return
	}
	if r.Cost.Amount == nil {
		r.Cost.Amount = new(money.Micros)
	}
	*r.Cost.Amount += u.Cost
}

// newCost is the cost of a row of a store row's cost currency ("": unknown).
func newCost(costCurrency string) *Cost {
	return &Cost{Known: costCurrency != "", Currency: costCurrency}
}

// Figures are the sums of a row. Count is every settled task and speech record; Succeeded,
// Failed and Expired split it by outcome. Reserved = Charged − Overage + Refunded.
type Figures struct {
	Count      int64        `json:"count"`
	Succeeded  int64        `json:"succeeded"`
	Failed     int64        `json:"failed"`
	Expired    int64        `json:"expired"`
	Seconds    money.Micros `json:"seconds"` // micro-units of a second, shown as exact decimal seconds
	Tokens     int64        `json:"tokens"`
	Characters int64        `json:"characters"`
	Reserved   money.Micros `json:"reserved"`
	Charged    money.Micros `json:"charged"`
	Overage    money.Micros `json:"overage"`
	Refunded   money.Micros `json:"refunded"`
}

func (f *Figures) add(r store.UsageFigures, outcome string) {
	f.Count += r.Count
	switch outcome {
	case store.OutcomeSucceeded:
		f.Succeeded += r.Count
	case store.OutcomeFailed:
		f.Failed += r.Count
	case store.OutcomeExpired:
		f.Expired += r.Count
	}
	f.Seconds += money.Micros(r.SecondsMicros)
	f.Tokens += r.Tokens
	f.Characters += r.Characters
	f.Reserved += r.Reserved
	f.Charged += r.Charged
	f.Overage += r.Overage
	f.Refunded += r.Refunded
}

// Names resolves key ids to key names for a report grouped by key ("" when unknown).
type Names func(ctx context.Context) (map[string]string, error)

// Run answers q from the rollups. names, if not nil, fills KeyName when grouped by key.
func Run(ctx context.Context, s Store, q Query, names Names) (Report, error) {
	groups := append(slices.Clone(q.GroupBy), store.UsageByOutcome)
	rows, err := s.UsageReport(ctx, store.UsageQuery{From: q.From, To: q.To, GroupBy: groups, TenantID: q.Tenant, KeyID: q.Key})
	if err != nil {
		return Report{}, fmt.Errorf("usage report: %w", err)
	}
	var keyNames map[string]string
	if names != nil && slices.Contains(q.GroupBy, store.UsageByKey) {
		if keyNames, err = names(ctx); err != nil {
			return Report{}, fmt.Errorf("usage report: key names: %w", err)
		}
	}
	rep := Report{Object: "usage.report", From: q.From, To: q.To, GroupBy: q.GroupBy, Data: []Row{}, Totals: []Row{}, withCost: q.Cost}
	if rep.GroupBy == nil {
		rep.GroupBy = []string{}
	}
	// The store orders rows by the groups with outcome last, so the rows of one group are
	// adjacent: fold them into one.
	var last *Row
	totals := map[string]*Row{}
	for _, r := range rows {
		row := Row{Tenant: r.TenantID, Key: r.KeyID, KeyName: keyNames[r.KeyID], Alias: r.Alias, Route: r.Route,
			Upstream: r.Upstream, Currency: r.Currency}
		if q.Cost {
			row.Cost = newCost(r.CostCurrency)
		}
		if slices.Contains(q.GroupBy, store.UsageByDay) {
			row.Day = r.Bucket.UTC().Format(time.DateOnly)
		}
		if slices.Contains(q.GroupBy, store.UsageByHour) {
			row.Hour = r.Bucket.UTC().Format(time.RFC3339)
		}
		if last == nil || !sameGroup(*last, row) {
			rep.Data = append(rep.Data, row)
			last = &rep.Data[len(rep.Data)-1]
		}
		last.add(r.UsageFigures, r.Outcome)
		last.addCost(r)
		// Totals are per currency, and with the cost per currency and cost currency.
		key := r.Currency
		if q.Cost {
			key += "\x00" + r.CostCurrency
		}
		t, ok := totals[key]
		if !ok {
			t = &Row{Currency: r.Currency}
			if q.Cost {
				t.Cost = newCost(r.CostCurrency)
			}
			totals[key] = t
		}
		t.add(r.UsageFigures, r.Outcome)
		t.addCost(r)
	}
	for _, c := range slices.Sorted(maps.Keys(totals)) {
		rep.Totals = append(rep.Totals, *totals[c])
	}
	for i := range rep.Data {
		rep.Data[i].setMargin()
	}
	for i := range rep.Totals {
		rep.Totals[i].setMargin()
	}
	return rep, nil
}

func sameGroup(a, b Row) bool {
	ac, bc := "", ""
	if a.Cost != nil {
		ac = "known:" + a.Cost.Currency
	}
	if b.Cost != nil {
		bc = "known:" + b.Cost.Currency
	}
	a.Figures, b.Figures, a.Cost, b.Cost = Figures{}, Figures{}, nil, nil
	return a == b && ac == bc
}
