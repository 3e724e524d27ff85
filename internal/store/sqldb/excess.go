package sqldb

import (
	"context"
	"fmt"
	"strings"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

const excessColumns = `id, upstream, route, ref, key_id, tenant_id, kind, claimed, charged, amount, currency, detail, created_at`

// RecordUpstreamExcess appends one record, in the settlement's transaction.
func (t *Tx) RecordUpstreamExcess(ctx context.Context, e store.UpstreamExcess) error {
	_, err := t.exec(ctx, `INSERT INTO upstream_excess (`+excessColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.Upstream, e.Route, e.Ref, e.KeyID, e.TenantID, e.Kind, int64(e.Claimed), int64(e.Charged), int64(e.Amount),
		e.Currency, e.Detail, micros(e.CreatedAt))
	if err != nil {
		return fmt.Errorf("record upstream excess of %s: %w", e.Ref, err)
	}
	return nil
}

// UpstreamExcess lists records, newest first.
func (db *DB) UpstreamExcess(ctx context.Context, f store.ExcessFilter) ([]store.UpstreamExcess, error) {
	var where []string
	var args []any
	if f.Upstream != "" {
		where, args = append(where, "upstream = ?"), append(args, f.Upstream)
	}
	if f.Ref != "" {
		where, args = append(where, "ref = ?"), append(args, f.Ref)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = store.DefaultExcessLimit
	}
	q := `SELECT ` + excessColumns + ` FROM upstream_excess`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	rows, err := db.read.QueryContext(ctx, db.q(q), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("upstream excess: %w", err)
	}
	defer rows.Close()
	var out []store.UpstreamExcess
	for rows.Next() {
		var e store.UpstreamExcess
		var claimed, charged, amount, created int64
		if err := rows.Scan(&e.ID, &e.Upstream, &e.Route, &e.Ref, &e.KeyID, &e.TenantID, &e.Kind, &claimed, &charged, &amount,
			&e.Currency, &e.Detail, &created); err != nil {
			return nil, fmt.Errorf("upstream excess: %w", err)
		}
		e.Claimed, e.Charged, e.Amount = money.Micros(claimed), money.Micros(charged), money.Micros(amount)
		e.CreatedAt = fromMicros(created)
		out = append(out, e)
	}
	return out, rows.Err()
}

// UpstreamExcessSummary totals the records per account, kind and currency.
func (db *DB) UpstreamExcessSummary(ctx context.Context) ([]store.ExcessSummary, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT upstream, kind, currency, COUNT(*), COALESCE(SUM(amount), 0)
		FROM upstream_excess GROUP BY upstream, kind, currency ORDER BY upstream, kind, currency`)
	if err != nil {
		return nil, fmt.Errorf("upstream excess summary: %w", err)
	}
	defer rows.Close()
	var out []store.ExcessSummary
	for rows.Next() {
		var s store.ExcessSummary
		var amount int64
		if err := rows.Scan(&s.Upstream, &s.Kind, &s.Currency, &s.Count, &amount); err != nil {
			return nil, fmt.Errorf("upstream excess summary: %w", err)
		}
		s.Amount = money.Micros(amount)
		out = append(out, s)
	}
	return out, rows.Err()
}
