package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/store"
)

func assetsInFlight(t *testing.T, s store.Store, k store.Key) store.InFlight {
	t.Helper()
	var f store.InFlight
	err := s.Transact(context.Background(), func(tx store.Tx) (err error) {
		f, err = tx.AssetsInFlight(context.Background(), k.ID, k.TenantID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// keyAsset is newAsset created by key k (newAsset's assets have no key).
func keyAsset(t *testing.T, s store.Store, g store.AssetGroup, k store.Key, status string) store.Asset {
	t.Helper()
	ctx := t.Context()
	a := store.Asset{ID: fmt.Sprintf("asset_%d", seq.Add(1)), TenantID: g.TenantID, KeyID: k.ID, GroupID: g.ID,
		Library: g.Library, Name: "a", Type: "Image", SourceURL: "https://cdn.example.com/x", Status: status,
		CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateAsset(ctx, a) }); err != nil {
		t.Fatalf("create asset: %v", err)
	}
	return a
}

func deleteAsset(s store.Store, id string) error {
	ctx := context.Background()
	return s.Transact(ctx, func(tx store.Tx) error { _, err := tx.DeleteAsset(ctx, id); return err })
}

// Every way an ingestion ends (Active, Failed — also the give-up after the last attempt —
// and a delete while Processing) uncounts it exactly once; nothing else moves the counts.
func testInFlightAssetsFollowCreateFinishAndDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	a1, a2, b := newKey(t, s, "acme", false), newKey(t, s, "acme", false), newKey(t, s, "bolt", false)
	ga, gb := newGroup(t, s, "acme", store.LibraryVirtual, store.GroupOriginTenant, time.Now()),
		newGroup(t, s, "bolt", store.LibraryVirtual, store.GroupOriginTenant, time.Now())
	wantInFlight(t, "no assets", assetsInFlight(t, s, a1), 0, 0)
	var mine []store.Asset
	for range 4 {
		mine = append(mine, keyAsset(t, s, ga, a1, store.AssetProcessing))
	}
	keyAsset(t, s, ga, a2, store.AssetProcessing)
	keyAsset(t, s, gb, b, store.AssetProcessing)
	keyAsset(t, s, ga, a1, store.AssetFailed) // not Processing: no ingestion to count
	wantInFlight(t, "created", assetsInFlight(t, s, a1), 4, 5)
	wantInFlight(t, "other key of the tenant", assetsInFlight(t, s, a2), 1, 5)
	wantInFlight(t, "other tenant", assetsInFlight(t, s, b), 1, 1)
	wantInFlight(t, "video tasks are counted apart", tasksInFlight(t, s, a1), 0, 0)
	wantInFlight(t, "speech is counted apart", speechesInFlight(t, s, a1), 0, 0)

	// A create that rolls back counts nothing.
	boom := errors.New("boom")
	if err := s.Transact(ctx, func(tx store.Tx) error {
		a := mine[0]
		a.ID = fmt.Sprintf("asset_%d", seq.Add(1))
		if err := tx.CreateAsset(ctx, a); err != nil {
			return err
		}
		if f, err := tx.AssetsInFlight(ctx, a1.ID, a1.TenantID); err != nil || f.Key != 5 || f.Tenant != 6 {
			t.Errorf("inside the creating transaction: %+v %v, want 5 and 6", f, err)
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	wantInFlight(t, "after a rollback", assetsInFlight(t, s, a1), 4, 5)

	end := func(o store.AssetOutcome) error { o.At = time.Now(); return finishAsset(s, o) }
	if err := end(store.AssetOutcome{ID: mine[0].ID, Status: store.AssetActive, BlobKey: "assets/x.png"}); err != nil {
		t.Fatal(err)
	}
	wantInFlight(t, "active", assetsInFlight(t, s, a1), 3, 4)
	if err := end(store.AssetOutcome{ID: mine[1].ID, Status: store.AssetFailed, FailureCode: "source_unreachable"}); err != nil {
		t.Fatal(err)
	}
	wantInFlight(t, "failed", assetsInFlight(t, s, a1), 2, 3)
	if err := deleteAsset(s, mine[2].ID); err != nil {
		t.Fatal(err)
	}
	wantInFlight(t, "deleted while processing", assetsInFlight(t, s, a1), 1, 2)

	// Ends that find the ingestion already over move nothing: a second finish, a finish of a
	// deleted asset, a delete of a finished one.
	if err := end(store.AssetOutcome{ID: mine[0].ID, Status: store.AssetFailed}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("second finish: %v", err)
	}
	if err := end(store.AssetOutcome{ID: mine[2].ID, Status: store.AssetActive}); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("finish of a deleted asset: %v", err)
	}
	if err := deleteAsset(s, mine[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := deleteAsset(s, mine[2].ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	wantInFlight(t, "ends of ended ingestions", assetsInFlight(t, s, a1), 1, 2)
	wantInFlight(t, "the other tenant", assetsInFlight(t, s, b), 1, 1)
}

// admitAsset creates an asset and its ingestion job for key k in one transaction and keeps
// them only if the key then has no more than limit ingestions in flight: how the service
// admits an asset.
func admitAsset(ctx context.Context, s store.Store, g store.AssetGroup, k store.Key, limit int) (store.Asset, error) {
	now := time.Now()
	a := store.Asset{ID: fmt.Sprintf("asset_%d", seq.Add(1)), TenantID: g.TenantID, KeyID: k.ID, GroupID: g.ID,
		Library: g.Library, Name: "a", Type: "Image", SourceURL: "https://cdn.example.com/x",
		Status: store.AssetProcessing, CreatedAt: now, UpdatedAt: now}
	err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateAsset(ctx, a); err != nil {
			return err
		}
		if err := tx.EnqueueJob(ctx, store.Job{ID: ingestKind + ":" + a.ID, Kind: ingestKind, Ref: a.ID,
			TenantID: a.TenantID, RunAt: now, CreatedAt: now}); err != nil {
			return err
		}
		f, err := tx.AssetsInFlight(ctx, k.ID, k.TenantID)
		if err != nil {
			return err
		}
		if f.Key > limit {
			return errOverLimit
		}
		return nil
	})
	return a, err
}

// Concurrent creates of one key against a limit admit exactly the limit, a refused create
// leaves no asset, and the counts return to 0 once every admitted ingestion has ended.
func testInFlightAssetLimitHoldsUnderConcurrentCreates(t *testing.T, s store.Store) {
	const limit, attempts = 5, 40
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	k := newKey(t, s, "acme", false)
	g := newGroup(t, s, "acme", store.LibraryVirtual, store.GroupOriginTenant, time.Now())
	var refused atomic.Int64
	var mu sync.Mutex
	var admitted []store.Asset
	var wg sync.WaitGroup
	for range attempts {
		wg.Go(func() {
			a, err := admitAsset(ctx, s, g, k, limit)
			switch {
			case err == nil:
				mu.Lock()
				admitted = append(admitted, a)
				mu.Unlock()
			case errors.Is(err, errOverLimit):
				refused.Add(1)
			default:
				t.Errorf("admit: %v", err)
			}
		})
	}
	wg.Wait()
	if len(admitted) != limit || refused.Load() != attempts-limit {
		t.Fatalf("admitted %d and refused %d of %d concurrent creates, want %d admitted", len(admitted), refused.Load(), attempts, limit)
	}
	wantInFlight(t, "admitted", assetsInFlight(t, s, k), limit, limit)
	if _, total, err := s.Assets(ctx, store.AssetQuery{TenantID: "acme"}); err != nil || total != limit {
		t.Fatalf("%d assets stored (%v), want only the %d admitted", total, err, limit)
	}

	// Each admitted ingestion ends a different way.
	at := time.Now()
	ends := []func(id string) error{
		func(id string) error {
			return finishAsset(s, store.AssetOutcome{ID: id, Status: store.AssetActive, At: at})
		},
		func(id string) error {
			return finishAsset(s, store.AssetOutcome{ID: id, Status: store.AssetFailed, FailureCode: "source_unreachable", At: at})
		},
		func(id string) error { return deleteAsset(s, id) },
	}
	for i, a := range admitted {
		if err := ends[i%len(ends)](a.ID); err != nil {
			t.Fatalf("end %s: %v", a.ID, err)
		}
	}
	wantInFlight(t, "all ended", assetsInFlight(t, s, k), 0, 0)
	if _, err := admitAsset(ctx, s, g, k, limit); err != nil {
		t.Fatalf("a create after the ingestions ended: %v", err)
	}
}
