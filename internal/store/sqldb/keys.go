package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/store"
)

const keyColumns = `id, tenant_id, name, prefix, hash, unlimited, created_at, revoked_at`

type scanner interface{ Scan(...any) error }

func scanKey(row scanner) (store.Key, error) {
	var k store.Key
	var unlimited int
	var created, revoked int64
	if err := row.Scan(&k.ID, &k.TenantID, &k.Name, &k.Prefix, &k.Hash, &unlimited, &created, &revoked); err != nil {
		return store.Key{}, noRows(err)
	}
	k.Unlimited = unlimited != 0
	k.CreatedAt, k.RevokedAt = fromMicros(created), fromMicros(revoked)
	return k, nil
}

// CreateKey stores the key and opens its three accounts, plus the currency's funding account
// the first time that currency is seen.
func (t *Tx) CreateKey(ctx context.Context, k store.Key, currency string) error {
	_, err := t.exec(ctx, `INSERT INTO api_keys (`+keyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, 0)`,
		k.ID, k.TenantID, k.Name, k.Prefix, k.Hash, boolInt(k.Unlimited), micros(k.CreatedAt))
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

// KeyByHash finds the key whose secret hashes to hash.
func (db *DB) KeyByHash(ctx context.Context, hash []byte) (store.Key, error) {
	k, err := scanKey(db.readRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`, hash))
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
