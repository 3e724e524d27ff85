package storetest

import (
	"context"
	"testing"
	"time"

	"mediagen/internal/store"
)

// Reload requests number upward from 1; a replica's report replaces its earlier one; removed
// replicas leave the list.
func testCatalogReplicas(t *testing.T, s store.Store) {
	ctx := context.Background()
	if id, err := s.LatestCatalogReload(ctx); err != nil || id != 0 {
		t.Fatalf("latest reload of an empty store: %d, %v; want 0", id, err)
	}
	at := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	first, err := s.RequestCatalogReload(ctx, "cli", at)
	if err != nil {
		t.Fatal(err)
	}
	second, err := s.RequestCatalogReload(ctx, "cli", at.Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if second <= first {
		t.Errorf("request numbers %d then %d: want increasing", first, second)
	}
	if id, err := s.LatestCatalogReload(ctx); err != nil || id != second {
		t.Errorf("latest reload %d, %v; want %d", id, err, second)
	}
	a := store.CatalogReplica{ReplicaID: "a", Role: "all", Hash: "111111111111", LoadedAt: at, HeartbeatAt: at}
	b := store.CatalogReplica{ReplicaID: "b", Role: "api", Hash: "111111111111", LoadedAt: at, HeartbeatAt: at}
	for _, r := range []store.CatalogReplica{a, b} {
		if err := s.ReportCatalog(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	a.Hash, a.LoadedAt, a.ReloadSeen, a.HeartbeatAt = "222222222222", at.Add(2*time.Second), second, at.Add(2*time.Second)
	b.LastError, b.ErrorAt, b.ReloadSeen = "line 3: unknown key \"x\"\nno tenants", at.Add(2*time.Second), second
	for _, r := range []store.CatalogReplica{a, b} {
		if err := s.ReportCatalog(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.CatalogReplicas(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0] != a || got[1] != b {
		t.Fatalf("replicas:\n%+v\nwant:\n%+v\n%+v", got, a, b)
	}
	if err := s.RemoveCatalogReplica(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if got, err := s.CatalogReplicas(ctx); err != nil || len(got) != 1 || got[0].ReplicaID != "b" {
		t.Errorf("after removing a: %+v, %v", got, err)
	}
	// b's heartbeat is at; a row silent since before the cutoff goes, a newer one stays.
	if n, err := s.PruneCatalogReplicas(ctx, at); err != nil || n != 0 {
		t.Errorf("prune before b's heartbeat: %d, %v; want 0", n, err)
	}
	if n, err := s.PruneCatalogReplicas(ctx, at.Add(time.Microsecond)); err != nil || n != 1 {
		t.Errorf("prune after b's heartbeat: %d, %v; want 1", n, err)
	}
	if got, err := s.CatalogReplicas(ctx); err != nil || len(got) != 0 {
		t.Errorf("after pruning: %+v, %v", got, err)
	}
}
