package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"mediagen/internal/store"
)

// ---------------------------------------------------------------------------------------------
// Asset groups
// ---------------------------------------------------------------------------------------------

const groupColumns = `g.id, g.tenant_id, g.library, g.name, g.description, g.origin, g.status, g.created_at,
	g.updated_at, (SELECT COUNT(*) FROM assets a WHERE a.group_id = g.id), g.upstream, g.upstream_id`

func scanGroup(row scanner) (store.AssetGroup, error) {
	var g store.AssetGroup
	var created, updated int64
	if err := row.Scan(&g.ID, &g.TenantID, &g.Library, &g.Name, &g.Description, &g.Origin, &g.Status,
		&created, &updated, &g.AssetCount, &g.Upstream, &g.UpstreamID); err != nil {
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
	_, err := t.exec(ctx, `INSERT INTO asset_groups (id, tenant_id, library, name, description, origin, status, created_at, updated_at,
		upstream, upstream_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		g.ID, g.TenantID, g.Library, g.Name, g.Description, g.Origin, g.Status, micros(g.CreatedAt), micros(g.UpdatedAt),
		g.Upstream, g.UpstreamID)
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
	failure_reason, blob_key, content_type, size_bytes, duration, width, height, attempts, created_at, updated_at, key_id,
	upstream, upstream_id, upstream_status`

// assetSelect reads assetColumns; a Processing asset's attempts are those of its ingestion job
// (internal/asset's job kind "asset.ingest"), which counts them as runs start.
const assetSelect = `id, tenant_id, group_id, library, name, asset_type, source_url, status, failure_code,
	failure_reason, blob_key, content_type, size_bytes, duration, width, height,
	COALESCE((SELECT j.attempts FROM jobs j WHERE j.id = 'asset.ingest:' || assets.id), attempts), created_at, updated_at, key_id,
	upstream, upstream_id, upstream_status`

func scanAsset(row scanner, extra ...any) (store.Asset, error) {
	var a store.Asset
	var created, updated int64
	dest := []any{&a.ID, &a.TenantID, &a.GroupID, &a.Library, &a.Name, &a.Type, &a.SourceURL, &a.Status,
		&a.FailureCode, &a.FailureReason, &a.BlobKey, &a.ContentType, &a.Bytes, &a.Duration, &a.Width, &a.Height,
		&a.Attempts, &created, &updated, &a.KeyID, &a.Upstream, &a.UpstreamID, &a.UpstreamStatus}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return store.Asset{}, noRows(err)
	}
	a.CreatedAt, a.UpdatedAt = fromMicros(created), fromMicros(updated)
	return a, nil
}

// Asset reads one asset by id.
func (db *DB) Asset(ctx context.Context, id string) (store.Asset, error) {
	a, err := scanAsset(db.read.QueryRowContext(ctx, db.q(`SELECT `+assetSelect+` FROM assets WHERE id = ?`), id))
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
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT `+assetSelect+` FROM assets WHERE `+where+
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

// CreateAsset inserts an asset; its caller enqueues the job that processes it. A Processing
// asset is counted in flight (and its counter rows locked) in the same transaction.
func (t *Tx) CreateAsset(ctx context.Context, a store.Asset) error {
	_, err := t.exec(ctx, `INSERT INTO assets (`+assetColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		a.ID, a.TenantID, a.GroupID, a.Library, a.Name, a.Type, a.SourceURL, a.Status, a.FailureCode,
		a.FailureReason, a.BlobKey, a.ContentType, a.Bytes, a.Duration, a.Width, a.Height, a.Attempts,
		micros(a.CreatedAt), micros(a.UpdatedAt), a.KeyID, a.Upstream, a.UpstreamID, a.UpstreamStatus)
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("create asset %s: %w", a.ID, store.ErrConflict)
		}
		return fmt.Errorf("create asset %s: %w", a.ID, err)
	}
	if a.Status == store.AssetProcessing {
		return t.addInFlight(ctx, store.InFlightAssets, a.KeyID, a.TenantID)
	}
	return nil
}

// RenameAsset changes an asset's name.
func (t *Tx) RenameAsset(ctx context.Context, id, name string, at time.Time) error {
	res, err := t.exec(ctx, `UPDATE assets SET name = ?, updated_at = ? WHERE id = ?`, name, micros(at), id)
	return affectedOne(res, err, "rename asset "+id, store.ErrNotFound)
}

// DeleteAsset removes an asset row and returns its blob key; a run processing it finds it
// gone and discards its copy. Deleting a Processing asset ends its ingestion, so it stops
// counting in flight. The status comes from the DELETE itself, which holds the row: a
// FinishAsset committed first is seen (no second decrement), and one not yet run will find
// the row gone (ErrLeaseLost, no decrement).
func (t *Tx) DeleteAsset(ctx context.Context, id string) (string, error) {
	var key, status, keyID, tenantID string
	err := t.queryRow(ctx, `DELETE FROM assets WHERE id = ? RETURNING blob_key, status, key_id, tenant_id`, id).
		Scan(&key, &status, &keyID, &tenantID)
	if err != nil {
		return "", fmt.Errorf("delete asset %s: %w", id, noRows(err))
	}
	if status == store.AssetProcessing {
		if err := t.uncount(ctx, store.InFlightAssets, keyID, tenantID); err != nil {
			return "", fmt.Errorf("delete asset %s: %w", id, err)
		}
	}
	return key, nil
}

// FinishAsset writes the outcome of processing of an asset still Processing.
func (t *Tx) FinishAsset(ctx context.Context, o store.AssetOutcome) error {
	res, err := t.exec(ctx, `UPDATE assets SET status = ?, failure_code = ?, failure_reason = ?,
		blob_key = ?, content_type = ?, size_bytes = ?, duration = ?, width = ?, height = ?, attempts = ?, updated_at = ?
		WHERE id = ? AND status = 'Processing'`,
		o.Status, o.FailureCode, o.FailureReason, o.BlobKey, o.ContentType, o.Bytes, o.Duration, o.Width, o.Height,
		o.Attempts, micros(o.At), o.ID)
	if err := affectedOne(res, err, "finish asset "+o.ID, store.ErrLeaseLost); err != nil {
		return err
	}
	if o.Status == store.AssetProcessing {
		// The copy is stored and the asset waits for its upstream library
		// (SetAssetUpstream ends it): still in flight.
		return nil
	}
	// The update applied only to a Processing asset, so this runs once per ingestion.
	return t.dropInFlight(ctx, store.InFlightAssets, o.ID)
}

// ---------------------------------------------------------------------------------------------
// Verification sessions
// ---------------------------------------------------------------------------------------------

const verifyColumns = `id, token_hash, tenant_id, key_id, callback_url, status, group_id, created_at, expires_at,
	started_at, finished_at, redeemed_at, callback_body, callback_state, callback_attempts, upstream, upstream_token`

func scanVerify(row scanner, extra ...any) (store.VerifySession, error) {
	var v store.VerifySession
	var created, expires, started, finished, redeemed int64
	var body string
	dest := []any{&v.ID, &v.TokenHash, &v.TenantID, &v.KeyID, &v.CallbackURL, &v.Status, &v.GroupID, &created, &expires,
		&started, &finished, &redeemed, &body, &v.CallbackState, &v.CallbackAttempts, &v.Upstream, &v.UpstreamToken}
	if err := row.Scan(append(dest, extra...)...); err != nil {
		return store.VerifySession{}, noRows(err)
	}
	v.CreatedAt, v.ExpiresAt, v.StartedAt = fromMicros(created), fromMicros(expires), fromMicros(started)
	v.FinishedAt, v.RedeemedAt = fromMicros(finished), fromMicros(redeemed)
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
	_, err := t.exec(ctx, `INSERT INTO verify_sessions (`+verifyColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		v.ID, v.TokenHash, v.TenantID, v.KeyID, v.CallbackURL, v.Status, v.GroupID, micros(v.CreatedAt), micros(v.ExpiresAt),
		micros(v.StartedAt), micros(v.FinishedAt), micros(v.RedeemedAt), string(v.CallbackBody), v.CallbackState,
		v.CallbackAttempts, v.Upstream, v.UpstreamToken)
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

// FinishVerifySession ends a pending session; a session with a callback URL gets a pending
// callback (its caller enqueues the job that delivers it).
func (t *Tx) FinishVerifySession(ctx context.Context, id, status, groupID string, callbackBody []byte, at time.Time) error {
	res, err := t.exec(ctx, `UPDATE verify_sessions SET status = ?, group_id = ?, finished_at = ?, callback_body = ?,
		callback_state = CASE WHEN callback_url <> '' THEN 'pending' ELSE '' END
		WHERE id = ? AND status = 'pending'`, status, groupID, micros(at), string(callbackBody), id)
	return affectedOne(res, err, "finish verify session "+id, store.ErrConflict)
}

// RedeemVerifySession marks the result handed out, once.
func (t *Tx) RedeemVerifySession(ctx context.Context, id string, at time.Time) error {
	res, err := t.exec(ctx, `UPDATE verify_sessions SET redeemed_at = ? WHERE id = ? AND redeemed_at = 0`, micros(at), id)
	return affectedOne(res, err, "redeem verify session "+id, store.ErrConflict)
}

// FinishCallback records a delivery attempt of a pending callback.
func (t *Tx) FinishCallback(ctx context.Context, id, state string, attempts int) error {
	res, err := t.exec(ctx, `UPDATE verify_sessions SET callback_state = ?, callback_attempts = ?
		WHERE id = ? AND callback_state = 'pending'`, state, attempts, id)
	return affectedOne(res, err, "finish callback "+id, store.ErrLeaseLost)
}

// ---------------------------------------------------------------------------------------------
// Upstream asset libraries (kind ark_assets)
// ---------------------------------------------------------------------------------------------

// SetAssetGroupUpstream binds a group to its vendor group, replacing the binding it had
// (upstream and id of "" for none): compare-and-swap, so two runs that each made a vendor group
// for it agree on the first. ErrConflict when the binding changed meanwhile or the vendor group
// is already another group's.
func (t *Tx) SetAssetGroupUpstream(ctx context.Context, id, oldUpstream, oldID, upstream, upstreamID string) error {
	res, err := t.exec(ctx, `UPDATE asset_groups SET upstream = ?, upstream_id = ? WHERE id = ? AND upstream = ? AND upstream_id = ?`,
		upstream, upstreamID, id, oldUpstream, oldID)
	if err != nil && t.db.d.IsUniqueViolation(err) {
		return fmt.Errorf("bind asset group %s: %w", id, store.ErrConflict)
	}
	return affectedOne(res, err, "bind asset group "+id, store.ErrConflict)
}

// AssetGroupByUpstream finds the group bound to a vendor group.
func (db *DB) AssetGroupByUpstream(ctx context.Context, upstream, upstreamID string) (store.AssetGroup, error) {
	g, err := scanGroup(db.read.QueryRowContext(ctx, db.q(`SELECT `+groupColumns+` FROM asset_groups g WHERE g.upstream = ? AND g.upstream_id = ?`),
		upstream, upstreamID))
	if err != nil {
		return g, fmt.Errorf("asset group of %s %s: %w", upstream, upstreamID, err)
	}
	return g, nil
}

// SetAssetUpstream records the vendor's side of an asset still Processing: its vendor id and
// status, and, when the vendor settled it, the asset's own end (Active, or Failed with a code
// and reason). ErrLeaseLost when the asset is gone or no longer Processing.
func (t *Tx) SetAssetUpstream(ctx context.Context, u store.AssetUpstream) error {
	status := u.Status
	if status == "" {
		status = store.AssetProcessing
	}
	res, err := t.exec(ctx, `UPDATE assets SET upstream_id = ?, upstream_status = ?, status = ?, failure_code = ?, failure_reason = ?,
		updated_at = ? WHERE id = ? AND status = 'Processing'`,
		u.UpstreamID, u.UpstreamStatus, status, u.FailureCode, u.FailureReason, micros(u.At), u.ID)
	if err := affectedOne(res, err, "record upstream of asset "+u.ID, store.ErrLeaseLost); err != nil {
		return err
	}
	if status == store.AssetProcessing {
		return nil
	}
	return t.dropInFlight(ctx, store.InFlightAssets, u.ID)
}

// SetVerifyUpstream records the vendor's token of a session it runs.
func (t *Tx) SetVerifyUpstream(ctx context.Context, id, upstream, token string) error {
	res, err := t.exec(ctx, `UPDATE verify_sessions SET upstream = ?, upstream_token = ? WHERE id = ?`, upstream, token, id)
	return affectedOne(res, err, "record upstream of verify session "+id, store.ErrNotFound)
}
