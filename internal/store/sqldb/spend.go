package sqldb

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

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
// with the commit, before the batch's account moves (merge.go).

// holdSQL grows a counter unless it would pass its cap (args: scope, owner, period, amount,
// cap); it returns the new value, or no row when refused. A new row needs no guard: the
// caller refuses an amount above the cap before sending it.
const holdSQL = `INSERT INTO spend_periods (scope, owner, period, spent, cap) VALUES (?, ?, ?, ?, ?)
	ON CONFLICT (scope, owner, period) DO UPDATE SET spent = spend_periods.spent + EXCLUDED.spent, cap = EXCLUDED.cap
	WHERE spend_periods.spent + EXCLUDED.spent <= EXCLUDED.cap
	RETURNING spent`

// Seeding (a cap set mid-period). A counter row exists only from the first capped hold of its
// period; the owner may have spent in that period before (no cap then, or a cap added by an
// update or a catalog reload). So the statement that makes the row seeds it with what the
// owner's records accepted in the period spent so far: a settled record its final charge
// (charged, overage included), an open one its reservation (reserved). Spending counts in the
// period the reservation was made, and a record's created_at is its reservation's time. The
// seed subqueries run only when the row is missing (the CASE does not reach them otherwise),
// once per scope and period, on the indexes tasks_by_key, tasks_by_tenant, speeches_by_key
// and speeches_by_tenant (key_id or tenant_id, created_at) of migration 0017.
//
// The records seeded had no hold. So that an open one's settlement still moves the counter to
// its final charge, the statement before the seeding one (holdOpenSQL) gives each open record
// of the period a hold of its reservation on the new counter. Only a settlement committed
// while the seeding transaction runs can miss it (its DELETE does not see the uncommitted
// hold): that record then stays counted at its reservation, an over-count, never an
// under-count.

// seedSQL is what one scope's records in [from, until) spent, but the record being held (its
// row is written before its hold, in the same transaction). %[1]s is the owner's column.
const seedSQL = `COALESCE((SELECT SUM(CASE WHEN status IN ('queued', 'in_progress') THEN reserved ELSE charged END)
		FROM tasks WHERE %[1]s = ? AND created_at >= ? AND created_at < ? AND id <> ?), 0)
	+ COALESCE((SELECT SUM(CASE WHEN status = 'pending' THEN reserved ELSE charged END)
		FROM speeches WHERE %[1]s = ? AND created_at >= ? AND created_at < ? AND id <> ?), 0)`

// holdOpenSQL (holdOpenHead, a holdOpenBlock per counter joined by UNION ALL, holdOpenTail)
// gives every open record of the period a hold of its reservation on each counter (scope,
// owner, period) that has no row yet (so once, before the statement that makes the row),
// leaving out ref. A hold costs one statement more however many caps it counts against; args:
// holdOpenStatement. %[1]s is the owner's column. The check of the row is a one-row table
// joined first (CROSS JOIN fixes SQLite's loop order), so when the row exists, the usual case,
// nothing is scanned: as a plain WHERE term SQLite checked it per record, a scan of the
// period's records on every capped reservation.
const (
	holdOpenHead  = `INSERT INTO spend_holds (ref, scope, owner, period, amount)`
	holdOpenBlock = `
	SELECT o.id, CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), o.reserved
	FROM (SELECT 1 AS missing WHERE NOT EXISTS (SELECT 1 FROM spend_periods WHERE scope = ? AND owner = ? AND period = ?)) AS g
	CROSS JOIN tasks AS o
	WHERE o.%[1]s = ? AND o.created_at >= ? AND o.created_at < ? AND o.status IN ('queued', 'in_progress') AND o.id <> ?
	UNION ALL
	SELECT o.id, CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), o.reserved
	FROM (SELECT 1 AS missing WHERE NOT EXISTS (SELECT 1 FROM spend_periods WHERE scope = ? AND owner = ? AND period = ?)) AS g
	CROSS JOIN speeches AS o
	WHERE o.%[1]s = ? AND o.created_at >= ? AND o.created_at < ? AND o.status = 'pending' AND o.id <> ?`
	holdOpenTail = `
	ON CONFLICT (ref, scope, period) DO NOTHING`
)

// holdOpenTexts caches holdOpenSQL per sequence of scopes ("tenant,key,key").
var holdOpenTexts sync.Map

// holdOpenStatement is holdOpenSQL and its arguments for the counters with bounds of cs (in
// their order) and the hold of ref, or "" when none has bounds.
func holdOpenStatement(cs []store.SpendCounter, ref string) (string, []any) {
	var scopes []string
	var args []any
	for _, c := range cs {
		if c.From.IsZero() || !c.From.Before(c.Until) {
			continue
		}
		scopes = append(scopes, c.Scope)
		from, until := micros(c.From), micros(c.Until)
		one := []any{c.Scope, c.Owner, c.Period, c.Scope, c.Owner, c.Period, c.Owner, from, until, ref}
		args = append(append(args, one...), one...)
	}
	if len(scopes) == 0 {
		return "", nil
	}
	key := strings.Join(scopes, ",")
	if q, ok := holdOpenTexts.Load(key); ok {
		return q.(string), args
	}
	blocks := make([]string, len(scopes))
	for i, scope := range scopes {
		col := "key_id"
		if scope == "tenant" {
			col = "tenant_id"
		}
		blocks[i] = fmt.Sprintf(holdOpenBlock, col)
	}
	q := holdOpenHead + strings.Join(blocks, "\n\tUNION ALL") + holdOpenTail
	holdOpenTexts.Store(key, q)
	return q, args
}

// holdSeededSQL is holdSQL for a counter with bounds: a new row starts at the seed plus the
// amount, and is refused (no row) if that passes the cap; an existing row grows as in holdSQL.
// Two replicas making the row at once both compute a seed, one inserts, the other's insert
// meets the conflict and grows the first's row by its amount alone (the update adds the
// parameter, not EXCLUDED.spent). Args: holdStatement.
//
// n is MATERIALIZED so the planner does not copy its expression into the WHERE: PostgreSQL
// would then compute the seed twice.
const holdSeededSQL = `WITH n AS MATERIALIZED (SELECT CAST(? AS TEXT) AS scope, CAST(? AS TEXT) AS owner,
		CAST(? AS TEXT) AS period, CAST(? AS BIGINT) AS cap,
		CAST(? AS BIGINT) + CASE WHEN EXISTS (SELECT 1 FROM spend_periods WHERE scope = ? AND owner = ? AND period = ?) THEN 0
			ELSE %s END AS spent)
	INSERT INTO spend_periods (scope, owner, period, spent, cap)
	SELECT n.scope, n.owner, n.period, n.spent, n.cap FROM n
	WHERE n.spent <= n.cap
	ON CONFLICT (scope, owner, period) DO UPDATE SET spent = spend_periods.spent + ?, cap = EXCLUDED.cap
	WHERE spend_periods.spent + ? <= EXCLUDED.cap
	RETURNING spent`

var (
	holdSeededKeySQL    = fmt.Sprintf(holdSeededSQL, fmt.Sprintf(seedSQL, "key_id"))
	holdSeededTenantSQL = fmt.Sprintf(holdSeededSQL, fmt.Sprintf(seedSQL, "tenant_id"))
)

// holdStatement is the statement and arguments growing c by amount for the hold of ref.
func holdStatement(c store.CappedCounter, ref string, amount int64) (string, []any) {
	if c.From.IsZero() || !c.From.Before(c.Until) {
		return holdSQL, []any{c.Scope, c.Owner, c.Period, amount, int64(c.Cap)}
	}
	q := holdSeededKeySQL
	if c.Scope == "tenant" {
		q = holdSeededTenantSQL
	}
	from, until := micros(c.From), micros(c.Until)
	return q, []any{c.Scope, c.Owner, c.Period, int64(c.Cap), amount, c.Scope, c.Owner, c.Period,
		c.Owner, from, until, ref, c.Owner, from, until, ref, amount, amount}
}

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

// seedSpendsSQL makes the missing counter rows of an optimistic shared batch (PostgreSQL,
// merge.go), seeded as holdSeededSQL's are, before holdSpendsSQL grows them; by arrays of
// scopes, owners, periods, caps and bounds (micros; a zero from seeds nothing, as it makes no
// row), and the batch's refs. It runs after the batch's inserts, so the seed leaves out the
// batch's own records by their ids. A row another replica makes meanwhile wins: this one's
// insert does nothing and the hold grows that row.
const seedSpendsSQL = `INSERT INTO spend_periods (scope, owner, period, spent, cap)
	SELECT v.scope, v.owner, v.period,
		COALESCE((SELECT SUM(CASE WHEN t.status IN ('queued', 'in_progress') THEN t.reserved ELSE t.charged END)
			FROM tasks t WHERE v.scope = 'key' AND t.key_id = v.owner AND t.created_at >= v.since AND t.created_at < v.until
			AND t.id <> ALL(?::text[])), 0)
		+ COALESCE((SELECT SUM(CASE WHEN t.status IN ('queued', 'in_progress') THEN t.reserved ELSE t.charged END)
			FROM tasks t WHERE v.scope = 'tenant' AND t.tenant_id = v.owner AND t.created_at >= v.since AND t.created_at < v.until
			AND t.id <> ALL(?::text[])), 0)
		+ COALESCE((SELECT SUM(CASE WHEN s.status = 'pending' THEN s.reserved ELSE s.charged END)
			FROM speeches s WHERE v.scope = 'key' AND s.key_id = v.owner AND s.created_at >= v.since AND s.created_at < v.until), 0)
		+ COALESCE((SELECT SUM(CASE WHEN s.status = 'pending' THEN s.reserved ELSE s.charged END)
			FROM speeches s WHERE v.scope = 'tenant' AND s.tenant_id = v.owner AND s.created_at >= v.since AND s.created_at < v.until), 0),
		v.cap
	FROM unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[], ?::bigint[]) WITH ORDINALITY AS v(scope, owner, period, cap, since, until, i)
	WHERE v.since < v.until
		AND NOT EXISTS (SELECT 1 FROM spend_periods p WHERE p.scope = v.scope AND p.owner = v.owner AND p.period = v.period)
	ORDER BY v.i
	ON CONFLICT (scope, owner, period) DO NOTHING`

// holdOpenSpendsSQL is holdOpenSQL for an optimistic shared batch, before seedSpendsSQL, by
// the same arrays (but the caps). The batch's own tasks already hold on these counters (their
// spend_holds rows were inserted before), so the conflict leaves them as they are. The
// counters missing a row are picked first (m), so a batch whose counters exist scans nothing.
const holdOpenSpendsSQL = `WITH m AS MATERIALIZED (
		SELECT v.* FROM unnest(?::text[], ?::text[], ?::text[], ?::bigint[], ?::bigint[]) AS v(scope, owner, period, since, until)
		WHERE v.since < v.until
			AND NOT EXISTS (SELECT 1 FROM spend_periods p WHERE p.scope = v.scope AND p.owner = v.owner AND p.period = v.period))
	INSERT INTO spend_holds (ref, scope, owner, period, amount)
	SELECT o.id, v.scope, v.owner, v.period, o.reserved
	FROM m AS v,
	LATERAL (
		SELECT t.id, t.reserved FROM tasks t WHERE v.scope = 'key' AND t.key_id = v.owner
			AND t.created_at >= v.since AND t.created_at < v.until AND t.status IN ('queued', 'in_progress')
		UNION ALL
		SELECT t.id, t.reserved FROM tasks t WHERE v.scope = 'tenant' AND t.tenant_id = v.owner
			AND t.created_at >= v.since AND t.created_at < v.until AND t.status IN ('queued', 'in_progress')
		UNION ALL
		SELECT s.id, s.reserved FROM speeches s WHERE v.scope = 'key' AND s.key_id = v.owner
			AND s.created_at >= v.since AND s.created_at < v.until AND s.status = 'pending'
		UNION ALL
		SELECT s.id, s.reserved FROM speeches s WHERE v.scope = 'tenant' AND s.tenant_id = v.owner
			AND s.created_at >= v.since AND s.created_at < v.until AND s.status = 'pending'
	) o
	ON CONFLICT (ref, scope, period) DO NOTHING`

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
			c := h.Counters[i]
			if c.Cap <= 0 || h.Amount > c.Cap {
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
		c := h.Counters[i]
		if c.Cap <= 0 {
			return fmt.Errorf("hold %s: counter %s %s %s without a cap", h.Ref, c.Scope, c.Owner, c.Period)
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

// spentSeededSQL reads a counter, or what its row would be seeded with when it has none.
var (
	spentSeededKeySQL    = fmt.Sprintf(spentSeededSQL, fmt.Sprintf(seedSQL, "key_id"))
	spentSeededTenantSQL = fmt.Sprintf(spentSeededSQL, fmt.Sprintf(seedSQL, "tenant_id"))
)

const spentSeededSQL = `SELECT CAST(COALESCE((SELECT spent FROM spend_periods WHERE scope = ? AND owner = ? AND period = ?), %s) AS BIGINT)`

// spentStatement reads counter c, or its seed if it has no row, leaving out the record ref.
func spentStatement(c store.SpendCounter, ref string) (string, []any) {
	q, args := `SELECT spent FROM spend_periods WHERE scope = ? AND owner = ? AND period = ?`, []any{c.Scope, c.Owner, c.Period}
	if c.From.IsZero() || !c.From.Before(c.Until) {
		return q, args
	}
	q = spentSeededKeySQL
	if c.Scope == "tenant" {
		q = spentSeededTenantSQL
	}
	from, until := micros(c.From), micros(c.Until)
	return q, append(args, c.Owner, from, until, ref, c.Owner, from, until, ref)
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
