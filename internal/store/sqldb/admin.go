package sqldb

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"mediagen/internal/store"
)

// The operator plane's records: admin tokens, the audit log (append-only: there is no
// method here that updates or deletes it, and triggers refuse it in the database), and the
// stored answers of idempotent admin writes.

const tokenColumns = `id, name, role, prefix, hash, created_by, created_at, expires_at, revoked_at`

func scanToken(row scanner) (store.AdminToken, error) {
	var t store.AdminToken
	var created, expires, revoked int64
	if err := row.Scan(&t.ID, &t.Name, &t.Role, &t.Prefix, &t.Hash, &t.CreatedBy, &created, &expires, &revoked); err != nil {
		return store.AdminToken{}, noRows(err)
	}
	t.CreatedAt, t.ExpiresAt, t.RevokedAt = fromMicros(created), fromMicros(expires), fromMicros(revoked)
	return t, nil
}

// CreateAdminToken stores a token; a duplicate id or hash is ErrConflict.
func (t *Tx) CreateAdminToken(ctx context.Context, tok store.AdminToken) error {
	_, err := t.exec(ctx, `INSERT INTO admin_tokens (`+tokenColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)`,
		tok.ID, tok.Name, tok.Role, tok.Prefix, tok.Hash, tok.CreatedBy, micros(tok.CreatedAt), micros(tok.ExpiresAt))
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("create admin token %s: %w", tok.ID, store.ErrConflict)
		}
		return fmt.Errorf("create admin token %s: %w", tok.ID, err)
	}
	return nil
}

// RevokeAdminToken marks the token revoked; revoking twice keeps the first time.
func (t *Tx) RevokeAdminToken(ctx context.Context, id string, at time.Time) error {
	res, err := t.exec(ctx, `UPDATE admin_tokens SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END WHERE id = ?`,
		micros(at), id)
	if err != nil {
		return fmt.Errorf("revoke admin token %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("revoke admin token %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// AdminTokenForUpdate reads a token inside the transaction (locking its row on PostgreSQL).
func (t *Tx) AdminTokenForUpdate(ctx context.Context, id string) (store.AdminToken, error) {
	lock := ""
	if t.db.d.Name() == "postgres" {
		lock = " FOR UPDATE"
	}
	tok, err := scanToken(t.queryRow(ctx, `SELECT `+tokenColumns+` FROM admin_tokens WHERE id = ?`+lock, id))
	if err != nil {
		return tok, fmt.Errorf("admin token %s: %w", id, err)
	}
	return tok, nil
}

// AdminTokenByHash finds the token whose secret hashes to hash.
func (db *DB) AdminTokenByHash(ctx context.Context, hash []byte) (store.AdminToken, error) {
	tok, err := scanToken(db.readRow(ctx, `SELECT `+tokenColumns+` FROM admin_tokens WHERE hash = ?`, hash))
	if err != nil {
		return tok, fmt.Errorf("admin token by hash: %w", err)
	}
	return tok, nil
}

// AdminToken reads one token.
func (db *DB) AdminToken(ctx context.Context, id string) (store.AdminToken, error) {
	tok, err := scanToken(db.readRow(ctx, `SELECT `+tokenColumns+` FROM admin_tokens WHERE id = ?`, id))
	if err != nil {
		return tok, fmt.Errorf("admin token %s: %w", id, err)
	}
	return tok, nil
}

// AdminTokens lists every token, oldest first. Tokens are few (people and their tools).
func (db *DB) AdminTokens(ctx context.Context) ([]store.AdminToken, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT `+tokenColumns+` FROM admin_tokens ORDER BY created_at, id`)
	if err != nil {
		return nil, fmt.Errorf("list admin tokens: %w", err)
	}
	defer rows.Close()
	var out []store.AdminToken
	for rows.Next() {
		tok, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list admin tokens: %w", err)
		}
		out = append(out, tok)
	}
	return out, rows.Err()
}

const auditColumns = `id, actor_id, actor_name, actor_role, via, action, target_type, target_id, before_json, after_json, request_id, caller_request_id, remote_addr, created_at`

// nullJSON stores absent JSON as NULL, so "did not exist" differs from any document.
func nullJSON(b []byte) any {
	if b == nil {
		return nil
	}
	return string(b)
}

// AppendAudit appends one entry in the change's transaction.
func (t *Tx) AppendAudit(ctx context.Context, e store.AuditEntry) error {
	_, err := t.exec(ctx, `INSERT INTO admin_audit (`+auditColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		e.ID, e.ActorID, e.ActorName, e.ActorRole, e.Via, e.Action, e.TargetType, e.TargetID, nullJSON(e.Before), nullJSON(e.After),
		e.RequestID, e.CallerRequestID, e.RemoteAddr, micros(e.CreatedAt))
	if err != nil {
		return fmt.Errorf("append audit %s: %w", e.Action, err)
	}
	return nil
}

// Audit lists entries newest first.
func (db *DB) Audit(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error) {
	var where []string
	var args []any
	add := func(cond string, v any) { where, args = append(where, cond), append(args, v) }
	if q.ActorID != "" {
		add("actor_id = ?", q.ActorID)
	}
	if q.Action != "" {
		add("action = ?", q.Action)
	}
	if q.TargetType != "" {
		add("target_type = ?", q.TargetType)
	}
	if q.TargetID != "" {
		add("target_id = ?", q.TargetID)
	}
	if !q.Since.IsZero() {
		add("created_at >= ?", micros(q.Since))
	}
	if !q.Until.IsZero() {
		add("created_at < ?", micros(q.Until))
	}
	if q.Before != "" {
		add("id < ?", q.Before)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultAuditLimit
	}
	query := `SELECT ` + auditColumns + ` FROM admin_audit`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id DESC LIMIT ?`
	rows, err := db.read.QueryContext(ctx, db.q(query), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	defer rows.Close()
	var out []store.AuditEntry
	for rows.Next() {
		var e store.AuditEntry
		var before, after *string
		var created int64
		if err := rows.Scan(&e.ID, &e.ActorID, &e.ActorName, &e.ActorRole, &e.Via, &e.Action, &e.TargetType, &e.TargetID,
			&before, &after, &e.RequestID, &e.CallerRequestID, &e.RemoteAddr, &created); err != nil {
			return nil, fmt.Errorf("audit: %w", err)
		}
		if before != nil {
			e.Before = []byte(*before)
		}
		if after != nil {
			e.After = []byte(*after)
		}
		e.CreatedAt = fromMicros(created)
		out = append(out, e)
	}
	return out, rows.Err()
}

// KeysPage lists keys in id order after the cursor, filtered.
func (db *DB) KeysPage(ctx context.Context, q store.KeyQuery) ([]store.Key, error) {
	var where []string
	var args []any
	add := func(cond string, v ...any) { where, args = append(where, cond), append(args, v...) }
	if q.TenantID != "" {
		add("tenant_id = ?", q.TenantID)
	}
	switch q.State {
	case store.KeyStateActive:
		add("revoked_at = 0 AND (expires_at = 0 OR expires_at > ?)", micros(q.Now))
	case store.KeyStateExpired:
		add("revoked_at = 0 AND expires_at <> 0 AND expires_at <= ?", micros(q.Now))
	case store.KeyStateRevoked:
		add("revoked_at <> 0")
	}
	if q.NamePrefix != "" {
		// Neither LIKE (% and _ would need escaping) nor a range (PostgreSQL compares by the
		// database's collation, under which a range is not a prefix): the first characters.
		add("substr(name, 1, ?) = ?", utf8.RuneCountInString(q.NamePrefix), q.NamePrefix)
	}
	if q.After != "" {
		add("id > ?", q.After)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = store.DefaultKeyLimit
	}
	query := `SELECT ` + keyColumns + ` FROM api_keys`
	if len(where) > 0 {
		query += ` WHERE ` + strings.Join(where, " AND ")
	}
	query += ` ORDER BY id LIMIT ?`
	rows, err := db.read.QueryContext(ctx, db.q(query), append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var out []store.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

// sweepBatch bounds the expired answers one write deletes, so the lazy sweep never makes a
// write slow however many expired at once.
const sweepBatch = 100

// PutIdempotentAnswer stores the answer in the write's transaction.
func (t *Tx) PutIdempotentAnswer(ctx context.Context, a store.IdempotentAnswer, now time.Time) error {
	if _, err := t.exec(ctx, `DELETE FROM admin_idempotency WHERE (token_id, idem_key) IN
		(SELECT token_id, idem_key FROM admin_idempotency WHERE expires_at <= ? LIMIT ?)`, micros(now), sweepBatch); err != nil {
		return fmt.Errorf("sweep idempotent answers: %w", err)
	}
	res, err := t.exec(ctx, `INSERT INTO admin_idempotency (token_id, idem_key, request_hash, status, body, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (token_id, idem_key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
			body = excluded.body, created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE admin_idempotency.expires_at <= ?`,
		a.TokenID, a.Key, a.RequestHash, a.Status, a.Body, micros(a.CreatedAt), micros(a.ExpiresAt), micros(now))
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("idempotent answer %s: %w", a.Key, store.ErrConflict)
		}
		return fmt.Errorf("idempotent answer %s: %w", a.Key, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("idempotent answer %s: %w", a.Key, store.ErrConflict)
	}
	return nil
}

// IdempotentAnswer reads the live answer of a token and key.
func (db *DB) IdempotentAnswer(ctx context.Context, tokenID, key string, now time.Time) (store.IdempotentAnswer, error) {
	a := store.IdempotentAnswer{TokenID: tokenID, Key: key}
	var created, expires int64
	err := db.read.QueryRowContext(ctx, db.q(`SELECT request_hash, status, body, created_at, expires_at FROM admin_idempotency
		WHERE token_id = ? AND idem_key = ? AND expires_at > ?`), tokenID, key, micros(now)).
		Scan(&a.RequestHash, &a.Status, &a.Body, &created, &expires)
	if err != nil {
		return a, fmt.Errorf("idempotent answer %s: %w", key, noRows(err))
	}
	a.CreatedAt, a.ExpiresAt = fromMicros(created), fromMicros(expires)
	return a, nil
}
