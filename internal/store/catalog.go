package store

import (
	"context"
	"time"
)

// CatalogReplica is what one running replica last reported of its catalog: the version in
// force (the file's short hash) and when it was loaded, the problems of its last refused
// reload, the reload request it handled last, and when it last reported.
type CatalogReplica struct {
	ReplicaID string
	Role      string // all, api or worker
	Hash      string
	LoadedAt  time.Time
	// LastError lists the problems of the last refused reload, one per line ("" after a
	// reload that succeeded); ErrorAt is when it was refused.
	LastError string
	ErrorAt   time.Time
	// ReloadSeen is the highest reload request (RequestCatalogReload) the replica handled,
	// whatever its outcome.
	ReloadSeen  int64
	HeartbeatAt time.Time
}

// CatalogTx records a reload request in a transaction (with the admin API's audit entry).
type CatalogTx interface {
	RequestCatalogReload(ctx context.Context, by string, at time.Time) (int64, error)
}

// CatalogStore keeps the reload requests and the replicas' reports (docs/catalog.md).
type CatalogStore interface {
	// RequestCatalogReload records a reload request for every replica and returns its
	// number, above every earlier one.
	RequestCatalogReload(ctx context.Context, by string, at time.Time) (int64, error)
	// LatestCatalogReload is the highest request number (0: none yet).
	LatestCatalogReload(ctx context.Context) (int64, error)
	// ReportCatalog writes the replica's row, replacing what it reported before.
	ReportCatalog(ctx context.Context, r CatalogReplica) error
	// CatalogReplicas lists every replica's row, by replica id.
	CatalogReplicas(ctx context.Context) ([]CatalogReplica, error)
	// RemoveCatalogReplica deletes a replica's row (a clean stop). Unknown ids are ignored.
	RemoveCatalogReplica(ctx context.Context, replicaID string) error
	// PruneCatalogReplicas deletes the rows whose heartbeat is older than before (replicas
	// killed long ago) and returns how many.
	PruneCatalogReplicas(ctx context.Context, before time.Time) (int64, error)
}
