package sqldb

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// hourMicros and dayMicros are the rollup buckets in the hour column's unit.
const (
	hourMicros = int64(3600) * 1_000_000
	dayMicros  = 24 * hourMicros
)

// usageUpsert adds one settlement's figures to a row of table (usage_rollups by hour,
// usage_daily by day) in one statement on both dialects.
func usageUpsert(table, bucket string) string {
	return `INSERT INTO ` + table + ` (` + bucket + `, tenant_id, key_id, alias, route, upstream, currency, outcome, cost_currency,
	count, seconds_us, tokens, characters, reserved, charged, overage, refunded, cost)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (` + bucket + `, tenant_id, key_id, alias, route, upstream, currency, outcome, cost_currency) DO UPDATE SET
	count = ` + table + `.count + excluded.count,
	seconds_us = ` + table + `.seconds_us + excluded.seconds_us,
	tokens = ` + table + `.tokens + excluded.tokens,
	characters = ` + table + `.characters + excluded.characters,
	reserved = ` + table + `.reserved + excluded.reserved,
	charged = ` + table + `.charged + excluded.charged,
	overage = ` + table + `.overage + excluded.overage,
	refunded = ` + table + `.refunded + excluded.refunded,
	cost = ` + table + `.cost + excluded.cost`
}

var (
	hourlyUpsert = usageUpsert("usage_rollups", "hour")
	dailyUpsert  = usageUpsert("usage_daily", "day")
)

// AddUsage upserts each delta into its hour's and its day's rollup rows. The settlement reads
// nothing back, so in a shared batch the statements are queued with the commit (Tx.later).
func (t *Tx) AddUsage(ctx context.Context, ds ...store.UsageDelta) error {
	for _, d := range ds {
		hour := d.Hour.UTC().UnixMicro()
		hour -= hour % hourMicros
		cost := d.Cost
		if d.CostCurrency == "" {
			cost = 0 // unknown, never a sum
		}
		rest := []any{d.TenantID, d.KeyID, d.Alias, d.Route, d.Upstream, d.Currency, d.Outcome, d.CostCurrency,
			d.Count, d.SecondsMicros, d.Tokens, d.Characters, int64(d.Reserved), int64(d.Charged), int64(d.Overage),
			int64(d.Refunded), int64(cost)}
		if err := t.later(ctx, hourlyUpsert, append([]any{hour}, rest...), nil); err != nil {
			return fmt.Errorf("add usage of key %s: %w", d.KeyID, err)
		}
		if err := t.later(ctx, dailyUpsert, append([]any{hour - hour%dayMicros}, rest...), nil); err != nil {
			return fmt.Errorf("add daily usage of key %s: %w", d.KeyID, err)
		}
	}
	return nil
}

// SetCost stores a settled record's cost; an unknown cost (no currency) is NULL.
func (t *Tx) SetCost(ctx context.Context, c store.RecordCost) error {
	table := "tasks"
	if c.Speech {
		table = "speeches"
	}
	var cost any
	if c.Currency != "" {
		cost = int64(c.Micros)
	}
	if err := t.later(ctx, `UPDATE `+table+` SET cost_micros = ?, cost_currency = ?, cost_account = ? WHERE id = ?`,
		[]any{cost, c.Currency, c.Account, c.Ref}, nil); err != nil {
		return fmt.Errorf("set cost of %s: %w", c.Ref, err)
	}
	return nil
}

// ClearUsage deletes every rollup row. On PostgreSQL it first locks the table against
// writers until the transaction ends: a settlement that has already added to a row is waited
// for (and so counted by the rebuild's read of the records), and one that has not waits for
// the rebuild and then adds to the rebuilt rows.
func (t *Tx) ClearUsage(ctx context.Context) error {
	if t.db.d.Name() == "postgres" {
		if _, err := t.exec(ctx, `LOCK TABLE usage_rollups, usage_daily IN EXCLUSIVE MODE`); err != nil {
			return fmt.Errorf("clear usage: lock: %w", err)
		}
	}
	for _, table := range []string{"usage_rollups", "usage_daily"} {
		if _, err := t.exec(ctx, `DELETE FROM `+table); err != nil {
			return fmt.Errorf("clear usage: %w", err)
		}
	}
	return nil
}

// RebuildUsage replaces every rollup row with the sums of the settled tasks and speech
// records, in one transaction of its own (Tx.RebuildUsage).
func (db *DB) RebuildUsage(ctx context.Context) error {
	return db.transactOnce(ctx, func(tx store.Tx) error { return tx.RebuildUsage(ctx) })
}

// RebuildUsage clears the rollups and runs the usage migration's backfill statements, so that
// a rebuilt database and an upgraded one agree. It is idempotent. The statements are several
// in one text, run on the transaction itself: never prepared (a prepared statement would keep
// only the first).
func (t *Tx) RebuildUsage(ctx context.Context) error {
	if t.db.usageBackfill == "" {
		return fmt.Errorf("rebuild usage: the %s driver set no backfill statement", t.db.d.Name())
	}
	if t.tx == nil {
		return fmt.Errorf("rebuild usage: not inside a transaction of its own")
	}
	if err := t.ClearUsage(ctx); err != nil {
		return err
	}
	if _, err := t.tx.ExecContext(t.stmtCtx(ctx), t.db.usageBackfill); err != nil {
		return fmt.Errorf("rebuild usage: %w", err)
	}
	return nil
}

// SetUsageBackfill sets the statement RebuildUsage runs (see UsageBackfill).
func (db *DB) SetUsageBackfill(stmt string) { db.usageBackfill = stmt }

// UsageBackfill reads the backfill statement out of a dialect's usage migration: everything
// from its first line starting with "INSERT INTO usage_rollups" to the end.
func UsageBackfill(migrations fs.FS, name string) (string, error) {
	body, err := fs.ReadFile(migrations, name)
	if err != nil {
		return "", fmt.Errorf("usage backfill: %w", err)
	}
	var b strings.Builder
	in := false
	sc := bufio.NewScanner(strings.NewReader(string(body)))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "INSERT INTO usage_rollups") {
			in = true
		}
		if in {
			b.WriteString(line)
			b.WriteByte('\n')
		}
	}
	if !in {
		return "", fmt.Errorf("usage backfill: no INSERT INTO usage_rollups in %s", name)
	}
	return b.String(), nil
}

// usageDims maps a grouping name to its SQL expression; the only text a query takes from its
// caller is chosen here, never spliced.
var usageDims = map[string]string{
	store.UsageByTenant:   "tenant_id",
	store.UsageByKey:      "key_id",
	store.UsageByAlias:    "alias",
	store.UsageByRoute:    "route",
	store.UsageByUpstream: "upstream",
	store.UsageByOutcome:  "outcome",
	store.UsageByDay:      fmt.Sprintf("bucket - bucket %% %d", dayMicros),
	store.UsageByHour:     "bucket",
}

// UsageReport sums the rollup rows of q.
func (db *DB) UsageReport(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error) {
	// Currency comes before outcome, so that the rows of one group and currency are adjacent
	// whatever their outcome.
	var order []string
	for _, g := range q.GroupBy {
		if _, ok := usageDims[g]; !ok {
			return nil, fmt.Errorf("usage report: unknown group %q", g)
		}
		if g != store.UsageByOutcome {
			order = append(order, g)
		}
	}
	order = append(order, "currency", "cost_currency")
	if slices.Contains(q.GroupBy, store.UsageByOutcome) {
		order = append(order, store.UsageByOutcome)
	}
	cols := make([]string, len(order))
	for i, g := range order {
		if g == "currency" || g == "cost_currency" {
			cols[i] = g
		} else {
			cols[i] = usageDims[g]
		}
	}
	var filter string
	var fargs []any
	if q.TenantID != "" {
		filter, fargs = filter+" AND tenant_id = ?", append(fargs, q.TenantID)
	}
	if q.KeyID != "" {
		filter, fargs = filter+" AND key_id = ?", append(fargs, q.KeyID)
	}
	const figures = `count, seconds_us, tokens, characters, reserved, charged, overage, refunded, cost`
	const dims = `tenant_id, key_id, alias, route, upstream, currency, outcome, cost_currency, `
	from, to := q.From.UTC().UnixMicro(), q.To.UTC().UnixMicro()
	var source string
	var args []any
	// Whole days come from usage_daily, the hours before the first and after the last whole
	// day from usage_rollups; grouped by hour, everything comes from the hours.
	firstDay, lastDay := from+(dayMicros-from%dayMicros)%dayMicros, to-to%dayMicros
	if slices.Contains(q.GroupBy, store.UsageByHour) || firstDay >= lastDay {
		source = `SELECT hour AS bucket, ` + dims + figures + ` FROM usage_rollups WHERE hour >= ? AND hour < ?` + filter
		args = append(append(args, from, to), fargs...)
	} else {
		source = `SELECT day AS bucket, ` + dims + figures + ` FROM usage_daily WHERE day >= ? AND day < ?` + filter +
			` UNION ALL SELECT hour, ` + dims + figures + ` FROM usage_rollups WHERE (hour >= ? AND hour < ? OR hour >= ? AND hour < ?)` + filter
		args = append(append(args, firstDay, lastDay), fargs...)
		args = append(append(args, from, firstDay, lastDay, to), fargs...)
	}
	group := strings.Join(cols, ", ")
	query := `SELECT ` + group + `, CAST(SUM(count) AS BIGINT), CAST(SUM(seconds_us) AS BIGINT), CAST(SUM(tokens) AS BIGINT),
		CAST(SUM(characters) AS BIGINT), CAST(SUM(reserved) AS BIGINT), CAST(SUM(charged) AS BIGINT),
		CAST(SUM(overage) AS BIGINT), CAST(SUM(refunded) AS BIGINT), CAST(SUM(cost) AS BIGINT)
		FROM (` + source + `) AS u GROUP BY ` + group + ` ORDER BY ` + group
	rows, err := db.read.QueryContext(ctx, db.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("usage report: %w", err)
	}
	defer rows.Close()
	var out []store.UsageRow
	for rows.Next() {
		var r store.UsageRow
		var bucket int64
		var reserved, charged, overage, refunded, cost int64
		dest := make([]any, 0, len(cols)+9)
		for _, g := range order {
			switch g {
			case store.UsageByTenant:
				dest = append(dest, &r.TenantID)
			case store.UsageByKey:
				dest = append(dest, &r.KeyID)
			case store.UsageByAlias:
				dest = append(dest, &r.Alias)
			case store.UsageByRoute:
				dest = append(dest, &r.Route)
			case store.UsageByUpstream:
				dest = append(dest, &r.Upstream)
			case store.UsageByOutcome:
				dest = append(dest, &r.Outcome)
			case store.UsageByDay, store.UsageByHour:
				dest = append(dest, &bucket)
			case "currency":
				dest = append(dest, &r.Currency)
			case "cost_currency":
				dest = append(dest, &r.CostCurrency)
			}
		}
		dest = append(dest, &r.Count, &r.SecondsMicros, &r.Tokens, &r.Characters, &reserved, &charged, &overage, &refunded, &cost)
		if err := rows.Scan(dest...); err != nil {
			return nil, fmt.Errorf("usage report: %w", err)
		}
		if bucket != 0 {
			r.Bucket = fromMicros(bucket)
		}
		r.Reserved, r.Charged, r.Overage, r.Refunded = money.Micros(reserved), money.Micros(charged), money.Micros(overage), money.Micros(refunded)
		r.Cost = money.Micros(cost)
		out = append(out, r)
	}
	return out, rows.Err()
}
