package sqldb

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Spend caps (migration 0016). A counter row holds what one key or tenant spent in one UTC
// period: its open reservations plus its settled charges. A reservation grows it with one
// guarded upsert, the cap check and the growth being one statement, as Post's funds check and
// debit are: two replicas cannot both pass a check made before either wrote, and a refused
// statement changes nothing.
//
// Lock order: counter rows are locked tenant first, then key (holdLess), after the in-flight
// counters and before the key's accounts, in holds (billing.Reserve) and settlements
// (billing.Settle) alike. Before, not after: a shared batch running its members one by one
// with savepoints would otherwise hold the tenant's counter while it waits for a later
// member's accounts, which a settlement of that key could hold while it waits for the
// tenant's counter. In an optimistic shared batch (PostgreSQL) the growths are merged and sent
// with the commit, before the batch's account moves (merge.go). A counter made mid-period
// starts seeded with what its period spent before (spendseed.go).

// holdSQL grows a counter unless it would pass its cap (args: scope, owner, period, amount,
// cap); it returns the new value, or no row when refused. A new row needs no guard: the
// caller refuses an amount above the cap before sending it.
const holdSQL = `INSERT INTO spend_periods (scope, owner, period, spent, cap) VALUES (?, ?, ?, ?, ?)
	ON CONFLICT (scope, owner, period) DO UPDATE SET spent = spend_periods.spent + EXCLUDED.spent, cap = EXCLUDED.cap
	WHERE spend_periods.spent + EXCLUDED.spent <= EXCLUDED.cap
	RETURNING spent`

// holdSpendsSQL is holdSQL for an optimistic shared batch (PostgreSQL, merge.go): each counter
// grows by the batch's total for it, by arrays of scopes, owners, periods, totals and caps,
// only where the total fits the cap, new row or not. Wrapped by Piper.RequireRows, the server
// refuses unless every counter grew; the batch then runs again with savepoints, where each
// member's hold answers for itself. The total fitting is conservative: if the batch's sum fits,
// every member's own amount does, in any order.
const holdSpendsSQL = `INSERT INTO spend_periods (scope, owner, period, spent, cap)
	SELECT v.scope, v.owner, v.period, v.spent, v.cap
	FROM unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[]) WITH ORDINALITY AS v(scope, owner, period, spent, cap, i)
	WHERE v.spent <= v.cap
	ORDER BY v.i
	ON CONFLICT (scope, owner, period) DO UPDATE SET spent = spend_periods.spent + EXCLUDED.spent, cap = EXCLUDED.cap
	WHERE spend_periods.spent + EXCLUDED.spent <= EXCLUDED.cap
	RETURNING 1`

// holdLess orders counters tenant first, then key, then by owner and period.
func holdLess(a, b store.CappedCounter) bool {
	if (a.Scope == "tenant") != (b.Scope == "tenant") {
		return a.Scope == "tenant"
	}
	if a.Owner != b.Owner {
		return a.Owner < b.Owner
	}
	return a.Period < b.Period
}

// HoldSpend grows each counter by h.Amount within its cap and records the hold.
func (t *Tx) HoldSpend(ctx context.Context, h store.SpendHold) error {
	if len(h.Counters) == 0 {
		return nil
	}
	if h.Amount < 0 {
		return fmt.Errorf("hold %s: negative amount %s", h.Ref, h.Amount)
	}
	// Sorted for the lock order; the refusal names the caller's index.
	order := make([]int, len(h.Counters))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return holdLess(h.Counters[order[i]], h.Counters[order[j]]) })
	if t.merge == nil {
		// The open records' holds on the counters that have no row yet, before any is made
		// (holdOpenSQL); checks first, so a hold refused by them sends nothing.
		sorted := make([]store.SpendCounter, 0, len(order))
		for _, i := range order {
			c := t.db.unseeded(h.Counters[i])
			if c.Cap < 0 || h.Amount > c.Cap {
				sorted = nil
				break
			}
			sorted = append(sorted, c.SpendCounter)
		}
		if q, qargs := holdOpenStatement(sorted, h.Ref); q != "" {
			if _, err := t.exec(ctx, q, qargs...); err != nil {
				return fmt.Errorf("hold %s: open records: %w", h.Ref, err)
			}
		}
	}
	args := make([]any, 0, 5*len(order))
	for _, i := range order {
		c := t.db.unseeded(h.Counters[i])
		if c.Cap < 0 {
			return fmt.Errorf("hold %s: counter %s %s %s with a negative cap", h.Ref, c.Scope, c.Owner, c.Period)
		}
		if h.Amount > c.Cap {
			return fmt.Errorf("hold %s: %w", h.Ref, &store.SpendCapError{Index: i, Spent: -1})
		}
		args = append(args, h.Ref, c.Scope, c.Owner, c.Period, int64(h.Amount))
		if t.merge != nil {
			// In an optimistic shared batch the growth waits for the commit, merged with the
			// other members' and guarded by their sum, before the batch's account moves: the
			// same lock order as below (merge.go).
			t.merge.hold(c, int64(h.Amount), h.Ref)
			t.held = append(t.held, counterKey(c.SpendCounter))
			continue
		}
		refused := true
		q, qargs := holdStatement(c, h.Ref, int64(h.Amount))
		err := t.query(ctx, q, qargs, func(rows Rows) error {
			refused = !rows.Next()
			return nil
		})
		if err != nil {
			return fmt.Errorf("hold %s on %s %s: %w", h.Ref, c.Scope, c.Owner, err)
		}
		if refused {
			spent := money.Micros(-1)
			var v int64
			// A new row refused by its seed was not written: the read answers the seed.
			q, qargs := spentStatement(c.SpendCounter, h.Ref)
			if err := t.queryRow(ctx, q, qargs...).Scan(&v); err == nil {
				spent = money.Micros(v)
			}
			return fmt.Errorf("hold %s: %w", h.Ref, &store.SpendCapError{Index: i, Spent: spent})
		}
		t.held = append(t.held, counterKey(c.SpendCounter))
	}
	if err := t.insert(ctx, `INSERT INTO spend_holds (ref, scope, owner, period, amount)`, "", 5, args); err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("hold %s: %w", h.Ref, store.ErrConflict)
		}
		return fmt.Errorf("hold %s: %w", h.Ref, err)
	}
	return nil
}

// SettleSpend moves each counter the hold of ref grew by (final − held) and drops the hold.
func (t *Tx) SettleSpend(ctx context.Context, ref string, final money.Micros) error {
	if final < 0 {
		return fmt.Errorf("settle spend %s: negative final amount %s", ref, final)
	}
	var held []store.CappedCounter // Cap carries the held amount here
	err := t.query(ctx, `DELETE FROM spend_holds WHERE ref = ? RETURNING scope, owner, period, amount`, []any{ref},
		func(rows Rows) error {
			for rows.Next() {
				var c store.CappedCounter
				var amount int64
				if err := rows.Scan(&c.Scope, &c.Owner, &c.Period, &amount); err != nil {
					return err
				}
				c.Cap = money.Micros(amount)
				held = append(held, c)
			}
			return nil
		})
	if err != nil {
		return fmt.Errorf("settle spend %s: %w", ref, err)
	}
	sort.SliceStable(held, func(i, j int) bool { return holdLess(held[i], held[j]) })
	for _, c := range held {
		delta := int64(final - c.Cap)
		if delta == 0 {
			continue
		}
		if _, err := t.exec(ctx, `UPDATE spend_periods SET spent = spent + ? WHERE scope = ? AND owner = ? AND period = ?`,
			delta, c.Scope, c.Owner, c.Period); err != nil {
			return fmt.Errorf("settle spend %s on %s %s: %w", ref, c.Scope, c.Owner, err)
		}
	}
	return nil
}

// Spent reads counters; a period with no row reads its seed (spend.go), or 0 without bounds.
func (db *DB) Spent(ctx context.Context, counters []store.SpendCounter) ([]money.Micros, error) {
	out := make([]money.Micros, len(counters))
	for i, c := range counters {
		q, args := spentStatement(c, "")
		var v int64
		err := db.readRow(ctx, q, args...).Scan(&v)
		if err != nil && !errors.Is(noRows(err), store.ErrNotFound) {
			return nil, fmt.Errorf("spent %s %s %s: %w", c.Scope, c.Owner, c.Period, err)
		}
		out[i] = money.Micros(v)
	}
	return out, nil
}
