package sqldb

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"mediagen/internal/store"
)

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

// knownRows remembers the spend counter rows known to exist. Rows are never deleted, so once a
// transaction whose holds grew a counter committed, the counter's row exists for good, and
// later holds of it need neither the seed nor the open records' holds: they send holdSQL alone
// (and a shared batch whose counters are all known sends neither seeding statement). Only
// committed transactions teach it; it forgets everything past maxKnownRows entries (a miss
// only costs the probes).
type knownRows struct {
	mu sync.Mutex
	m  map[string]struct{}
}

const maxKnownRows = 1 << 16

func counterKey(c store.SpendCounter) string { return c.Scope + "\x00" + c.Owner + "\x00" + c.Period }

// has reports whether c's row is known to exist.
func (k *knownRows) has(c store.SpendCounter) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	_, ok := k.m[counterKey(c)]
	return ok
}

// committed learns the counters t's holds grew; t has committed.
func (k *knownRows) committed(t *Tx) {
	if len(t.held) == 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil || len(k.m)+len(t.held) > maxKnownRows {
		k.m = make(map[string]struct{})
	}
	for _, key := range t.held {
		k.m[key] = struct{}{}
	}
}

// unseeded is c without bounds when its row is known to exist: its hold needs no seed.
func (db *DB) unseeded(c store.CappedCounter) store.CappedCounter {
	if !c.From.IsZero() && db.spendRows.has(c.SpendCounter) {
		c.From, c.Until = time.Time{}, time.Time{}
	}
	return c
}

// ExplainSpendSeed is the database's plan for the seed of a new counter c (spend.go), one line
// per row of EXPLAIN (EXPLAIN QUERY PLAN on SQLite): how bench/caps shows that the seed reads
// the owner's records of the period by index, not the tables.
func (db *DB) ExplainSpendSeed(ctx context.Context, c store.SpendCounter) ([]string, error) {
	col := "key_id"
	if c.Scope == "tenant" {
		col = "tenant_id"
	}
	from, until := micros(c.From), micros(c.Until)
	explain := "EXPLAIN "
	if db.d.Name() == "sqlite" {
		explain = "EXPLAIN QUERY PLAN "
	}
	q := explain + "SELECT " + fmt.Sprintf(seedSQL, col)
	rows, err := db.read.QueryContext(ctx, db.q(q), c.Owner, from, until, "", c.Owner, from, until, "")
	if err != nil {
		return nil, fmt.Errorf("explain spend seed: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		// SQLite: id, parent, notused, detail; PostgreSQL: one text column.
		out = append(out, fmt.Sprint(vals[len(vals)-1]))
	}
	return out, rows.Err()
}
