package sqldb

import (
	"context"
	"fmt"

	"mediagen/internal/store"
)

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
