package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"mediagen/internal/store"
)

// testAssetUpstream: an asset registered in an upstream library (kind ark_assets) keeps its
// account, vendor id and vendor status; its group binds to one vendor group, compare-and-swap,
// and a vendor group is never bound to two groups; the asset counts in flight while it waits
// for the vendor and stops when the vendor's answer ends it.
func testAssetUpstream(t *testing.T, s store.Store) {
	ctx := t.Context()
	base := time.Now().UTC().Truncate(time.Microsecond)
	tenant := fmt.Sprintf("up_%d", seq.Add(1))
	g := newGroup(t, s, tenant, store.LibraryVirtual, store.GroupOriginTenant, base)
	other := newGroup(t, s, tenant+"_other", store.LibraryVirtual, store.GroupOriginTenant, base)
	tx := func(fn func(store.Tx) error) error { return s.Transact(ctx, fn) }

	if err := tx(func(tx store.Tx) error { return tx.SetAssetGroupUpstream(ctx, g.ID, "", "", "lib", "group-1") }); err != nil {
		t.Fatalf("bind group: %v", err)
	}
	if err := tx(func(tx store.Tx) error { return tx.SetAssetGroupUpstream(ctx, g.ID, "", "", "lib", "group-2") }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("a second first binding: %v, want ErrConflict", err)
	}
	if err := tx(func(tx store.Tx) error { return tx.SetAssetGroupUpstream(ctx, other.ID, "", "", "lib", "group-1") }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("another group bound to the same vendor group: %v, want ErrConflict", err)
	}
	got, err := s.AssetGroup(ctx, g.ID)
	if err != nil || got.Upstream != "lib" || got.UpstreamID != "group-1" {
		t.Fatalf("read bound group: %+v %v", got, err)
	}
	if byUp, err := s.AssetGroupByUpstream(ctx, "lib", "group-1"); err != nil || byUp.ID != g.ID {
		t.Errorf("group by vendor id: %+v %v", byUp, err)
	}
	if _, err := s.AssetGroupByUpstream(ctx, "lib", "group-missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown vendor group: %v", err)
	}

	a := store.Asset{ID: fmt.Sprintf("asset_%d", seq.Add(1)), TenantID: tenant, KeyID: "key_" + tenant, GroupID: g.ID,
		Library: store.LibraryVirtual, Name: "a", Type: "Image", SourceURL: "https://cdn.example.com/a.png",
		Status: store.AssetProcessing, Upstream: "lib", CreatedAt: base, UpdatedAt: base}
	if err := tx(func(tx store.Tx) error { return tx.CreateAsset(ctx, a) }); err != nil {
		t.Fatal(err)
	}
	inFlight := func() int {
		var n store.InFlight
		if err := tx(func(tx store.Tx) (err error) {
			n, err = tx.InFlight(ctx, store.InFlightAssets, a.KeyID, tenant)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return n.Key
	}
	// The copy is stored; the asset waits for the vendor, still Processing and in flight.
	if err := finishAsset(s, store.AssetOutcome{ID: a.ID, Status: store.AssetProcessing, BlobKey: "assets/" + a.ID + "/x.png",
		ContentType: "image/png", Bytes: 10, Width: 800, Height: 600, Attempts: 1, At: base}); err != nil {
		t.Fatalf("store the copy: %v", err)
	}
	if n := inFlight(); n != 1 {
		t.Errorf("in flight while waiting for the vendor: %d, want 1", n)
	}
	if err := tx(func(tx store.Tx) error {
		return tx.SetAssetUpstream(ctx, store.AssetUpstream{ID: a.ID, UpstreamID: "asset-v1", UpstreamStatus: "Processing", At: base})
	}); err != nil {
		t.Fatalf("record the vendor id: %v", err)
	}
	got2, err := s.Asset(ctx, a.ID)
	if err != nil || got2.Status != store.AssetProcessing || got2.Upstream != "lib" || got2.UpstreamID != "asset-v1" ||
		got2.UpstreamStatus != "Processing" || got2.BlobKey == "" || got2.Width != 800 {
		t.Fatalf("asset waiting for the vendor: %+v %v", got2, err)
	}
	if err := tx(func(tx store.Tx) error {
		return tx.SetAssetUpstream(ctx, store.AssetUpstream{ID: a.ID, UpstreamID: "asset-v1", UpstreamStatus: "Active", Status: store.AssetActive, At: base})
	}); err != nil {
		t.Fatalf("end Active: %v", err)
	}
	if n := inFlight(); n != 0 {
		t.Errorf("in flight after the vendor's Active: %d, want 0", n)
	}
	if got3, _ := s.Asset(ctx, a.ID); got3.Status != store.AssetActive || got3.UpstreamStatus != "Active" {
		t.Errorf("after Active: %+v", got3)
	}
	if err := tx(func(tx store.Tx) error {
		return tx.SetAssetUpstream(ctx, store.AssetUpstream{ID: a.ID, Status: store.AssetFailed, At: base})
	}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a second end: %v, want ErrLeaseLost", err)
	}

	v := store.VerifySession{ID: fmt.Sprintf("vs_%d", seq.Add(1)), TokenHash: []byte(fmt.Sprintf("hash-%d-%s", seq.Add(1), tenant)),
		TenantID: tenant, KeyID: "k", Status: store.VerifyPending, CreatedAt: base, ExpiresAt: base.Add(time.Hour)}
	if err := tx(func(tx store.Tx) error { return tx.CreateVerifySession(ctx, v) }); err != nil {
		t.Fatal(err)
	}
	if err := tx(func(tx store.Tx) error { return tx.SetVerifyUpstream(ctx, v.ID, "lib", "byted-1") }); err != nil {
		t.Fatal(err)
	}
	if gv, err := s.VerifySession(context.Background(), v.ID); err != nil || gv.Upstream != "lib" || gv.UpstreamToken != "byted-1" {
		t.Errorf("session upstream: %+v %v", gv, err)
	}
}
