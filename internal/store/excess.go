package store

import (
	"context"
	"time"

	"mediagen/internal/money"
)

// UpstreamExcess is one thing an upstream account did beyond a request, or below what its
// result implies (docs/billing.md): a result longer than the request allowed, a result larger
// than asked for, reported usage above what was billed or below what was measured. It is the
// operator's, never the tenant's: written in the transaction that settles the task or speech
// it happened on, with the amounts of that settlement, and never changed.
type UpstreamExcess struct {
	ID       string
	Upstream string // the catalog account
	Route    string // native, production, enhancement, speech
	Ref      string // the task or speech id
	KeyID    string
	TenantID string
	Kind     string // duration, over_request, usage_over, usage_under
	// Claimed is what the upstream's claim (its whole result, or its reported usage) would
	// have charged; Charged is what the tenant was charged; Amount is the part of the claim
	// this kind accounts for (above the charge, or below it for usage_under).
	Claimed, Charged, Amount money.Micros
	Currency                 string
	Detail                   string // what was measured, in words (no upstream text)
	CreatedAt                time.Time
}

// ExcessFilter selects upstream excess records, newest first.
type ExcessFilter struct {
	Upstream string // "" for every account
	Ref      string // "" for every task and speech
	Limit    int    // at most this many (0: DefaultExcessLimit)
}

// DefaultExcessLimit is how many records a listing returns unless asked otherwise: what an
// operator reads on a terminal; summaries cover the rest.
const DefaultExcessLimit = 100

// ExcessSummary totals an account's records of one kind and currency.
type ExcessSummary struct {
	Upstream, Kind, Currency string
	Count                    int64
	Amount                   money.Micros
}

// ExcessStore reads upstream excess records.
type ExcessStore interface {
	UpstreamExcess(ctx context.Context, f ExcessFilter) ([]UpstreamExcess, error)
	UpstreamExcessSummary(ctx context.Context) ([]ExcessSummary, error)
}

// ExcessTx records upstream excess inside a settlement's transaction.
type ExcessTx interface {
	RecordUpstreamExcess(ctx context.Context, e UpstreamExcess) error
}
