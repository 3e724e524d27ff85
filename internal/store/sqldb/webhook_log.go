package sqldb

import (
	"context"
	"fmt"
	"time"

	"mediagen/internal/store"
)

// WebhookDeliveries searches one endpoint's delivery log, newest first. The index on
// (endpoint_id, created_at) serves the order and the cursor; the other filters are checked
// on the endpoint's rows.
func (db *DB) WebhookDeliveries(ctx context.Context, q store.WebhookDeliveryQuery) ([]store.WebhookDelivery, error) {
	query := `SELECT ` + webhookDeliveryColumns + ` FROM webhook_deliveries WHERE tenant_id = ? AND endpoint_id = ?`
	args := []any{q.TenantID, q.EndpointID}
	for _, f := range []struct{ col, v string }{{"status", q.Status}, {"event_type", q.EventType}, {"event_id", q.EventID}} {
		if f.v != "" {
			query += ` AND ` + f.col + ` = ?`
			args = append(args, f.v)
		}
	}
	if !q.Since.IsZero() {
		query += ` AND created_at >= ?`
		args = append(args, micros(q.Since))
	}
	if !q.Until.IsZero() {
		query += ` AND created_at < ?`
		args = append(args, micros(q.Until))
	}
	if q.BeforeID != "" {
		query += ` AND (created_at < ? OR (created_at = ? AND id < ?))`
		args = append(args, micros(q.BeforeAt), micros(q.BeforeAt), q.BeforeID)
	}
	query += ` ORDER BY created_at DESC, id DESC LIMIT ?`
	args = append(args, q.Limit)
	rows, err := db.readRows(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("webhook deliveries of %s: %w", q.EndpointID, err)
	}
	defer rows.Close()
	var out []store.WebhookDelivery
	for rows.Next() {
		var d store.WebhookDelivery
		var created, updated int64
		if err := rows.Scan(&d.ID, &d.EventID, &d.EndpointID, &d.TenantID, &d.EventType, &d.Payload, &d.Status, &d.Attempts, &created, &updated); err != nil {
			return nil, fmt.Errorf("webhook deliveries of %s: %w", q.EndpointID, err)
		}
		d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
		out = append(out, d)
	}
	return out, rows.Err()
}

// sweepEnded is one batch of ended deliveries last touched before the cutoff, oldest first.
// The literal status lets both databases use the partial index of migration 0029. Only ended
// deliveries are in it, and an ended delivery is never touched again, so the two statements
// of a sweep select the same rows.
const sweepEnded = `SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < ? ORDER BY updated_at, id LIMIT ?`

// SweepWebhookDeliveries deletes one bounded batch of ended deliveries last touched before
// cutoff, and their attempts.
func (db *DB) SweepWebhookDeliveries(ctx context.Context, cutoff time.Time, limit int) (int, error) {
	var n int64
	err := db.Transact(ctx, func(tx store.Tx) error {
		t := tx.(*Tx)
		if _, err := t.exec(ctx, `DELETE FROM webhook_attempts WHERE delivery_id IN (`+sweepEnded+`)`, micros(cutoff), limit); err != nil {
			return fmt.Errorf("sweep webhook attempts: %w", err)
		}
		res, err := t.exec(ctx, `DELETE FROM webhook_deliveries WHERE id IN (`+sweepEnded+`)`, micros(cutoff), limit)
		if err != nil {
			return fmt.Errorf("sweep webhook deliveries: %w", err)
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, err
	}
	return int(n), nil
}

// WebhookEndpointByID reads one endpoint of any tenant (the operator's reads).
func (db *DB) WebhookEndpointByID(ctx context.Context, id string) (store.WebhookEndpoint, error) {
	e, err := scanWebhookEndpoint(db.readRow(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints WHERE id = ?`, id))
	if err != nil {
		return e, fmt.Errorf("webhook endpoint %s: %w", id, err)
	}
	return e, nil
}
