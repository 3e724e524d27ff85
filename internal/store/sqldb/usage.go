package sqldb

import (
	"bufio"
	"context"
	"fmt"
	"io/fs"
	"math"
	"slices"
	"strings"
	"time"

	"mediagen/internal/store"
)

// hourMicros and dayMicros are the rollup buckets in the hour column's unit.
const (
	hourMicros = int64(3600) * 1_000_000
	dayMicros  = 24 * hourMicros
)

// usageGrain is one level of the usage rollups: a table by hour and one by day, with the
// dimensions it keeps (besides currency, outcome and cost_currency, which every grain keeps).
// Every settlement adds to a row of each (AddUsage); a report reads the smallest grain that
// has every dimension it groups or filters by (UsageReport), so that its cost follows the
// rows it answers, not the keys × aliases the operator has (migration 0031, issue 47).
type usageGrain struct {
	hourly, daily string
	dims          []string // column names
	// slotted grains split each row in usageSlots rows by a hash of the key (summed at
	// read): the row of an alias is otherwise one every settlement of that alias waits on.
	slotted bool
	// upserts: the statements adding a settlement to the hourly and daily rows.
	hourlyUpsert, dailyUpsert string
}

// usageSlots is how many rows an alias's hour and day are split in (slot = a hash of the key,
// summed at read). Settlements of one key already serialize on the key's own rows and its
// tenant's lane, so slots by key would spread the alias rows over keys. It is 1: every slot
// multiplies the rows the operator-wide reports read (with 4, the overview's week by hour read
// 4× the rows: 69 ms of SQLite CPU at 200,000 tasks), and the waits they would save were not
// measurable here (bench/README.md, "Hot rows"). Raise it if PostgreSQL settlements are
// seen waiting on usage_alias_* rows (pg_locks); the schema and the reads need no change.
const usageSlots = 1

// usageFigureCols are the additive columns of every rollup table, in AddUsage's order.
var usageFigureCols = []string{"count", "seconds_us", "tokens", "characters", "reserved", "charged", "overage", "refunded", "cost"}

// usageGrains, smallest first: UsageReport takes the first that has what a query needs. The
// last (per key) has every dimension.
var usageGrains = []*usageGrain{
	{hourly: "usage_alias_hourly", daily: "usage_alias_daily", dims: []string{"alias", "route", "upstream"}, slotted: true},
	{hourly: "usage_tenant_hourly", daily: "usage_tenant_daily", dims: []string{"tenant_id"}},
	{hourly: "usage_rollups", daily: "usage_daily", dims: []string{"tenant_id", "key_id", "alias", "route", "upstream"}},
}

func init() {
	for _, g := range usageGrains {
		g.hourlyUpsert, g.dailyUpsert = g.upsert(g.hourly, "hour"), g.upsert(g.daily, "day")
	}
}

// keyCols are the grain's key columns after the bucket: its dimensions, currency, outcome,
// cost currency (and slot).
func (g *usageGrain) keyCols() []string {
	cols := append(slices.Clone(g.dims), "currency", "outcome", "cost_currency")
	if g.slotted {
		cols = append(cols, "slot")
	}
	return cols
}

// has reports whether the grain keeps every column of need.
func (g *usageGrain) has(need []string) bool {
	for _, c := range need {
		if !slices.Contains(g.dims, c) {
			return false
		}
	}
	return true
}

// upsert adds one settlement's figures to a row of table in one statement on both dialects.
func (g *usageGrain) upsert(table, bucket string) string {
	key := append([]string{bucket}, g.keyCols()...)
	marks := strings.TrimSuffix(strings.Repeat("?, ", len(key)+len(usageFigureCols)), ", ")
	sets := make([]string, len(usageFigureCols))
	for i, f := range usageFigureCols {
		sets[i] = f + " = " + table + "." + f + " + excluded." + f
	}
	return `INSERT INTO ` + table + ` (` + strings.Join(key, ", ") + `, ` + strings.Join(usageFigureCols, ", ") + `)
	VALUES (` + marks + `)
	ON CONFLICT (` + strings.Join(key, ", ") + `) DO UPDATE SET ` + strings.Join(sets, ", ")
}

// derive is the statement that fills the grain's table of bucket (hour or day) in [?, ?)
// from the per-key rows of the same bucket: slot 0, exactly their sums.
func (g *usageGrain) derive(bucket string) string {
	table, src := g.hourly, "usage_rollups"
	if bucket == "day" {
		table, src = g.daily, "usage_daily"
	}
	dims := strings.Join(append(slices.Clone(g.dims), "currency", "outcome", "cost_currency"), ", ")
	sums := make([]string, len(usageFigureCols))
	for i, f := range usageFigureCols {
		sums[i] = "SUM(" + f + ")"
	}
	slotCol, slotVal := "", ""
	if g.slotted {
		slotCol, slotVal = ", slot", ", 0"
	}
	return `INSERT INTO ` + table + ` (` + bucket + `, ` + dims + slotCol + `, ` + strings.Join(usageFigureCols, ", ") + `)
	SELECT ` + bucket + `, ` + dims + slotVal + `, ` + strings.Join(sums, ", ") + ` FROM ` + src + `
	WHERE ` + bucket + ` >= ? AND ` + bucket + ` < ? GROUP BY ` + bucket + `, ` + dims
}

// usageValue is the value of a dimension column in d.
func usageValue(d store.UsageDelta, col string) any {
	switch col {
	case "tenant_id":
		return d.TenantID
	case "key_id":
		return d.KeyID
	case "alias":
		return d.Alias
	case "route":
		return d.Route
	case "upstream":
		return d.Upstream
	case "currency":
		return d.Currency
	case "outcome":
		return d.Outcome
	case "cost_currency":
		return d.CostCurrency
	case "slot":
		return int64(fnv32(d.KeyID) % usageSlots)
	}
	panic("usage: unknown column " + col)
}

// AddUsage upserts each delta into its hour's and its day's rows of every grain. The
// settlement reads nothing back, so in a shared batch the statements are queued with the
// commit (Tx.later).
func (t *Tx) AddUsage(ctx context.Context, ds ...store.UsageDelta) error {
	for _, d := range ds {
		hour := d.Hour.UTC().UnixMicro()
		hour -= hour % hourMicros
		cost := d.Cost
		if d.CostCurrency == "" {
			cost = 0 // unknown, never a sum
		}
		figures := []any{d.Count, d.SecondsMicros, d.Tokens, d.Characters, int64(d.Reserved), int64(d.Charged), int64(d.Overage),
			int64(d.Refunded), int64(cost)}
		for _, g := range usageGrains {
			cols := g.keyCols()
			args := make([]any, 1, 1+len(cols)+len(figures))
			for _, c := range cols {
				args = append(args, usageValue(d, c))
			}
			args = append(args, figures...)
			args[0] = hour
			if err := t.later(ctx, g.hourlyUpsert, args, nil); err != nil {
				return fmt.Errorf("add usage of key %s to %s: %w", d.KeyID, g.hourly, err)
			}
			day := slices.Clone(args)
			day[0] = hour - hour%dayMicros
			if err := t.later(ctx, g.dailyUpsert, day, nil); err != nil {
				return fmt.Errorf("add usage of key %s to %s: %w", d.KeyID, g.daily, err)
			}
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

// usageTables are every rollup table, each grain's hourly and daily.
func usageTables() []string {
	var out []string
	for _, g := range usageGrains {
		out = append(out, g.hourly, g.daily)
	}
	return out
}

// lockUsage, on PostgreSQL, locks the rollup tables against writers until the transaction
// ends: a settlement that has already added to a row is waited for (and so counted by the
// rebuild's read of the records), and one that has not waits for the rebuild and then adds
// to the rebuilt rows.
func (t *Tx) lockUsage(ctx context.Context) error {
	if t.db.d.Name() != "postgres" {
		return nil // SQLite has one writer: this transaction
	}
	if _, err := t.exec(ctx, `LOCK TABLE `+strings.Join(usageTables(), ", ")+` IN EXCLUSIVE MODE`); err != nil {
		return fmt.Errorf("lock usage rollups: %w", err)
	}
	return nil
}

// ClearUsage deletes every rollup row, holding off settlements until the transaction ends
// (lockUsage).
func (t *Tx) ClearUsage(ctx context.Context) error {
	if err := t.lockUsage(ctx); err != nil {
		return fmt.Errorf("clear usage: %w", err)
	}
	for _, table := range usageTables() {
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

// RebuildUsageRange rebuilds the rollup rows of [from, to) alone, in one transaction of its
// own (Tx.RebuildUsageRange).
func (db *DB) RebuildUsageRange(ctx context.Context, from, to time.Time) error {
	return db.transactOnce(ctx, func(tx store.Tx) error { return tx.RebuildUsageRange(ctx, from, to) })
}

// RebuildUsage clears the rollups and runs the usage migration's backfill statements, so that
// a rebuilt database and an upgraded one agree, then derives the coarser grains from the
// per-key rows (migration 0031's statements). It is idempotent. The backfill is several
// statements in one text, run on the transaction itself: never prepared (a prepared statement
// would keep only the first).
func (t *Tx) RebuildUsage(ctx context.Context) error {
	if err := t.ClearUsage(ctx); err != nil {
		return err
	}
	return t.backfillUsage(ctx, t.db.usageBackfill, math.MinInt64, math.MaxInt64)
}

// RebuildUsageRange replaces the rollup rows of the whole UTC days [from, to) with the sums
// of the records settled in them: what a rebuild writes is that range's rows, however many
// others there are (the records are still read by their finished_at, which no index holds:
// one index more on every settlement's update would cost more than a rare rebuild's scan).
func (t *Tx) RebuildUsageRange(ctx context.Context, from, to time.Time) error {
	f, e := from.UTC().UnixMicro(), to.UTC().UnixMicro()
	if f%dayMicros != 0 || e%dayMicros != 0 || f >= e {
		return fmt.Errorf("rebuild usage: the range %s..%s is not whole UTC days", from.UTC(), to.UTC())
	}
	if err := t.lockUsage(ctx); err != nil {
		return fmt.Errorf("rebuild usage: %w", err)
	}
	for _, g := range usageGrains {
		for _, tb := range []struct{ table, bucket string }{{g.hourly, "hour"}, {g.daily, "day"}} {
			if _, err := t.exec(ctx, `DELETE FROM `+tb.table+` WHERE `+tb.bucket+` >= ? AND `+tb.bucket+` < ?`, f, e); err != nil {
				return fmt.Errorf("rebuild usage: %w", err)
			}
		}
	}
	backfill, err := rangeBackfill(t.db.usageBackfill, f, e)
	if err != nil {
		return err
	}
	return t.backfillUsage(ctx, backfill, f, e)
}

// rangeBackfill is the backfill text restricted to the records settled in [from, to) (and
// the per-key days to those from the hours of that range). The bounds are integers this
// package computed, written into the text: the text is several statements, which take no
// parameters.
func rangeBackfill(backfill string, from, to int64) (string, error) {
	edits := []struct {
		old, new string
		n        int
	}{
		{"WHERE status IN (", fmt.Sprintf("WHERE finished_at >= %d AND finished_at < %d AND status IN (", from, to), 2},
		{"FROM usage_rollups\nGROUP BY", fmt.Sprintf("FROM usage_rollups WHERE hour >= %d AND hour < %d\nGROUP BY", from, to), 1},
	}
	for _, e := range edits {
		if n := strings.Count(backfill, e.old); n != e.n {
			return "", fmt.Errorf("rebuild usage: the backfill has %d of %q, want %d", n, e.old, e.n)
		}
		backfill = strings.ReplaceAll(backfill, e.old, e.new)
	}
	return backfill, nil
}

// backfillUsage runs the per-key backfill text, then fills the coarser grains' rows of
// [from, to) from the per-key rows.
func (t *Tx) backfillUsage(ctx context.Context, backfill string, from, to int64) error {
	if backfill == "" {
		return fmt.Errorf("rebuild usage: the %s driver set no backfill statement", t.db.d.Name())
	}
	if t.tx == nil {
		return fmt.Errorf("rebuild usage: not inside a transaction of its own")
	}
	if _, err := t.tx.ExecContext(t.stmtCtx(ctx), backfill); err != nil {
		return fmt.Errorf("rebuild usage: %w", err)
	}
	for _, g := range usageGrains[:len(usageGrains)-1] { // the last is the per-key one
		for _, bucket := range []string{"hour", "day"} {
			if _, err := t.exec(ctx, g.derive(bucket), from, to); err != nil {
				return fmt.Errorf("rebuild usage: %w", err)
			}
		}
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
