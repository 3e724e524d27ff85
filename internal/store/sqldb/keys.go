package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

const keyColumns = `id, tenant_id, name, prefix, hash, unlimited, created_at, revoked_at,
	expires_at, daily_cap, monthly_cap, prev_hash, prev_valid_until, rotated_at`

type scanner interface{ Scan(...any) error }

func scanKey(row scanner) (store.Key, error) {
	var k store.Key
	var unlimited int
	var created, revoked, expires, daily, monthly, prevUntil, rotated int64
	if err := row.Scan(&k.ID, &k.TenantID, &k.Name, &k.Prefix, &k.Hash, &unlimited, &created, &revoked,
		&expires, &daily, &monthly, &k.PrevHash, &prevUntil, &rotated); err != nil {
		return store.Key{}, noRows(err)
	}
	k.Unlimited = unlimited != 0
	k.CreatedAt, k.RevokedAt = fromMicros(created), fromMicros(revoked)
	k.ExpiresAt, k.PrevValidUntil, k.RotatedAt = fromMicros(expires), fromMicros(prevUntil), fromMicros(rotated)
	k.Caps = store.Caps{Daily: capFromColumn(daily), Monthly: capFromColumn(monthly)}
	return k, nil
}

// The cap columns (migration 0016) keep their first meaning, 0 for no cap, so rows written
// before a cap of 0 existed read as they were written; a cap of 0 (nothing may be spent) is
// stored as zeroCapColumn. A positive value is the cap.
const zeroCapColumn = -1

func capFromColumn(v int64) money.Cap {
	switch {
	case v == zeroCapColumn:
		return money.CapOf(0)
	case v > 0:
		return money.CapOf(money.Micros(v))
	}
	return money.NoCap
}

// capColumn is what a cap is stored as; a negative or too large cap is refused (callers check
// first; this is the last wall before the database).
func capColumn(c money.Cap) (int64, error) {
	m, ok := c.Get()
	switch {
	case !ok:
		return 0, nil
	case m < 0 || m > money.MaxAmount:
		return 0, fmt.Errorf("cap %s: %w", m, money.ErrCap)
	case m == 0:
		return zeroCapColumn, nil
	}
	return int64(m), nil
}

func capColumns(c store.Caps) (daily, monthly int64, err error) {
	if daily, err = capColumn(c.Daily); err != nil {
		return 0, 0, err
	}
	monthly, err = capColumn(c.Monthly)
	return daily, monthly, err
}

// nullBytes stores an empty hash as NULL: the unique index on prev_hash skips NULLs.
func nullBytes(b []byte) any {
	if len(b) == 0 {
		return nil
	}
	return b
}

// CreateKey stores the key and opens its three accounts, plus the currency's funding account
// the first time that currency is seen.
func (t *Tx) CreateKey(ctx context.Context, k store.Key, currency string) error {
	daily, monthly, err := capColumns(k.Caps)
	if err != nil {
		return fmt.Errorf("create key %s: %w", k.ID, err)
	}
	_, err = t.exec(ctx, `INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, 0, ?, ?, ?, NULL, 0, 0)`,
		k.ID, k.TenantID, k.Name, k.Prefix, k.Hash, boolInt(k.Unlimited), micros(k.CreatedAt),
		micros(k.ExpiresAt), daily, monthly)
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("create key %s: %w", k.ID, store.ErrConflict)
		}
		return fmt.Errorf("create key %s: %w", k.ID, err)
	}
	now := micros(t.db.now())
	accounts := []struct {
		kind     store.AccountKind
		negative bool
	}{
		{store.AccountAvailable, k.Unlimited},
		{store.AccountReserved, false},
		{store.AccountSpent, false},
	}
	for _, a := range accounts {
		if _, err := t.exec(ctx, `INSERT INTO accounts (id, key_id, kind, currency, balance, allow_negative, updated_at)
			VALUES (?, ?, ?, ?, 0, ?, ?)`,
			store.AccountID(k.ID, a.kind), k.ID, string(a.kind), currency, boolInt(a.negative), now); err != nil {
			return fmt.Errorf("open account %s: %w", a.kind, err)
		}
	}
	if _, err := t.exec(ctx, `INSERT INTO accounts (id, key_id, kind, currency, balance, allow_negative, updated_at)
		VALUES (?, '', ?, ?, 0, 1, ?) ON CONFLICT (id) DO NOTHING`,
		store.FundingAccountID(currency), string(store.AccountFunding), currency, now); err != nil {
		return fmt.Errorf("open funding account: %w", err)
	}
	return nil
}

// RevokeKey marks the key revoked; revoking twice keeps the first time.
func (t *Tx) RevokeKey(ctx context.Context, id string, at time.Time) error {
	res, err := t.exec(ctx, `UPDATE api_keys SET revoked_at = CASE WHEN revoked_at = 0 THEN ? ELSE revoked_at END WHERE id = ?`,
		micros(at), id)
	if err != nil {
		return fmt.Errorf("revoke key %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("revoke key %s: %w", id, store.ErrNotFound)
	}
	return nil
}

// Key reads a key inside the transaction.
func (t *Tx) Key(ctx context.Context, id string) (store.Key, error) {
	k, err := scanKey(t.queryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE id = ?`, id))
	if err != nil {
		return k, fmt.Errorf("key %s: %w", id, err)
	}
	return k, nil
}

// KeyForUpdate reads a key and locks its row: the no-op update takes PostgreSQL's row lock
// (SQLite's one writer already excludes every other).
func (t *Tx) KeyForUpdate(ctx context.Context, id string) (store.Key, error) {
	k, err := scanKey(t.queryRow(ctx, `UPDATE api_keys SET name = name WHERE id = ? RETURNING `+keyColumns, id))
	if err != nil {
		return k, fmt.Errorf("key %s for update: %w", id, err)
	}
	return k, nil
}

// UpdateKey writes the key's name, expiry and caps.
func (t *Tx) UpdateKey(ctx context.Context, k store.Key) error {
	daily, monthly, err := capColumns(k.Caps)
	if err != nil {
		return fmt.Errorf("update key %s: %w", k.ID, err)
	}
	res, err := t.exec(ctx, `UPDATE api_keys SET name = ?, expires_at = ?, daily_cap = ?, monthly_cap = ? WHERE id = ?`,
		k.Name, micros(k.ExpiresAt), daily, monthly, k.ID)
	if err != nil {
		return fmt.Errorf("update key %s: %w", k.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("update key %s: %w", k.ID, store.ErrNotFound)
	}
	return nil
}

// RotateKey replaces the key's secret, keeping the replaced one valid until k.PrevValidUntil.
func (t *Tx) RotateKey(ctx context.Context, k store.Key) error {
	res, err := t.exec(ctx, `UPDATE api_keys SET hash = ?, prefix = ?, prev_hash = ?, prev_valid_until = ?, rotated_at = ? WHERE id = ?`,
		k.Hash, k.Prefix, nullBytes(k.PrevHash), micros(k.PrevValidUntil), micros(k.RotatedAt), k.ID)
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("rotate key %s: %w", k.ID, store.ErrConflict)
		}
		return fmt.Errorf("rotate key %s: %w", k.ID, err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("rotate key %s: %w", k.ID, store.ErrNotFound)
	}
	return nil
}

// KeyByHash finds the key whose secret, or whose secret before its last rotation, hashes to
// hash. The second look-up only runs for a hash no current secret has: every request with a
// current secret still costs one indexed read.
func (db *DB) KeyByHash(ctx context.Context, hash []byte) (store.Key, error) {
	k, err := scanKey(db.readRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`, hash))
	if errors.Is(err, store.ErrNotFound) {
		k, err = scanKey(db.readRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE prev_hash = ?`, hash))
	}
	if err != nil {
		return k, fmt.Errorf("key by hash: %w", err)
	}
	return k, nil
}

// Key reads one key.
func (db *DB) Key(ctx context.Context, id string) (store.Key, error) {
	k, err := scanKey(db.read.QueryRowContext(ctx, db.q(`SELECT `+keyColumns+` FROM api_keys WHERE id = ?`), id))
	if err != nil {
		return k, fmt.Errorf("key %s: %w", id, err)
	}
	return k, nil
}

// Keys lists keys, of one tenant or of all, oldest first.
func (db *DB) Keys(ctx context.Context, tenantID string) ([]store.Key, error) {
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT `+keyColumns+` FROM api_keys
		WHERE ? = '' OR tenant_id = ? ORDER BY created_at, id`), tenantID, tenantID)
	if err != nil {
		return nil, fmt.Errorf("list keys: %w", err)
	}
	defer rows.Close()
	var keys []store.Key
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, fmt.Errorf("list keys: %w", err)
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// SetMetaOnce records name=value unless name is already set.
func (t *Tx) SetMetaOnce(ctx context.Context, name, value string) (bool, error) {
	res, err := t.exec(ctx, `INSERT INTO meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, value)
	if err != nil {
		return false, fmt.Errorf("set meta %s: %w", name, err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

// Meta reads a meta value.
func (db *DB) Meta(ctx context.Context, name string) (string, bool, error) {
	var v string
	err := db.read.QueryRowContext(ctx, db.q(`SELECT value FROM meta WHERE name = ?`), name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("meta %s: %w", name, err)
	}
	return v, true, nil
}

// noRows maps sql.ErrNoRows to store.ErrNotFound.
func noRows(err error) error {
	if errors.Is(err, sql.ErrNoRows) {
		return store.ErrNotFound
	}
	return err
}
