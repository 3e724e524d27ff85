package sqldb

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

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

// usageDimCols are the groups that are dimension columns of a grain (the others, outcome,
// day and hour, every grain has).
var usageDimCols = map[string]bool{store.UsageByTenant: true, store.UsageByKey: true, store.UsageByAlias: true,
	store.UsageByRoute: true, store.UsageByUpstream: true}

// usageGrainFor is the smallest grain that keeps every column of need.
func usageGrainFor(need []string) *usageGrain {
	for _, g := range usageGrains {
		if g.has(need) {
			return g
		}
	}
	return usageGrains[len(usageGrains)-1]
}

// UsageReport sums the rollup rows of q, from the smallest grain that has its groups and
// filters (usageGrains).
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
	var need []string // the dimension columns the query groups or filters by
	for _, g := range q.GroupBy {
		if c := usageDims[g]; usageDimCols[g] {
			need = append(need, c)
		}
	}
	if q.TenantID != "" {
		filter, fargs, need = filter+" AND tenant_id = ?", append(fargs, q.TenantID), append(need, "tenant_id")
	}
	if q.KeyID != "" {
		filter, fargs, need = filter+" AND key_id = ?", append(fargs, q.KeyID), append(need, "key_id")
	}
	grain := usageGrainFor(need)
	figures := strings.Join(usageFigureCols, ", ")
	dims := strings.Join(append(slices.Clone(grain.dims), "currency", "outcome", "cost_currency"), ", ") + ", "
	from, to := q.From.UTC().UnixMicro(), q.To.UTC().UnixMicro()
	var source string
	var args []any
	// Whole days come from the grain's daily table, the hours before the first and after the
	// last whole day from its hourly one; grouped by hour, everything comes from the hours.
	firstDay, lastDay := from+(dayMicros-from%dayMicros)%dayMicros, to-to%dayMicros
	if slices.Contains(q.GroupBy, store.UsageByHour) || firstDay >= lastDay {
		source = `SELECT hour AS bucket, ` + dims + figures + ` FROM ` + grain.hourly + ` WHERE hour >= ? AND hour < ?` + filter
		args = append(append(args, from, to), fargs...)
	} else {
		source = `SELECT day AS bucket, ` + dims + figures + ` FROM ` + grain.daily + ` WHERE day >= ? AND day < ?` + filter
		args = append(append(args, firstDay, lastDay), fargs...)
		// Each partial day at an end is its own range of the hourly table's key, and absent
		// when the range starts or ends on a midnight: an OR of the two made SQLite scan every
		// hour of the table.
		for _, edge := range [][2]int64{{from, firstDay}, {lastDay, to}} {
			if edge[0] < edge[1] {
				source += ` UNION ALL SELECT hour, ` + dims + figures + ` FROM ` + grain.hourly + ` WHERE hour >= ? AND hour < ?` + filter
				args = append(append(args, edge[0], edge[1]), fargs...)
			}
		}
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
