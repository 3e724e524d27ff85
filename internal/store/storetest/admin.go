package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/store"
)

// The operator plane's store methods: admin tokens, the audit log, paged key listings and
// idempotent answers.

func testAdminTokens(t *testing.T, s store.Store) {
	ctx := t.Context()
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	tok := store.AdminToken{ID: "adt_1", Name: "alice", Role: "owner", Prefix: "mga_abcdef", Hash: []byte("hash-1"),
		CreatedBy: "cli:root", CreatedAt: at, ExpiresAt: at.Add(time.Hour)}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateAdminToken(ctx, tok) }); err != nil {
		t.Fatal(err)
	}
	dup := tok
	dup.ID = "adt_2"
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateAdminToken(ctx, dup) }); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("same hash again: %v, want ErrConflict", err)
	}
	got, err := s.AdminTokenByHash(ctx, []byte("hash-1"))
	if err != nil || got.ID != "adt_1" || got.Role != "owner" || !got.ExpiresAt.Equal(tok.ExpiresAt) || got.Revoked() || got.CreatedBy != "cli:root" {
		t.Fatalf("by hash = %+v, %v", got, err)
	}
	if !got.Expired(at.Add(time.Hour)) || got.Expired(at.Add(time.Hour-time.Microsecond)) {
		t.Error("expiry is not at ExpiresAt")
	}
	if _, err := s.AdminTokenByHash(ctx, []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown hash: %v", err)
	}
	revokeAt := at.Add(time.Minute)
	for range 2 {
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RevokeAdminToken(ctx, "adt_1", revokeAt) }); err != nil {
			t.Fatal(err)
		}
		revokeAt = revokeAt.Add(time.Minute) // the second revocation keeps the first time
	}
	got, err = s.AdminToken(ctx, "adt_1")
	if err != nil || !got.RevokedAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("after revoke = %+v, %v", got, err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RevokeAdminToken(ctx, "adt_none", at) }); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoke unknown: %v", err)
	}
	err = s.Transact(ctx, func(tx store.Tx) error {
		g, err := tx.AdminTokenForUpdate(ctx, "adt_1")
		if err != nil || g.Name != "alice" {
			return fmt.Errorf("for update = %+v, %w", g, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	list, err := s.AdminTokens(ctx)
	if err != nil || len(list) != 1 || list[0].ID != "adt_1" {
		t.Fatalf("list = %+v, %v", list, err)
	}
}

func testAdminAudit(t *testing.T, s store.Store) {
	ctx := t.Context()
	at := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	entry := func(i int, actor, action, target string) store.AuditEntry {
		return store.AuditEntry{ID: fmt.Sprintf("aud_%03d", i), ActorID: actor, ActorName: "n", ActorRole: "owner", Via: "api",
			Action: action, TargetType: "key", TargetID: target, After: []byte(`{"id":"` + target + `"}`),
			RequestID: "req", RemoteAddr: "127.0.0.1:1", CreatedAt: at.Add(time.Duration(i) * time.Minute)}
	}
	all := []store.AuditEntry{entry(1, "adt_a", "key.create", "key_1"), entry(2, "adt_b", "key.revoke", "key_1"),
		entry(3, "cli", "credit.create", "key_2"), entry(4, "adt_a", "key.create", "key_3")}
	all[1].Before = []byte(`{"id":"key_1","state":"active"}`)
	all[1].RequestID, all[1].CallerRequestID = "req_service0000000000000000", "client's id; DROP TABLE"
	if err := s.Transact(ctx, func(tx store.Tx) error {
		for _, e := range all {
			if err := tx.AppendAudit(ctx, e); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("change failed")
	if err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.AppendAudit(ctx, entry(5, "adt_a", "key.create", "key_9")); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	ids := func(es []store.AuditEntry) string {
		out := ""
		for _, e := range es {
			out += e.ID + " "
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    store.AuditQuery
		want string
	}{
		{"every entry, newest first; the failed change left none", store.AuditQuery{}, "aud_004 aud_003 aud_002 aud_001 "},
		{"by actor", store.AuditQuery{ActorID: "adt_a"}, "aud_004 aud_001 "},
		{"by action", store.AuditQuery{Action: "key.revoke"}, "aud_002 "},
		{"by target", store.AuditQuery{TargetType: "key", TargetID: "key_1"}, "aud_002 aud_001 "},
		{"by time range", store.AuditQuery{Since: at.Add(2 * time.Minute), Until: at.Add(4 * time.Minute)}, "aud_003 aud_002 "},
		{"a page after a cursor", store.AuditQuery{Before: "aud_003", Limit: 1}, "aud_002 "},
	} {
		got, err := s.Audit(ctx, tc.q)
		if err != nil || ids(got) != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, ids(got), err, tc.want)
		}
	}
	got, err := s.Audit(ctx, store.AuditQuery{Action: "key.revoke"})
	if err != nil || len(got) != 1 || string(got[0].Before) != string(all[1].Before) || string(got[0].After) != `{"id":"key_1"}` ||
		!got[0].CreatedAt.Equal(all[1].CreatedAt) || got[0].RemoteAddr != "127.0.0.1:1" ||
		got[0].RequestID != all[1].RequestID || got[0].CallerRequestID != all[1].CallerRequestID {
		t.Errorf("entry read back = %+v, %v", got, err)
	}
	got, _ = s.Audit(ctx, store.AuditQuery{Action: "key.create", Limit: 1})
	if len(got) != 1 || got[0].Before != nil || got[0].CallerRequestID != "" {
		t.Errorf("a create's before, and a caller's request id never sent, must read back as absent: %+v", got)
	}
}

// keyPageExpiry is when testAdminKeysPage's "test" key expires.
var keyPageExpiry = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func testAdminKeysPage(t *testing.T, s store.Store) {
	ctx := t.Context()
	var made []store.Key
	for i, spec := range []struct{ tenant, name string }{{"acme", "prod-a"}, {"acme", "prod-b"}, {"acme", "test"}, {"other", "prod-c"}, {"other", "été-1"}} {
		k := store.Key{ID: fmt.Sprintf("key_page_%d", i), TenantID: spec.tenant, Name: spec.name, Prefix: "mg_x",
			Hash: []byte(fmt.Sprintf("page-hash-%d", i)), CreatedAt: time.Now()}
		if i == 2 {
			k.ExpiresAt = keyPageExpiry
		}
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateKey(ctx, k, "USD") }); err != nil {
			t.Fatal(err)
		}
		made = append(made, k)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RevokeKey(ctx, made[1].ID, time.Now()) }); err != nil {
		t.Fatal(err)
	}
	ids := func(ks []store.Key) string {
		out := ""
		for _, k := range ks {
			out += k.ID + " "
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    store.KeyQuery
		want string
	}{
		{"every key in id order", store.KeyQuery{}, "key_page_0 key_page_1 key_page_2 key_page_3 key_page_4 "},
		{"one tenant", store.KeyQuery{TenantID: "other"}, "key_page_3 key_page_4 "},
		{"a prefix of characters, not bytes", store.KeyQuery{NamePrefix: "ét"}, "key_page_4 "},
		{"active before an expiry", store.KeyQuery{TenantID: "acme", State: store.KeyStateActive, Now: keyPageExpiry.Add(-time.Second)}, "key_page_0 key_page_2 "},
		{"active at an expiry", store.KeyQuery{TenantID: "acme", State: store.KeyStateActive, Now: keyPageExpiry}, "key_page_0 "},
		{"expired at its expiry", store.KeyQuery{State: store.KeyStateExpired, Now: keyPageExpiry}, "key_page_2 "},
		{"not yet expired", store.KeyQuery{State: store.KeyStateExpired, Now: keyPageExpiry.Add(-time.Second)}, ""},
		{"revoked", store.KeyQuery{State: store.KeyStateRevoked, Now: keyPageExpiry}, "key_page_1 "},
		{"name prefix", store.KeyQuery{NamePrefix: "prod-"}, "key_page_0 key_page_1 key_page_3 "},
		{"name prefix with LIKE's wildcards matches literally", store.KeyQuery{NamePrefix: "pro%"}, ""},
		{"a page after a cursor", store.KeyQuery{After: "key_page_0", Limit: 2}, "key_page_1 key_page_2 "},
	} {
		got, err := s.KeysPage(ctx, tc.q)
		if err != nil || ids(got) != tc.want {
			t.Errorf("%s: %q, %v; want %q", tc.name, ids(got), err, tc.want)
		}
	}
}

func testAdminIdempotentAnswers(t *testing.T, s store.Store) {
	ctx := t.Context()
	now := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	ans := func(key, body string, at time.Time) store.IdempotentAnswer {
		return store.IdempotentAnswer{TokenID: "adt_1", Key: key, RequestHash: []byte("h-" + body), Status: 201, Body: []byte(body),
			CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour)}
	}
	put := func(a store.IdempotentAnswer, at time.Time) error {
		return s.Transact(ctx, func(tx store.Tx) error { return tx.PutIdempotentAnswer(ctx, a, at) })
	}
	if err := put(ans("k1", "first", now), now); err != nil {
		t.Fatal(err)
	}
	if err := put(ans("k1", "second", now), now); !errors.Is(err, store.ErrConflict) {
		t.Fatalf("a live answer again: %v, want ErrConflict", err)
	}
	got, err := s.IdempotentAnswer(ctx, "adt_1", "k1", now)
	if err != nil || string(got.Body) != "first" || got.Status != 201 || string(got.RequestHash) != "h-first" {
		t.Fatalf("read = %+v, %v", got, err)
	}
	if _, err := s.IdempotentAnswer(ctx, "adt_2", "k1", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("another token's key: %v", err)
	}
	later := now.Add(24 * time.Hour)
	if _, err := s.IdempotentAnswer(ctx, "adt_1", "k1", later); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("expired answer still read: %v", err)
	}
	if err := put(ans("k1", "after expiry", later), later); err != nil {
		t.Fatalf("an expired answer is replaced: %v", err)
	}
	if got, err := s.IdempotentAnswer(ctx, "adt_1", "k1", later); err != nil || string(got.Body) != "after expiry" {
		t.Errorf("replaced = %+v, %v", got, err)
	}
	// A later write sweeps expired answers: k0, stored at now, is gone once a write after its
	// expiry ran, even for a reader whose clock says it is still live.
	if err := put(ans("k0", "old", now), now); err != nil {
		t.Fatal(err)
	}
	if err := put(ans("k-sweeper", "x", later.Add(time.Hour)), later.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.IdempotentAnswer(ctx, "adt_1", "k0", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("an expired answer was not swept: %v", err)
	}
	// A failed write leaves no answer.
	boom := errors.New("change failed")
	if err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.PutIdempotentAnswer(ctx, ans("k2", "x", now), now); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if _, err := s.IdempotentAnswer(ctx, "adt_1", "k2", now); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a rolled back answer was kept: %v", err)
	}
	// Concurrent duplicates: exactly one stores its answer.
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := put(ans("k3", fmt.Sprint(i), now), now)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				won++
			case !errors.Is(err, store.ErrConflict):
				t.Errorf("concurrent put: %v", err)
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d concurrent puts stored, want 1", won)
	}
}
