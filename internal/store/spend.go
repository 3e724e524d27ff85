package store

import (
	"context"
	"fmt"
	"time"

	"mediagen/internal/money"
)

// Caps are spend caps per UTC calendar period, in the owner's currency. The zero Caps has none;
// a cap of 0 is a cap (nothing may be spent), not the absence of one (money.Cap).
type Caps struct {
	Daily   money.Cap
	Monthly money.Cap
}

// Any reports whether any cap is set.
func (c Caps) Any() bool { return c.Daily.Set() || c.Monthly.Set() }

// SpendCounter names one spend counter: what one owner (a key or a tenant) spent in one
// period. The period is a text the caller makes ("day:2026-11-25", "month:2026-11"); the
// store only compares it, and two counters are the same when Scope, Owner and Period are.
//
// From and Until bound the period [From, Until). A counter's row is made by the first hold of
// its period, which may come after the owner spent in it (a cap set mid-period): the row then
// starts seeded with what the owner's video tasks and speech records accepted in [From, Until)
// spent so far, each its final charge if settled, else its open reservation; and a read of a
// period with no row yet answers that seed. A zero From seeds nothing (the row starts at the
// hold's amount, and a read of no row answers 0).
type SpendCounter struct {
	Scope       string // "key" or "tenant"
	Owner       string // the key or tenant id
	Period      string
	From, Until time.Time
}

// Same reports whether c and o name the same counter (their bounds aside).
func (c SpendCounter) Same(o SpendCounter) bool {
	return c.Scope == o.Scope && c.Owner == o.Owner && c.Period == o.Period
}

// SpendHold is a reservation counted against caps: each counter's spending grows by Amount
// only if it stays at most its Cap. The counts are kept with Ref, so the settlement of Ref
// adjusts the very counters the reservation grew, in the period it was made.
type SpendHold struct {
	Ref      string
	Amount   money.Micros
	Counters []CappedCounter
}

// CappedCounter is a counter and the cap it must stay within (Cap ≥ 0: a cap of 0 admits only
// holds of 0).
type CappedCounter struct {
	SpendCounter
	Cap money.Micros
}

// SpendCapError is the refusal of a hold: the counter of Counters[Index] would have gone
// above its cap. It matches ErrSpendCap.
type SpendCapError struct {
	Index int
	Spent money.Micros // what the counter held when it refused (-1 if unknown)
}

func (e *SpendCapError) Error() string {
	return fmt.Sprintf("spend counter %d: %v", e.Index, ErrSpendCap)
}

// Is makes errors.Is(err, ErrSpendCap) true.
func (e *SpendCapError) Is(target error) bool { return target == ErrSpendCap }

// SpendTx is the write side of spend caps.
type SpendTx interface {
	// HoldSpend grows each counter of h by h.Amount, tenant's first, each with one guarded
	// statement, and records the hold under h.Ref. If a counter would exceed its cap it fails
	// with a *SpendCapError, and the caller must roll the transaction back. A hold without
	// counters does nothing. Callers hold before moving the key's accounts (lock order).
	HoldSpend(ctx context.Context, h SpendHold) error
	// SettleSpend ends the hold of ref, if there is one: each counter it grew moves by
	// (final − held), so the period holds what was charged; final = 0 gives the hold back.
	// No hold (a reservation made with no cap) is not an error. Callers settle the counters
	// before moving the key's accounts, as they hold them.
	SettleSpend(ctx context.Context, ref string, final money.Micros) error
}
