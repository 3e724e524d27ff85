package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/store"
)

func newGroup(t *testing.T, s store.Store, tenant, library, origin string, at time.Time) store.AssetGroup {
	t.Helper()
	g := store.AssetGroup{ID: fmt.Sprintf("grp_%d", seq.Add(1)), TenantID: tenant, Library: library, Name: "g",
		Origin: origin, Status: store.GroupActive, CreatedAt: at, UpdatedAt: at}
	ctx := t.Context()
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateAssetGroup(ctx, g) }); err != nil {
		t.Fatalf("create group: %v", err)
	}
	return g
}

func newAsset(t *testing.T, s store.Store, g store.AssetGroup, typ string, at time.Time) store.Asset {
	t.Helper()
	a := store.Asset{ID: fmt.Sprintf("asset_%d", seq.Add(1)), TenantID: g.TenantID, GroupID: g.ID, Library: g.Library,
		Name: "a", Type: typ, SourceURL: "https://cdn.example.com/x", Status: store.AssetProcessing, CreatedAt: at, UpdatedAt: at}
	ctx := t.Context()
	err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateAsset(ctx, a); err != nil {
			return err
		}
		return tx.EnqueueJob(ctx, store.Job{ID: ingestKind + ":" + a.ID, Kind: ingestKind, Ref: a.ID, TenantID: a.TenantID, RunAt: at, CreatedAt: at})
	})
	if err != nil {
		t.Fatalf("create asset: %v", err)
	}
	return a
}

// ingestKind is the job kind of asset processing (internal/asset.IngestKind): a Processing
// asset's attempts are read from its job.
const ingestKind = "asset.ingest"

func finishAsset(s store.Store, o store.AssetOutcome) error {
	ctx := context.Background()
	return s.Transact(ctx, func(tx store.Tx) error { return tx.FinishAsset(ctx, o) })
}

func testAssetGroups(t *testing.T, s store.Store) {
	ctx := t.Context()
	base := time.Now().UTC().Truncate(time.Microsecond)
	var acmeVirtual []store.AssetGroup
	for i := 0; i < 5; i++ {
		acmeVirtual = append(acmeVirtual, newGroup(t, s, "acme", store.LibraryVirtual, store.GroupOriginTenant, base.Add(time.Duration(i)*time.Second)))
	}
	human := newGroup(t, s, "acme", store.LibraryRealHuman, store.GroupOriginVerification, base)
	newGroup(t, s, "other", store.LibraryVirtual, store.GroupOriginCatalog, base)

	// Duplicate ids conflict.
	dup := acmeVirtual[0]
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateAssetGroup(ctx, dup) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate group id: %v", err)
	}
	got, err := s.AssetGroup(ctx, human.ID)
	if err != nil || got.TenantID != "acme" || got.Library != store.LibraryRealHuman || got.Origin != store.GroupOriginVerification ||
		got.Status != store.GroupActive || !got.CreatedAt.Equal(base) || got.AssetCount != 0 {
		t.Fatalf("read group: %+v %v", got, err)
	}
	if _, err := s.AssetGroup(ctx, "grp_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing group: %v", err)
	}

	// Pages are newest first; the total counts every match.
	page1, total, err := s.AssetGroups(ctx, store.AssetGroupQuery{TenantID: "acme", Library: store.LibraryVirtual, Limit: 2})
	if err != nil || total != 5 || len(page1) != 2 || page1[0].ID != acmeVirtual[4].ID || page1[1].ID != acmeVirtual[3].ID {
		t.Fatalf("page 1: %v total %d err %v", groupIDs(page1), total, err)
	}
	page3, _, _ := s.AssetGroups(ctx, store.AssetGroupQuery{TenantID: "acme", Library: store.LibraryVirtual, Offset: 4, Limit: 2})
	if len(page3) != 1 || page3[0].ID != acmeVirtual[0].ID {
		t.Fatalf("page 3: %v", groupIDs(page3))
	}
	all, total, _ := s.AssetGroups(ctx, store.AssetGroupQuery{})
	if total != 7 || len(all) != 7 {
		t.Errorf("all groups: %d of %d", len(all), total)
	}
	cat, total, _ := s.AssetGroups(ctx, store.AssetGroupQuery{Origin: store.GroupOriginCatalog})
	if total != 1 || cat[0].TenantID != "other" {
		t.Errorf("catalog groups: %+v", cat)
	}

	// Update writes name, description and status.
	g := acmeVirtual[1]
	g.Name, g.Description, g.Status, g.UpdatedAt = "renamed", "about", store.GroupRevoked, base.Add(time.Hour)
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.UpdateAssetGroup(ctx, g) }); err != nil {
		t.Fatal(err)
	}
	err = s.Transact(ctx, func(tx store.Tx) error {
		got, err := tx.AssetGroupForUpdate(ctx, g.ID)
		if err == nil && (got.Name != "renamed" || got.Description != "about" || got.Status != store.GroupRevoked || !got.UpdatedAt.Equal(g.UpdatedAt)) {
			err = fmt.Errorf("after update: %+v", got)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	missing := store.AssetGroup{ID: "grp_missing"}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.UpdateAssetGroup(ctx, missing) }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("update missing: %v", err)
	}

	// A group holding assets cannot be deleted; an empty one can, once.
	full := acmeVirtual[2]
	newAsset(t, s, full, "Image", base)
	if got, _ := s.AssetGroup(ctx, full.ID); got.AssetCount != 1 {
		t.Errorf("asset count %d", got.AssetCount)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.DeleteAssetGroup(ctx, full.ID) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("delete non-empty group: %v", err)
	}
	empty := acmeVirtual[3]
	for i, want := range []error{nil, store.ErrNotFound} {
		err := s.Transact(ctx, func(tx store.Tx) error { return tx.DeleteAssetGroup(ctx, empty.ID) })
		if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("delete empty group, try %d: %v", i, err)
		}
	}
}

func groupIDs(items []store.AssetGroup) []string {
	var out []string
	for _, g := range items {
		out = append(out, g.ID)
	}
	return out
}

func assetIDs(items []store.Asset) []string {
	var out []string
	for _, a := range items {
		out = append(out, a.ID)
	}
	return out
}

func testAssetsCreateListUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	base := time.Now().UTC().Truncate(time.Microsecond)
	g1 := newGroup(t, s, "acme", store.LibraryVirtual, store.GroupOriginTenant, base)
	g2 := newGroup(t, s, "acme", store.LibraryVirtual, store.GroupOriginTenant, base)
	h := newGroup(t, s, "acme", store.LibraryRealHuman, store.GroupOriginVerification, base)
	var in1 []store.Asset
	for i := 0; i < 3; i++ {
		in1 = append(in1, newAsset(t, s, g1, "Image", base.Add(time.Duration(i)*time.Second)))
	}
	vid := newAsset(t, s, g2, "Video", base.Add(10*time.Second))
	human := newAsset(t, s, h, "Video", base.Add(11*time.Second))
	newAsset(t, s, newGroup(t, s, "other", store.LibraryVirtual, store.GroupOriginTenant, base), "Image", base)

	got, err := s.Asset(ctx, vid.ID)
	if err != nil || got.GroupID != g2.ID || got.Type != "Video" || got.Status != store.AssetProcessing ||
		got.SourceURL != vid.SourceURL || got.Library != store.LibraryVirtual || !got.CreatedAt.Equal(vid.CreatedAt) {
		t.Fatalf("read asset: %+v %v", got, err)
	}
	if _, err := s.Asset(ctx, "asset_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing asset: %v", err)
	}
	// An asset needs an existing group.
	orphan := store.Asset{ID: "asset_orphan", TenantID: "acme", GroupID: "grp_missing", Library: store.LibraryVirtual,
		Name: "x", Type: "Image", SourceURL: "https://x.example.com/a", Status: store.AssetProcessing, CreatedAt: base, UpdatedAt: base}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateAsset(ctx, orphan) }); err == nil {
		t.Error("asset created in a group that does not exist")
	}

	cases := []struct {
		q     store.AssetQuery
		want  []string
		total int
	}{
		{store.AssetQuery{TenantID: "acme", Library: store.LibraryVirtual}, []string{vid.ID, in1[2].ID, in1[1].ID, in1[0].ID}, 4},
		{store.AssetQuery{TenantID: "acme", Library: store.LibraryVirtual, Limit: 2, Offset: 1}, []string{in1[2].ID, in1[1].ID}, 4},
		{store.AssetQuery{TenantID: "acme", Library: store.LibraryVirtual, GroupID: g1.ID}, []string{in1[2].ID, in1[1].ID, in1[0].ID}, 3},
		{store.AssetQuery{TenantID: "acme", Library: store.LibraryVirtual, Type: "Video"}, []string{vid.ID}, 1},
		{store.AssetQuery{TenantID: "acme", Library: store.LibraryRealHuman}, []string{human.ID}, 1},
		{store.AssetQuery{TenantID: "acme", Status: store.AssetActive}, nil, 0},
		{store.AssetQuery{TenantID: "nobody"}, nil, 0},
	}
	for i, c := range cases {
		list, total, err := s.Assets(ctx, c.q)
		if err != nil || total != c.total || fmt.Sprint(assetIDs(list)) != fmt.Sprint(c.want) {
			t.Errorf("case %d: %v total %d err %v; want %v total %d", i, assetIDs(list), total, err, c.want, c.total)
		}
	}

	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RenameAsset(ctx, vid.ID, "clip", base.Add(time.Hour)) }); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Asset(ctx, vid.ID); got.Name != "clip" || !got.UpdatedAt.Equal(base.Add(time.Hour)) {
		t.Errorf("renamed: %+v", got)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RenameAsset(ctx, "asset_missing", "x", base) }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("rename missing: %v", err)
	}
	for i, want := range []error{nil, store.ErrNotFound} {
		err := s.Transact(ctx, func(tx store.Tx) error { _, err := tx.DeleteAsset(ctx, vid.ID); return err })
		if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("delete asset, try %d: %v", i, err)
		}
	}
	// With its only asset gone, the group can be deleted.
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.DeleteAssetGroup(ctx, g2.ID) }); err != nil {
		t.Errorf("delete emptied group: %v", err)
	}
}

func testAssetClaimLeaseFinish(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now().UTC()
	g := newGroup(t, s, "acme", store.LibraryVirtual, store.GroupOriginTenant, now)
	a := newAsset(t, s, g, "Video", now)
	b := newAsset(t, s, g, "Image", now.Add(time.Second))
	if got, _ := s.Asset(ctx, a.ID); got.Attempts != 0 {
		t.Fatalf("a new asset counts %d attempts", got.Attempts)
	}
	// A Processing asset's attempts are those its job started.
	claimed, err := s.ClaimJobs(ctx, ingestKind, "", now.Add(2*time.Second), time.Minute, 10, nil)
	if err != nil || len(claimed) != 2 {
		t.Fatalf("claim: %+v %v", claimed, err)
	}
	if got, _ := s.Asset(ctx, a.ID); got.Attempts != 1 {
		t.Fatalf("claimed asset counts %d attempts, want 1", got.Attempts)
	}
	out := store.AssetOutcome{ID: a.ID, Status: store.AssetActive, BlobKey: "assets/a/original.mp4",
		ContentType: "video/mp4", Bytes: 1234, Duration: 2.125, Width: 320, Height: 180, Attempts: 1, At: now.Add(time.Second)}
	if err := finishAsset(s, out); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Asset(ctx, a.ID)
	if got.Status != store.AssetActive || got.BlobKey != out.BlobKey || got.Duration != 2.125 || got.Width != 320 ||
		got.Height != 180 || got.Bytes != 1234 || got.ContentType != "video/mp4" || got.Attempts != 1 {
		t.Fatalf("after finish: %+v", got)
	}
	// Finishing is a compare-and-set on Processing: a second finish changes nothing.
	if err := finishAsset(s, store.AssetOutcome{ID: a.ID, Status: store.AssetFailed, FailureCode: "x", At: now}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("second finish: %v", err)
	}
	if got, _ := s.Asset(ctx, a.ID); got.Status != store.AssetActive {
		t.Errorf("a second finish rewrote the asset: %+v", got)
	}
	// A finished asset keeps the attempts recorded with it, whatever its job does after.
	failed := store.AssetOutcome{ID: b.ID, Status: store.AssetFailed, FailureCode: "asset_type_mismatch",
		FailureReason: "The media is a video, not an image.", Attempts: 3, At: now}
	if err := finishAsset(s, failed); err != nil {
		t.Fatal(err)
	}
	for _, j := range claimed {
		if err := s.Transact(ctx, func(tx store.Tx) error {
			return tx.UpdateJob(ctx, store.JobUpdate{ID: j.ID, Token: j.Token, Done: true})
		}); err != nil {
			t.Fatal(err)
		}
	}
	if got, _ := s.Asset(ctx, b.ID); got.Status != store.AssetFailed || got.FailureCode != "asset_type_mismatch" || got.FailureReason == "" || got.Attempts != 3 {
		t.Errorf("failed asset: %+v", got)
	}
	// A deleted asset cannot be finished.
	c := newAsset(t, s, g, "Audio", now)
	var key string
	if err := s.Transact(ctx, func(tx store.Tx) (err error) { key, err = tx.DeleteAsset(ctx, c.ID); return err }); err != nil || key != "" {
		t.Fatal(err)
	}
	if err := finishAsset(s, store.AssetOutcome{ID: c.ID, Status: store.AssetActive, At: now}); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("finish of a deleted asset: %v", err)
	}
	// Deleting an Active asset hands back the key of its copy.
	if err := s.Transact(ctx, func(tx store.Tx) (err error) { key, err = tx.DeleteAsset(ctx, a.ID); return err }); err != nil || key != out.BlobKey {
		t.Errorf("delete active asset: key %q, %v", key, err)
	}
}

func testAssetConcurrentClaimersDisjoint(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now().UTC()
	g := newGroup(t, s, "acme", store.LibraryVirtual, store.GroupOriginTenant, now)
	const n = 12
	for i := 0; i < n; i++ {
		newAsset(t, s, g, "Image", now)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	claimed := 0
	var wg sync.WaitGroup
	// On PostgreSQL a claim locks its whole window (SKIP LOCKED), so claimers running at the
	// same moment often come back empty: each keeps claiming until every job is taken, within
	// a bounded number of tries. What is checked is that no job is claimed twice.
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				got, err := s.ClaimJobs(ctx, ingestKind, "", now, time.Minute, 2, nil)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				for _, c := range got {
					seen[c.Ref]++
				}
				claimed += len(got)
				done := claimed >= n
				mu.Unlock()
				if done {
					return
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != n {
		t.Errorf("claimed %d distinct assets, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("asset %s claimed %d times", id, k)
		}
	}
}

func testVerifySessions(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Now().UTC().Truncate(time.Microsecond)
	hash := sha256.Sum256([]byte(fmt.Sprintf("vt_%d", seq.Add(1))))
	v := store.VerifySession{ID: fmt.Sprintf("vs_%d", seq.Add(1)), TokenHash: hash[:], TenantID: "acme", KeyID: "key_1",
		CallbackURL: "https://hooks.example.com/v", Status: store.VerifyPending, CreatedAt: now, ExpiresAt: now.Add(15 * time.Minute)}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateVerifySession(ctx, v) }); err != nil {
		t.Fatal(err)
	}
	dup := v
	dup.ID = "vs_other"
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateVerifySession(ctx, dup) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate token hash: %v", err)
	}
	got, err := s.VerifySessionByToken(ctx, hash[:])
	if err != nil || got.ID != v.ID || got.Status != store.VerifyPending || !got.ExpiresAt.Equal(v.ExpiresAt) ||
		!got.StartedAt.IsZero() || got.CallbackState != "" || got.CallbackURL != v.CallbackURL {
		t.Fatalf("by token: %+v %v", got, err)
	}
	if _, err := s.VerifySessionByToken(ctx, []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown token: %v", err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.StartVerifySession(ctx, v.ID, now.Add(time.Second)) }); err != nil {
		t.Fatal(err)
	}
	g := newGroup(t, s, "acme", store.LibraryRealHuman, store.GroupOriginVerification, now)
	body := []byte(`{"Result":"Passed"}`)
	fin := now.Add(5 * time.Second)
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.FinishVerifySession(ctx, v.ID, store.VerifyPassed, g.ID, body, fin)
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.FinishVerifySession(ctx, v.ID, store.VerifyDeclined, "", nil, fin)
	}); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second finish: %v", err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.StartVerifySession(ctx, v.ID, fin) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("start after finish: %v", err)
	}
	got, _ = s.VerifySession(ctx, v.ID)
	if got.Status != store.VerifyPassed || got.GroupID != g.ID || string(got.CallbackBody) != string(body) ||
		got.CallbackState != store.CallbackPending || !got.FinishedAt.Equal(fin) || !got.StartedAt.Equal(now.Add(time.Second)) {
		t.Fatalf("finished: %+v", got)
	}
	for i, want := range []error{nil, store.ErrConflict} {
		err := s.Transact(ctx, func(tx store.Tx) error { return tx.RedeemVerifySession(ctx, v.ID, fin) })
		if (want == nil && err != nil) || (want != nil && !errors.Is(err, want)) {
			t.Errorf("redeem, try %d: %v", i, err)
		}
	}

	// The callback is pending; each attempt is recorded while it stays pending, and once
	// delivered it records nothing more.
	finishCB := func(state string, attempts int) error {
		return s.Transact(ctx, func(tx store.Tx) error { return tx.FinishCallback(ctx, v.ID, state, attempts) })
	}
	if err := finishCB(store.CallbackPending, 1); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.VerifySession(ctx, v.ID); got.CallbackState != store.CallbackPending || got.CallbackAttempts != 1 {
		t.Errorf("after a failed attempt: %+v", got)
	}
	if err := finishCB(store.CallbackDelivered, 2); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.VerifySession(ctx, v.ID); got.CallbackState != store.CallbackDelivered || got.CallbackAttempts != 2 {
		t.Errorf("delivered: %+v", got)
	}
	if err := finishCB(store.CallbackFailed, 3); !errors.Is(err, store.ErrLeaseLost) {
		t.Errorf("a delivered callback was rewritten: %v", err)
	}

	// A session without a callback URL never owes one.
	h2 := sha256.Sum256([]byte(fmt.Sprintf("vt_%d", seq.Add(1))))
	w := store.VerifySession{ID: fmt.Sprintf("vs_%d", seq.Add(1)), TokenHash: h2[:], TenantID: "acme", KeyID: "key_1",
		Status: store.VerifyPending, CreatedAt: now, ExpiresAt: now.Add(time.Minute)}
	err = s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateVerifySession(ctx, w); err != nil {
			return err
		}
		return tx.FinishVerifySession(ctx, w.ID, store.VerifyDeclined, "", []byte(`{}`), now)
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.VerifySession(ctx, w.ID); got.Status != store.VerifyDeclined || got.CallbackState != "" {
		t.Errorf("declined without callback: %+v", got)
	}
}
