package sqldb

import (
	"context"
	"fmt"
	"time"

	"mediagen/internal/store"
)

// RequestCatalogReload appends a reload request.
func (db *DB) RequestCatalogReload(ctx context.Context, by string, at time.Time) (id int64, err error) {
	err = db.Transact(ctx, func(tx store.Tx) error {
		id, err = tx.RequestCatalogReload(ctx, by, at)
		return err
	})
	return id, err
}

// RequestCatalogReload appends a reload request in the transaction.
func (t *Tx) RequestCatalogReload(ctx context.Context, by string, at time.Time) (int64, error) {
	var id int64
	if err := t.queryRow(ctx, `INSERT INTO catalog_reloads (requested_at, requested_by) VALUES (?, ?) RETURNING id`, micros(at), by).Scan(&id); err != nil {
		return 0, fmt.Errorf("request catalog reload: %w", err)
	}
	return id, nil
}

// LatestCatalogReload is the highest request id, 0 when there is none. It is one index read:
// every replica asks it about once a second.
func (db *DB) LatestCatalogReload(ctx context.Context) (int64, error) {
	var id int64
	if err := db.readRow(ctx, `SELECT COALESCE(MAX(id), 0) FROM catalog_reloads`).Scan(&id); err != nil {
		return 0, fmt.Errorf("latest catalog reload: %w", err)
	}
	return id, nil
}

// ReportCatalog upserts the replica's row.
func (db *DB) ReportCatalog(ctx context.Context, r store.CatalogReplica) error {
	_, err := db.writeExec(ctx, `INSERT INTO catalog_replicas
		(replica_id, role, hash, loaded_at, last_error, error_at, reload_seen, heartbeat_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
		ON CONFLICT (replica_id) DO UPDATE SET role = excluded.role, hash = excluded.hash, loaded_at = excluded.loaded_at,
		last_error = excluded.last_error, error_at = excluded.error_at, reload_seen = excluded.reload_seen,
		heartbeat_at = excluded.heartbeat_at`,
		r.ReplicaID, r.Role, r.Hash, micros(r.LoadedAt), r.LastError, micros(r.ErrorAt), r.ReloadSeen, micros(r.HeartbeatAt))
	if err != nil {
		return fmt.Errorf("report catalog of replica %s: %w", r.ReplicaID, err)
	}
	return nil
}

// CatalogReplicas lists the replicas' rows by id.
func (db *DB) CatalogReplicas(ctx context.Context) ([]store.CatalogReplica, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT replica_id, role, hash, loaded_at, last_error, error_at, reload_seen, heartbeat_at
		FROM catalog_replicas ORDER BY replica_id`)
	if err != nil {
		return nil, fmt.Errorf("catalog replicas: %w", err)
	}
	defer rows.Close()
	var out []store.CatalogReplica
	for rows.Next() {
		var r store.CatalogReplica
		var loaded, errAt, beat int64
		if err := rows.Scan(&r.ReplicaID, &r.Role, &r.Hash, &loaded, &r.LastError, &errAt, &r.ReloadSeen, &beat); err != nil {
			return nil, fmt.Errorf("catalog replicas: %w", err)
		}
		r.LoadedAt, r.ErrorAt, r.HeartbeatAt = fromMicros(loaded), fromMicros(errAt), fromMicros(beat)
		out = append(out, r)
	}
	return out, rows.Err()
}

// RemoveCatalogReplica deletes the replica's row.
func (db *DB) RemoveCatalogReplica(ctx context.Context, replicaID string) error {
	if _, err := db.writeExec(ctx, `DELETE FROM catalog_replicas WHERE replica_id = ?`, replicaID); err != nil {
		return fmt.Errorf("remove catalog replica %s: %w", replicaID, err)
	}
	return nil
}

// PruneCatalogReplicas deletes the rows of replicas silent since before.
func (db *DB) PruneCatalogReplicas(ctx context.Context, before time.Time) (int64, error) {
	res, err := db.writeExec(ctx, `DELETE FROM catalog_replicas WHERE heartbeat_at < ?`, micros(before))
	if err != nil {
		return 0, fmt.Errorf("prune catalog replicas: %w", err)
	}
	return res.RowsAffected()
}
