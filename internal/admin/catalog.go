package admin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/store"
)

// CatalogStale is how old a replica's heartbeat may be before it is shown as stale: a replica
// writes its row at least every 10 s while it runs and removes it when it stops cleanly, so an
// older row is one that was killed.
const CatalogStale = 30 * time.Second

// CatalogReplica is one replica's catalog version (GET /admin/v1/catalog).
type CatalogReplica struct {
	Object    string    `json:"object"` // "catalog_replica"
	ReplicaID string    `json:"replica_id"`
	Role      string    `json:"role"`
	Hash      string    `json:"hash"`
	LoadedAt  time.Time `json:"loaded_at"`
	// State: current (has handled the latest reload request, and took it), refused (kept its
	// catalog: LastError lists the file's problems), pending (has not yet seen the latest
	// request) or stale (no heartbeat within CatalogStale).
	State       string    `json:"state"`
	LastError   string    `json:"last_error,omitempty"`
	ErrorAt     time.Time `json:"error_at,omitzero"`
	ReloadSeen  int64     `json:"reload_seen"`
	HeartbeatAt time.Time `json:"heartbeat_at"`
}

// CatalogStatus is GET /admin/v1/catalog: every replica's version, and whether the running
// ones agree.
type CatalogStatus struct {
	Object string `json:"object"` // "catalog"
	// LatestReload is the number of the latest reload request (0: none yet).
	LatestReload int64 `json:"latest_reload"`
	// InSync: every running replica has handled the latest request and has the same version.
	InSync   bool             `json:"in_sync"`
	Replicas []CatalogReplica `json:"replicas"`
}

// catalogStore is what the catalog views read of the store.
type catalogStore interface {
	LatestCatalogReload(ctx context.Context) (int64, error)
	CatalogReplicas(ctx context.Context) ([]store.CatalogReplica, error)
}

// CatalogStatus lists the replicas' catalog versions.
func (s *Service) CatalogStatus(ctx context.Context, a Actor) (CatalogStatus, error) {
	if err := need(a, RoleViewer); err != nil {
		return CatalogStatus{}, err
	}
	st, ok := s.st.(catalogStore)
	if !ok {
		return CatalogStatus{}, errors.New("catalog status: the store keeps no replica versions")
	}
	latest, err := st.LatestCatalogReload(ctx)
	if err != nil {
		return CatalogStatus{}, err
	}
	reps, err := st.CatalogReplicas(ctx)
	if err != nil {
		return CatalogStatus{}, err
	}
	now := s.Now()
	out := CatalogStatus{Object: "catalog", LatestReload: latest, InSync: true, Replicas: []CatalogReplica{}}
	hashes := map[string]bool{}
	for _, r := range reps {
		v := CatalogReplica{Object: "catalog_replica", ReplicaID: r.ReplicaID, Role: r.Role, Hash: r.Hash, LoadedAt: r.LoadedAt,
			State: "current", LastError: r.LastError, ErrorAt: r.ErrorAt, ReloadSeen: r.ReloadSeen, HeartbeatAt: r.HeartbeatAt}
		switch {
		case now.Sub(r.HeartbeatAt) > CatalogStale:
			v.State = "stale"
		case r.ReloadSeen < latest:
			v.State, out.InSync = "pending", false
		case r.LastError != "":
			v.State, out.InSync = "refused", false
		}
		if v.State != "stale" {
			hashes[r.Hash] = true
		}
		out.Replicas = append(out.Replicas, v)
	}
	if len(hashes) > 1 {
		out.InSync = false
	}
	return out, nil
}

// CatalogReloader is serve's reload of its own catalog, which the reload action drives.
type CatalogReloader interface {
	// ReloadCatalog re-reads the catalog file and puts it in force, or refuses it (a
	// *catalog.Problems lists every problem) and keeps the one in force.
	ReloadCatalog(ctx context.Context) (Reloaded, error)
	// Handled tells the reloader that the request recorded for the other replicas is one it
	// has handled already.
	Handled(request int64)
}

// Reloaded is a reload's outcome in this process.
type Reloaded struct {
	ReplicaID    string
	Hash         string
	PreviousHash string
	LoadedAt     time.Time
}

// CatalogReload is the answer of POST /admin/v1/catalog/reload.
type CatalogReload struct {
	Object string `json:"object"` // "catalog_reload"
	// Request is the reload request recorded for every other replica; GET /admin/v1/catalog
	// shows when each has handled it.
	Request      int64     `json:"request"`
	ReplicaID    string    `json:"replica_id"`
	Hash         string    `json:"hash"`
	PreviousHash string    `json:"previous_hash"`
	LoadedAt     time.Time `json:"loaded_at"`
}

// ReloadCatalog reloads the catalog of this process and, when it is in force, records a
// reload request that every other replica follows, audited with it. A refused catalog changes
// nothing and is answered 400 with every problem.
func (s *Service) ReloadCatalog(ctx context.Context, a Actor, r CatalogReloader) (CatalogReload, error) {
	if err := need(a, RoleOwner); err != nil {
		return CatalogReload{}, err
	}
	done, err := r.ReloadCatalog(ctx)
	var problems *catalog.Problems
	if errors.As(err, &problems) {
		return CatalogReload{}, &apierr.Error{Kind: apierr.KindInvalid, Code: "catalog_refused",
			Message: fmt.Sprintf("The catalog file was refused; the catalog in force stays. %d problem(s): %s",
				len(problems.List), strings.Join(problems.List, "; "))}
	}
	if err != nil {
		return CatalogReload{}, err
	}
	now := s.Now()
	out, err := write(ctx, s, a, func(tx store.Tx) (CatalogReload, Change, error) {
		id, err := tx.RequestCatalogReload(ctx, a.Via+":"+a.Name, now)
		if err != nil {
			return CatalogReload{}, Change{}, err
		}
		res := CatalogReload{Object: "catalog_reload", Request: id, ReplicaID: done.ReplicaID, Hash: done.Hash,
			PreviousHash: done.PreviousHash, LoadedAt: done.LoadedAt.UTC()}
		return res, Change{Action: "catalog.reload", TargetType: "catalog", TargetID: done.Hash,
			Before: map[string]string{"hash": done.PreviousHash}, After: map[string]any{"hash": done.Hash, "request": id}}, nil
	})
	if err == nil {
		r.Handled(out.Request)
	}
	return out, err
}

// CatalogReloadRequest is the answer of a reload requested without reloading a catalog here
// (the CLI, which serves nothing): every running replica follows it within its poll.
type CatalogReloadRequest struct {
	Object  string `json:"object"` // "catalog_reload_request"
	Request int64  `json:"request"`
}

// RequestCatalogReload records a reload request for every running replica, audited as
// catalog.reload with the request's number: the CLI's reload, which is an operator action
// like the API's even though it changes no catalog in its own process.
func (s *Service) RequestCatalogReload(ctx context.Context, a Actor) (CatalogReloadRequest, error) {
	if err := need(a, RoleOwner); err != nil {
		return CatalogReloadRequest{}, err
	}
	now := s.Now()
	return write(ctx, s, a, func(tx store.Tx) (CatalogReloadRequest, Change, error) {
		id, err := tx.RequestCatalogReload(ctx, a.Via+":"+a.Name, now)
		if err != nil {
			return CatalogReloadRequest{}, Change{}, err
		}
		res := CatalogReloadRequest{Object: "catalog_reload_request", Request: id}
		return res, Change{Action: "catalog.reload", TargetType: "catalog", TargetID: fmt.Sprint(id), After: res}, nil
	})
}
