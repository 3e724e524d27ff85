package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/store"
)

// ---------------------------------------------------------------------------------------------
// Asset groups
// ---------------------------------------------------------------------------------------------

const groupColumns = `g.id, g.tenant_id, g.library, g.name, g.description, g.origin, g.status, g.created_at,
	g.updated_at, (SELECT COUNT(*) FROM assets a WHERE a.group_id = g.id)`

func scanGroup(row scanner) (store.AssetGroup, error) {
	var g store.AssetGroup
	var created, updated int64
	if err := row.Scan(&g.ID, &g.TenantID, &g.Library, &g.Name, &g.Description, &g.Origin, &g.Status,
		&created, &updated, &g.AssetCount); err != nil {
		return store.AssetGroup{}, noRows(err)
	}
	g.CreatedAt, g.UpdatedAt = fromMicros(created), fromMicros(updated)
	return g, nil
}

// AssetGroup reads one group by id.
func (db *DB) AssetGroup(ctx context.Context, id string) (store.AssetGroup, error) {
	g, err := scanGroup(db.read.QueryRowContext(ctx, db.q(`SELECT `+groupColumns+` FROM asset_groups g WHERE g.id = ?`), id))
	if err != nil {
		return g, fmt.Errorf("asset group %s: %w", id, err)
	}
	return g, nil
}

// AssetGroupForUpdate reads one group inside a transaction.
func (t *Tx) AssetGroupForUpdate(ctx context.Context, id string) (store.AssetGroup, error) {
	g, err := scanGroup(t.queryRow(ctx, `SELECT `+groupColumns+` FROM asset_groups g WHERE g.id = ?`, id))
	if err != nil {
		return g, fmt.Errorf("asset group %s: %w", id, err)
	}
	return g, nil
}

// AssetGroups returns a page of groups, newest first, and the number matching.
func (db *DB) AssetGroups(ctx context.Context, q store.AssetGroupQuery) ([]store.AssetGroup, int, error) {
	where, args := "1 = 1", []any{}
	for _, f := range []struct{ col, val string }{{"g.tenant_id", q.TenantID}, {"g.library", q.Library}, {"g.origin", q.Origin}} {
		if f.val != "" {
			where += " AND " + f.col + " = ?"
			args = append(args, f.val)
		}
	}
	var total int
	if err := db.read.QueryRowContext(ctx, db.q(`SELECT COUNT(*) FROM asset_groups g WHERE `+where), args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count asset groups: %w", err)
	}
	query := `SELECT ` + groupColumns + ` FROM asset_groups g WHERE ` + where + ` ORDER BY g.created_at DESC, g.id DESC` + page(q.Offset, q.Limit)
	rows, err := db.read.QueryContext(ctx, db.q(query), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list asset groups: %w", err)
	}
	defer rows.Close()
	var out []store.AssetGroup
	for rows.Next() {
		g, err := scanGroup(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list asset groups: %w", err)
		}
		out = append(out, g)
	}
	return out, total, rows.Err()
}

// page is the LIMIT/OFFSET clause; the values are ints, so formatting them in is safe.
func page(offset, limit int) string {
	if limit <= 0 {
		return ""
	}
	return fmt.Sprintf(" LIMIT %d OFFSET %d", limit, max(offset, 0))
}

// CreateAssetGroup inserts a group.
func (t *Tx) CreateAssetGroup(ctx context.Context, g store.AssetGroup) error {
	_, err := t.exec(ctx, `INSERT INTO asset_groups (id, tenant_id, library, name, description, origin, status, created_at, updated_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		g.ID, g.TenantID, g.Library, g.Name, g.Description, g.Origin, g.Status, micros(g.CreatedAt), micros(g.UpdatedAt))
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("create asset group %s: %w", g.ID, store.ErrConflict)
		}
		return fmt.Errorf("create asset group %s: %w", g.ID, err)
	}
	return nil
}

// UpdateAssetGroup writes the mutable fields of a group.
func (t *Tx) UpdateAssetGroup(ctx context.Context, g store.AssetGroup) error {
	res, err := t.exec(ctx, `UPDATE asset_groups SET name = ?, description = ?, status = ?, updated_at = ? WHERE id = ?`,
		g.Name, g.Description, g.Status, micros(g.UpdatedAt), g.ID)
	return affectedOne(res, err, "update asset group "+g.ID, store.ErrNotFound)
}

// DeleteAssetGroup removes an empty group.
func (t *Tx) DeleteAssetGroup(ctx context.Context, id string) error {
	var n int
	if err := t.queryRow(ctx, `SELECT COUNT(*) FROM assets WHERE group_id = ?`, id).Scan(&n); err != nil {
		return fmt.Errorf("delete asset group %s: %w", id, err)
	}
	if n > 0 {
		return fmt.Errorf("delete asset group %s: holds %d assets: %w", id, n, store.ErrConflict)
	}
	res, err := t.exec(ctx, `DELETE FROM asset_groups WHERE id = ?`, id)
	return affectedOne(res, err, "delete asset group "+id, store.ErrNotFound)
}

func affectedOne(res sql.Result, err error, what string, none error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("%s: %w", what, none)
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// Assets
// ---------------------------------------------------------------------------------------------

const assetColumns = `id, tenant_id, group_id, library, name, asset_type, source_url, status, failure_code,
	failure_reason, blob_key, content_type, size_bytes, duration, width, height, attempts, created_at, updated_at`

func scanAsset(row scanner, extra ...any) (store.Asset, error) {
	var a store.Asset
	var created, updated int64
	dest := []any{&a.ID, &a.TenantID, &a.GroupID, &a.Library, &a.Name, &a.Type, &a.SourceURL, &a.Status,
		&a.FailureCode, &a.FailureReason, &a.BlobKey, &a.ContentType, &a.Bytes, &a.Duration, &a.Width, &a.Height,
		&a.Attempts, &created, &updated}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return store.Asset{}, noRows(err)
	}
	a.CreatedAt, a.UpdatedAt = fromMicros(created), fromMicros(updated)
	return a, nil
}

// Asset reads one asset by id.
func (db *DB) Asset(ctx context.Context, id string) (store.Asset, error) {
	a, err := scanAsset(db.read.QueryRowContext(ctx, db.q(`SELECT `+assetColumns+` FROM assets WHERE id = ?`), id))
	if err != nil {
		return a, fmt.Errorf("asset %s: %w", id, err)
	}
	return a, nil
}

// Assets returns a page of assets, newest first, and the number matching.
func (db *DB) Assets(ctx context.Context, q store.AssetQuery) ([]store.Asset, int, error) {
	where, args := "1 = 1", []any{}
	for _, f := range []struct{ col, val string }{{"tenant_id", q.TenantID}, {"library", q.Library},
		{"group_id", q.GroupID}, {"asset_type", q.Type}, {"status", q.Status}} {
		if f.val != "" {
			where += " AND " + f.col + " = ?"
			args = append(args, f.val)
		}
	}
	var total int
	if err := db.read.QueryRowContext(ctx, db.q(`SELECT COUNT(*) FROM assets WHERE `+where), args...).Scan(&total); err != nil {
		return nil, 0, fmt.Errorf("count assets: %w", err)
	}
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT `+assetColumns+` FROM assets WHERE `+where+
		` ORDER BY created_at DESC, id DESC`+page(q.Offset, q.Limit)), args...)
	if err != nil {
		return nil, 0, fmt.Errorf("list assets: %w", err)
	}
	defer rows.Close()
	var out []store.Asset
	for rows.Next() {
		a, err := scanAsset(rows)
		if err != nil {
			return nil, 0, fmt.Errorf("list assets: %w", err)
		}
		out = append(out, a)
	}
	return out, total, rows.Err()
}

// CreateAsset inserts an asset. Its lease is expired from the start, so a processor claims it
// at once.
func (t *Tx) CreateAsset(ctx context.Context, a store.Asset) error {
	_, err := t.exec(ctx, `INSERT INTO assets (`+assetColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.TenantID, a.GroupID, a.Library, a.Name, a.Type, a.SourceURL, a.Status, a.FailureCode,
		a.FailureReason, a.BlobKey, a.ContentType, a.Bytes, a.Duration, a.Width, a.Height, a.Attempts,
		micros(a.CreatedAt), micros(a.UpdatedAt))
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("create asset %s: %w", a.ID, store.ErrConflict)
		}
		return fmt.Errorf("create asset %s: %w", a.ID, err)
	}
	return nil
}

// RenameAsset changes an asset's name.
func (t *Tx) RenameAsset(ctx context.Context, id, name string, at time.Time) error {
	res, err := t.exec(ctx, `UPDATE assets SET name = ?, updated_at = ? WHERE id = ?`, name, micros(at), id)
	return affectedOne(res, err, "rename asset "+id, store.ErrNotFound)
}

// DeleteAsset removes an asset row and returns its blob key; a processor holding its lease
// finds it gone.
func (t *Tx) DeleteAsset(ctx context.Context, id string) (string, error) {
	var key string
	err := t.queryRow(ctx, `DELETE FROM assets WHERE id = ? RETURNING blob_key`, id).Scan(&key)
	if err != nil {
		return "", fmt.Errorf("delete asset %s: %w", id, noRows(err))
	}
	return key, nil
}

// ClaimAssets leases Processing assets whose lease expired. Each row is taken with a
// compare-and-set on its lease, so concurrent claimers (other replicas) never share one.
func (db *DB) ClaimAssets(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.ClaimedAsset, error) {
	if limit <= 0 {
		return nil, nil
	}
	n := micros(now)
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT id FROM assets WHERE status = 'Processing' AND lease_until < ?
		ORDER BY lease_until, created_at LIMIT ?`), n, limit)
	if err != nil {
		return nil, fmt.Errorf("claim assets: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim assets: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim assets: %w", err)
	}
	var out []store.ClaimedAsset
	for _, id := range ids {
		token := idgen.New("lease")
		var a store.Asset
		err := db.Transact(ctx, func(tx store.Tx) error {
			t := tx.(*Tx)
			res, err := t.exec(ctx, `UPDATE assets SET lease_token = ?, lease_until = ?, attempts = attempts + 1
				WHERE id = ? AND status = 'Processing' AND lease_until < ?`, token, micros(now.Add(lease)), id, n)
			if err != nil {
				return err
			}
			if k, _ := res.RowsAffected(); k != 1 {
				return store.ErrLeaseLost
			}
			a, err = scanAsset(t.queryRow(ctx, `SELECT `+assetColumns+` FROM assets WHERE id = ?`, id))
			return err
		})
		if errors.Is(err, store.ErrLeaseLost) {
			continue // another claimer took it
		}
		if err != nil {
			return out, fmt.Errorf("claim asset %s: %w", id, err)
		}
		out = append(out, store.ClaimedAsset{Asset: a, Token: token})
	}
	return out, nil
}

// FinishAsset writes the outcome of processing under the lease.
func (db *DB) FinishAsset(ctx context.Context, o store.AssetOutcome) error {
	res, err := db.write.ExecContext(ctx, db.q(`UPDATE assets SET status = ?, failure_code = ?, failure_reason = ?,
		blob_key = ?, content_type = ?, size_bytes = ?, duration = ?, width = ?, height = ?, updated_at = ?,
		lease_until = 0, lease_token = ''
		WHERE id = ? AND lease_token = ? AND status = 'Processing'`),
		o.Status, o.FailureCode, o.FailureReason, o.BlobKey, o.ContentType, o.Bytes, o.Duration, o.Width, o.Height,
		micros(o.At), o.ID, o.Token)
	return affectedOne(res, err, "finish asset "+o.ID, store.ErrLeaseLost)
}

// ReleaseAsset hands the lease back and uncounts the attempt, so the next claim runs it again.
func (db *DB) ReleaseAsset(ctx context.Context, id, token string) error {
	_, err := db.write.ExecContext(ctx, db.q(`UPDATE assets SET lease_until = 0, lease_token = '',
		attempts = CASE WHEN attempts > 0 THEN attempts - 1 ELSE 0 END
		WHERE id = ? AND lease_token = ? AND status = 'Processing'`), id, token)
	if err != nil {
		return fmt.Errorf("release asset %s: %w", id, err)
	}
	return nil
}

// DeferAsset makes the asset claimable again at until, keeping the attempt counted.
func (db *DB) DeferAsset(ctx context.Context, id, token string, until time.Time) error {
	res, err := db.write.ExecContext(ctx, db.q(`UPDATE assets SET lease_until = ?, lease_token = ''
		WHERE id = ? AND lease_token = ? AND status = 'Processing'`), micros(until), id, token)
	if err != nil {
		return fmt.Errorf("defer asset %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("defer asset %s: %w", id, store.ErrLeaseLost)
	}
	return nil
}

// ---------------------------------------------------------------------------------------------
// Verification sessions
// ---------------------------------------------------------------------------------------------

const verifyColumns = `id, token_hash, tenant_id, key_id, callback_url, status, group_id, created_at, expires_at,
	started_at, finished_at, redeemed_at, callback_body, callback_state, callback_attempts, callback_next_at`

func scanVerify(row scanner, extra ...any) (store.VerifySession, error) {
	var v store.VerifySession
	var created, expires, started, finished, redeemed, next int64
	var body string
	dest := []any{&v.ID, &v.TokenHash, &v.TenantID, &v.KeyID, &v.CallbackURL, &v.Status, &v.GroupID, &created, &expires,
		&started, &finished, &redeemed, &body, &v.CallbackState, &v.CallbackAttempts, &next}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return store.VerifySession{}, noRows(err)
	}
	v.CreatedAt, v.ExpiresAt, v.StartedAt = fromMicros(created), fromMicros(expires), fromMicros(started)
	v.FinishedAt, v.RedeemedAt, v.CallbackNextAt = fromMicros(finished), fromMicros(redeemed), fromMicros(next)
	if body != "" {
		v.CallbackBody = []byte(body)
	}
	return v, nil
}

// VerifySessionByToken finds a session by the hash of its token.
func (db *DB) VerifySessionByToken(ctx context.Context, hash []byte) (store.VerifySession, error) {
	v, err := scanVerify(db.read.QueryRowContext(ctx, db.q(`SELECT `+verifyColumns+` FROM verify_sessions WHERE token_hash = ?`), hash))
	if err != nil {
		return v, fmt.Errorf("verify session: %w", err)
	}
	return v, nil
}

// VerifySession reads a session by id.
func (db *DB) VerifySession(ctx context.Context, id string) (store.VerifySession, error) {
	v, err := scanVerify(db.read.QueryRowContext(ctx, db.q(`SELECT `+verifyColumns+` FROM verify_sessions WHERE id = ?`), id))
	if err != nil {
		return v, fmt.Errorf("verify session %s: %w", id, err)
	}
	return v, nil
}

// CreateVerifySession inserts a pending session.
func (t *Tx) CreateVerifySession(ctx context.Context, v store.VerifySession) error {
	_, err := t.exec(ctx, `INSERT INTO verify_sessions (`+verifyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ID, v.TokenHash, v.TenantID, v.KeyID, v.CallbackURL, v.Status, v.GroupID, micros(v.CreatedAt), micros(v.ExpiresAt),
		micros(v.StartedAt), micros(v.FinishedAt), micros(v.RedeemedAt), string(v.CallbackBody), v.CallbackState,
		v.CallbackAttempts, micros(v.CallbackNextAt))
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("create verify session %s: %w", v.ID, store.ErrConflict)
		}
		return fmt.Errorf("create verify session %s: %w", v.ID, err)
	}
	return nil
}

// StartVerifySession records the start of the check of a pending session.
func (t *Tx) StartVerifySession(ctx context.Context, id string, at time.Time) error {
	res, err := t.exec(ctx, `UPDATE verify_sessions SET started_at = ? WHERE id = ? AND status = 'pending'`, micros(at), id)
	return affectedOne(res, err, "start verify session "+id, store.ErrConflict)
}

// FinishVerifySession ends a pending session; a callback becomes due at once.
func (t *Tx) FinishVerifySession(ctx context.Context, id, status, groupID string, callbackBody []byte, at time.Time) error {
	res, err := t.exec(ctx, `UPDATE verify_sessions SET status = ?, group_id = ?, finished_at = ?, callback_body = ?,
		callback_state = CASE WHEN callback_url <> '' THEN 'pending' ELSE '' END, callback_next_at = ?
		WHERE id = ? AND status = 'pending'`, status, groupID, micros(at), string(callbackBody), micros(at), id)
	return affectedOne(res, err, "finish verify session "+id, store.ErrConflict)
}

// RedeemVerifySession marks the result handed out, once.
func (t *Tx) RedeemVerifySession(ctx context.Context, id string, at time.Time) error {
	res, err := t.exec(ctx, `UPDATE verify_sessions SET redeemed_at = ? WHERE id = ? AND redeemed_at = 0`, micros(at), id)
	return affectedOne(res, err, "redeem verify session "+id, store.ErrConflict)
}

// ClaimCallbacks leases due callbacks with a compare-and-set per row.
func (db *DB) ClaimCallbacks(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.ClaimedCallback, error) {
	if limit <= 0 {
		return nil, nil
	}
	n := micros(now)
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT id FROM verify_sessions
		WHERE callback_state = 'pending' AND callback_next_at <= ? AND callback_lease_until < ?
		ORDER BY callback_next_at LIMIT ?`), n, n, limit)
	if err != nil {
		return nil, fmt.Errorf("claim callbacks: %w", err)
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return nil, fmt.Errorf("claim callbacks: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("claim callbacks: %w", err)
	}
	var out []store.ClaimedCallback
	for _, id := range ids {
		token := idgen.New("lease")
		res, err := db.write.ExecContext(ctx, db.q(`UPDATE verify_sessions SET callback_lease_token = ?, callback_lease_until = ?
			WHERE id = ? AND callback_state = 'pending' AND callback_next_at <= ? AND callback_lease_until < ?`),
			token, micros(now.Add(lease)), id, n, n)
		if err != nil {
			return out, fmt.Errorf("claim callback %s: %w", id, err)
		}
		if k, _ := res.RowsAffected(); k != 1 {
			continue
		}
		v, err := db.VerifySession(ctx, id)
		if err != nil {
			return out, err
		}
		out = append(out, store.ClaimedCallback{VerifySession: v, Token: token})
	}
	return out, nil
}

// FinishCallback records a delivery attempt under the lease.
func (db *DB) FinishCallback(ctx context.Context, id, token, state string, attempts int, next time.Time) error {
	res, err := db.write.ExecContext(ctx, db.q(`UPDATE verify_sessions SET callback_state = ?, callback_attempts = ?,
		callback_next_at = ?, callback_lease_until = 0, callback_lease_token = ''
		WHERE id = ? AND callback_lease_token = ? AND callback_state = 'pending'`), state, attempts, micros(next), id, token)
	return affectedOne(res, err, "finish callback "+id, store.ErrLeaseLost)
}
