package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"mediagen/internal/store"
)

const webhookEndpointColumns = `id, tenant_id, name, url, event_types, secret, prev_secret, prev_until, status, failure_run, created_at, updated_at`

func scanWebhookEndpoint(r scanner) (store.WebhookEndpoint, error) {
	var e store.WebhookEndpoint
	var types string
	var prevUntil, created, updated int64
	if err := r.Scan(&e.ID, &e.TenantID, &e.Name, &e.URL, &types, &e.Secret, &e.PrevSecret, &prevUntil, &e.Status, &e.FailureRun, &created, &updated); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return e, store.ErrNotFound
		}
		return e, err
	}
	if types != "" {
		e.EventTypes = strings.Split(types, ",")
	}
	e.PrevUntil, e.CreatedAt, e.UpdatedAt = fromMicros(prevUntil), fromMicros(created), fromMicros(updated)
	return e, nil
}

// WebhookEndpoint reads one endpoint of the tenant.
func (db *DB) WebhookEndpoint(ctx context.Context, tenantID, id string) (store.WebhookEndpoint, error) {
	e, err := scanWebhookEndpoint(db.readRow(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints WHERE id = ? AND tenant_id = ?`, id, tenantID))
	if err != nil {
		return e, fmt.Errorf("webhook endpoint %s: %w", id, err)
	}
	return e, nil
}

// WebhookEndpoints lists the tenant's endpoints newest first: ids sort by creation (idgen).
func (db *DB) WebhookEndpoints(ctx context.Context, tenantID, after string, limit int) ([]store.WebhookEndpoint, error) {
	q := `SELECT ` + webhookEndpointColumns + ` FROM webhook_endpoints WHERE tenant_id = ?`
	args := []any{tenantID}
	if after != "" {
		q += ` AND id < ?`
		args = append(args, after)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	rows, err := db.readRows(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("webhook endpoints of %s: %w", tenantID, err)
	}
	defer rows.Close()
	var out []store.WebhookEndpoint
	for rows.Next() {
		e, err := scanWebhookEndpoint(rows)
		if err != nil {
			return nil, fmt.Errorf("webhook endpoints of %s: %w", tenantID, err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

const webhookDeliveryColumns = `id, event_id, endpoint_id, tenant_id, event_type, payload, status, attempts, created_at, updated_at`

// WebhookDelivery reads one delivery.
func (db *DB) WebhookDelivery(ctx context.Context, id string) (store.WebhookDelivery, error) {
	var d store.WebhookDelivery
	var created, updated int64
	err := db.readRow(ctx, `SELECT `+webhookDeliveryColumns+` FROM webhook_deliveries WHERE id = ?`, id).
		Scan(&d.ID, &d.EventID, &d.EndpointID, &d.TenantID, &d.EventType, &d.Payload, &d.Status, &d.Attempts, &created, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		err = store.ErrNotFound
	}
	if err != nil {
		return d, fmt.Errorf("webhook delivery %s: %w", id, err)
	}
	d.CreatedAt, d.UpdatedAt = fromMicros(created), fromMicros(updated)
	return d, nil
}

// WebhookAttempts is a delivery's log, oldest first.
func (db *DB) WebhookAttempts(ctx context.Context, deliveryID string) ([]store.WebhookAttempt, error) {
	rows, err := db.readRows(ctx, `SELECT delivery_id, n, at, status_code, latency_us, error FROM webhook_attempts WHERE delivery_id = ? ORDER BY n`, deliveryID)
	if err != nil {
		return nil, fmt.Errorf("webhook attempts of %s: %w", deliveryID, err)
	}
	defer rows.Close()
	var out []store.WebhookAttempt
	for rows.Next() {
		var a store.WebhookAttempt
		var at, lat int64
		if err := rows.Scan(&a.DeliveryID, &a.N, &at, &a.StatusCode, &lat, &a.Error); err != nil {
			return nil, fmt.Errorf("webhook attempts of %s: %w", deliveryID, err)
		}
		a.At, a.Latency = fromMicros(at), time.Duration(lat)*time.Microsecond
		out = append(out, a)
	}
	return out, rows.Err()
}

// CreateWebhookEndpoint bumps the tenant's count, refusing past limit, then inserts e.
func (t *Tx) CreateWebhookEndpoint(ctx context.Context, e store.WebhookEndpoint, limit int) error {
	var n int
	if err := t.queryRow(ctx, `INSERT INTO webhook_endpoint_counts (tenant_id, n) VALUES (?, 1)
		ON CONFLICT (tenant_id) DO UPDATE SET n = webhook_endpoint_counts.n + 1 RETURNING n`, e.TenantID).Scan(&n); err != nil {
		return fmt.Errorf("create webhook endpoint: count: %w", err)
	}
	if n > limit {
		// The bump is undone with the transaction, which the caller rolls back on this error.
		return fmt.Errorf("create webhook endpoint: tenant %s has %d of %d: %w", e.TenantID, n-1, limit, store.ErrConflict)
	}
	_, err := t.exec(ctx, `INSERT INTO webhook_endpoints (`+webhookEndpointColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.TenantID, e.Name, e.URL, strings.Join(e.EventTypes, ","), e.Secret, e.PrevSecret, micros(e.PrevUntil), e.Status, e.FailureRun, micros(e.CreatedAt), micros(e.UpdatedAt))
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("create webhook endpoint %s: %w", e.ID, store.ErrConflict)
		}
		return fmt.Errorf("create webhook endpoint %s: %w", e.ID, err)
	}
	return nil
}

// WebhookEndpointForUpdate reads and locks (the no-op update takes PostgreSQL's row lock).
func (t *Tx) WebhookEndpointForUpdate(ctx context.Context, tenantID, id string) (store.WebhookEndpoint, error) {
	e, err := scanWebhookEndpoint(t.queryRow(ctx, `UPDATE webhook_endpoints SET name = name WHERE id = ? AND tenant_id = ? RETURNING `+webhookEndpointColumns, id, tenantID))
	if err != nil {
		return e, fmt.Errorf("webhook endpoint %s for update: %w", id, err)
	}
	return e, nil
}

// UpdateWebhookEndpoint writes e.
func (t *Tx) UpdateWebhookEndpoint(ctx context.Context, e store.WebhookEndpoint) error {
	res, err := t.exec(ctx, `UPDATE webhook_endpoints SET name = ?, url = ?, event_types = ?, secret = ?, prev_secret = ?, prev_until = ?,
		status = ?, failure_run = ?, updated_at = ? WHERE id = ? AND tenant_id = ?`,
		e.Name, e.URL, strings.Join(e.EventTypes, ","), e.Secret, e.PrevSecret, micros(e.PrevUntil), e.Status, e.FailureRun, micros(e.UpdatedAt), e.ID, e.TenantID)
	if err != nil {
		return fmt.Errorf("update webhook endpoint %s: %w", e.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update webhook endpoint %s: %w", e.ID, store.ErrNotFound)
	}
	return nil
}

// DeleteWebhookEndpoint removes the endpoint and frees its place in the tenant's count.
func (t *Tx) DeleteWebhookEndpoint(ctx context.Context, tenantID, id string) error {
	res, err := t.exec(ctx, `DELETE FROM webhook_endpoints WHERE id = ? AND tenant_id = ?`, id, tenantID)
	if err != nil {
		return fmt.Errorf("delete webhook endpoint %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("delete webhook endpoint %s: %w", id, store.ErrNotFound)
	}
	if _, err := t.exec(ctx, `UPDATE webhook_endpoint_counts SET n = n - 1 WHERE tenant_id = ? AND n > 0`, tenantID); err != nil {
		return fmt.Errorf("delete webhook endpoint %s: count: %w", id, err)
	}
	return nil
}

// WebhookSubscribers lists the tenant's enabled endpoints that take eventType. A tenant has at
// most catalog.MaxWebhookEndpoints, so the filter on types runs here rather than in SQL.
func (t *Tx) WebhookSubscribers(ctx context.Context, tenantID, eventType string) ([]store.WebhookEndpoint, error) {
	var out []store.WebhookEndpoint
	err := t.query(ctx, `SELECT `+webhookEndpointColumns+` FROM webhook_endpoints WHERE tenant_id = ? AND status = ? ORDER BY id`,
		[]any{tenantID, store.WebhookEnabled}, func(rows Rows) error {
			for rows.Next() {
				e, err := scanWebhookEndpoint(rows)
				if err != nil {
					return err
				}
				for _, et := range e.EventTypes {
					if et == eventType {
						out = append(out, e)
						break
					}
				}
			}
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("webhook subscribers of %s: %w", tenantID, err)
	}
	return out, nil
}

// CreateWebhookDelivery inserts d unless its id exists.
func (t *Tx) CreateWebhookDelivery(ctx context.Context, d store.WebhookDelivery) error {
	_, err := t.exec(ctx, `INSERT INTO webhook_deliveries (`+webhookDeliveryColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO NOTHING`,
		d.ID, d.EventID, d.EndpointID, d.TenantID, d.EventType, d.Payload, d.Status, d.Attempts, micros(d.CreatedAt), micros(d.UpdatedAt))
	if err != nil {
		return fmt.Errorf("create webhook delivery %s: %w", d.ID, err)
	}
	return nil
}

// RecordWebhookAttempt appends a and sets its delivery's status and attempt count.
func (t *Tx) RecordWebhookAttempt(ctx context.Context, a store.WebhookAttempt, status string) error {
	if _, err := t.exec(ctx, `INSERT INTO webhook_attempts (delivery_id, n, at, status_code, latency_us, error) VALUES (?, ?, ?, ?, ?, ?)`,
		a.DeliveryID, a.N, micros(a.At), a.StatusCode, a.Latency.Microseconds(), a.Error); err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("webhook attempt %s #%d: %w", a.DeliveryID, a.N, store.ErrConflict)
		}
		return fmt.Errorf("webhook attempt %s #%d: %w", a.DeliveryID, a.N, err)
	}
	res, err := t.exec(ctx, `UPDATE webhook_deliveries SET status = ?, attempts = ?, updated_at = ? WHERE id = ?`, status, a.N, micros(a.At), a.DeliveryID)
	if err != nil {
		return fmt.Errorf("webhook delivery %s: %w", a.DeliveryID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("webhook delivery %s: %w", a.DeliveryID, store.ErrNotFound)
	}
	return nil
}
