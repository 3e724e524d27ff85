package store

import (
	"context"
	"time"

	"mediagen/internal/money"
)

// Usage outcomes: how a settled task or speech record ended, as the usage rollups count it.
const (
	OutcomeSucceeded = "succeeded" // completed (a charge was made)
	OutcomeFailed    = "failed"    // failed (the reservation was released)
	OutcomeExpired   = "expired"   // expired (the reservation was released)
)

// UsageKey is the dimensions of one usage rollup row: one hour (UTC) of one key's settlements
// of one alias, route, upstream account, currency and outcome.
type UsageKey struct {
	Hour     time.Time // the start of the UTC hour the settlement was made in
	TenantID string
	KeyID    string
	Alias    string
	Route    string // native, enhancement, production, speech
	Upstream string // the catalog account the record was bound to at acceptance
	Currency string
	Outcome  string // OutcomeSucceeded, OutcomeFailed, OutcomeExpired
	// CostCurrency is the currency of the operator's cost (the account's cost block), ""
	// when the cost is unknown: known and unknown costs never add up in one row.
	CostCurrency string
}

// UsageFigures are the additive figures of rollups: every one a sum, so that rows add up to
// any grouping exactly.
type UsageFigures struct {
	Count int64
	// SecondsMicros is the measured length of the stored results billed (video or audio), in
	// microseconds; Tokens the completion tokens billed (native); Characters the text spoken
	// (speech, counted at acceptance).
	SecondsMicros int64
	Tokens        int64
	Characters    int64
	// Reserved is what the settlements released from reserved; Charged what they moved to
	// spent (overage included); Overage the part of Charged above the reservation; Refunded
	// what returned to available (Reserved − (Charged − Overage)). Reserved = Charged −
	// Overage + Refunded always.
	Reserved, Charged, Overage, Refunded money.Micros
	// Cost is the operator's cost of the settlements, in the row's CostCurrency (0 when that
	// is "": unknown, not free).
	Cost money.Micros
}

// Add adds o to f.
func (f *UsageFigures) Add(o UsageFigures) {
	f.Count += o.Count
	f.SecondsMicros += o.SecondsMicros
	f.Tokens += o.Tokens
	f.Characters += o.Characters
	f.Reserved += o.Reserved
	f.Charged += o.Charged
	f.Overage += o.Overage
	f.Refunded += o.Refunded
	f.Cost += o.Cost
}

// UsageDelta is what one settlement (or a rebuild's aggregate) adds to one rollup row.
type UsageDelta struct {
	UsageKey
	UsageFigures
	// CostAccount is the account the record ran on: with CostCurrency and Cost, stored on
	// the record by the settlement (UsageTx.SetCost). "" stores nothing (a rebuild's
	// aggregate).
	CostAccount string
}

// Usage grouping dimensions, the column names of UsageQuery.GroupBy.
const (
	UsageByTenant   = "tenant"
	UsageByKey      = "key"
	UsageByAlias    = "alias"
	UsageByRoute    = "route"
	UsageByUpstream = "upstream"
	UsageByOutcome  = "outcome"
	UsageByDay      = "day"
	UsageByHour     = "hour"
)

// UsageQuery selects and groups rollup rows. The caller (internal/usage) validates it: From
// and To are whole hours, From < To, GroupBy holds known names at most once each.
type UsageQuery struct {
	From, To time.Time // [From, To), whole UTC hours
	GroupBy  []string  // dimensions above; currency is always a group
	TenantID string    // "" for every tenant
	KeyID    string    // "" for every key
}

// UsageRow is one group of a report: the dimension values it was grouped by (the others
// empty, Bucket zero unless grouped by day or hour) and its figures.
type UsageRow struct {
	Bucket                                           time.Time
	TenantID, KeyID, Alias, Route, Upstream, Outcome string
	Currency                                         string
	CostCurrency                                     string // "": the cost of the row is unknown
	UsageFigures
}

// Margin is the row's charge less its cost, when the cost is known and in the charge's
// currency.
func (r UsageRow) Margin() (money.Micros, bool) {
	if r.CostCurrency == "" || r.CostCurrency != r.Currency {
		return 0, false
	}
	return r.Charged - r.Cost, true
}

// RecordCost is the operator's cost of one settled task or speech record.
type RecordCost struct {
	Ref     string // the task's or speech record's id
	Speech  bool   // a speech record (else a task)
	Account string // the upstream account it ran on
	// Currency is the cost's currency, "" when the cost is unknown (then Micros is 0 and
	// the stored cost is NULL).
	Currency string
	Micros   money.Micros
}

// UsageStore reads the rollups. They are kept at three grains, each by hour and by day: per
// key and alias, per alias (no tenant or key) and per tenant; a report reads the smallest
// that has its groups and filters, so its cost follows its answer, not the operator's number
// of keys × aliases.
type UsageStore interface {
	// UsageReport sums the rollup rows of q's range and filters per q's groups (and currency),
	// ordered by the groups.
	UsageReport(ctx context.Context, q UsageQuery) ([]UsageRow, error)
	// RebuildUsage replaces every rollup row with the sums of the settled tasks and speech
	// records (what the settlements would have added), in one transaction; idempotent. It is
	// the usage migration's backfill, for `mediagen admin usage rebuild`.
	RebuildUsage(ctx context.Context) error
	// RebuildUsageRange is RebuildUsage for the rows of the whole UTC days [from, to) alone:
	// after a repair of some days' records, it rewrites those days, not every report's.
	RebuildUsageRange(ctx context.Context, from, to time.Time) error
}

// UsageTx maintains the rollups.
type UsageTx interface {
	// AddUsage adds each delta to its rollup row, creating it if need be: one upsert per row,
	// in the transaction of the settlement it counts.
	AddUsage(ctx context.Context, d ...UsageDelta) error
	// SetCost stores a settled record's cost on it (cost_micros, cost_currency, cost_account),
	// in the transaction of its settlement.
	SetCost(ctx context.Context, c RecordCost) error
	// ClearUsage deletes every rollup row, holding off concurrent AddUsage until the
	// transaction ends (PostgreSQL locks the table), so a rebuild in the same transaction
	// counts every settlement once.
	ClearUsage(ctx context.Context) error
	// RebuildUsage is ClearUsage and the usage migration's backfill in this transaction (see
	// UsageStore.RebuildUsage); it must be the transaction's own, not a shared batch's.
	RebuildUsage(ctx context.Context) error
	// RebuildUsageRange is RebuildUsage for the whole UTC days [from, to) alone.
	RebuildUsageRange(ctx context.Context, from, to time.Time) error
}
