package httpapi

import (
	"context"
	"io"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

func TestKeyCacheHonoursRevocationAfterTTL(t *testing.T) {
	t.Parallel()
	db := testkit.SQLite(t)
	clock := testkit.NewClock(time.Now())
	s := New(Config{Store: db, Catalog: catalog.Demo(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock.Now, KeyCacheTTL: 2 * time.Second})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	e := &testEnv{t: t, srv: s, ts: ts, store: db}
	secret, k := e.newKey("demo", 0, false)
	auth := map[string]string{"Authorization": "Bearer " + secret}
	if r := e.do("GET", "/v1/billing/balance", auth, ""); r.status != 200 {
		t.Fatalf("first: %d", r.status)
	}
	ctx := t.Context()
	if err := db.Transact(ctx, func(tx store.Tx) error { return tx.RevokeKey(ctx, k.ID, time.Now()) }); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/billing/balance", auth, ""); r.status != 200 {
		t.Fatalf("within the TTL the cached key still answers: %d", r.status)
	}
	clock.Advance(3 * time.Second)
	checkEnvelope(t, e.do("GET", "/v1/billing/balance", auth, ""), 401, "authentication_error", "revoked_api_key")
	// Unknown keys are never cached as valid.
	checkEnvelope(t, e.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer mg_nope"}, ""), 401, "authentication_error", "invalid_api_key")
}

// countingStore counts key lookups.
type countingStore struct {
	Store
	lookups atomic.Int64
}

func (c *countingStore) KeyByHash(ctx context.Context, hash []byte) (store.Key, error) {
	c.lookups.Add(1)
	return c.Store.KeyByHash(ctx, hash)
}

// A token that cannot be a key is refused without a database read; a well-formed unknown
// one costs one.
func TestMalformedKeysAreRefusedWithoutALookup(t *testing.T) {
	t.Parallel()
	db := testkit.SQLite(t)
	cs := &countingStore{Store: db}
	s := New(Config{Store: cs, Catalog: catalog.Demo(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	e := &testEnv{t: t, srv: s, ts: ts, store: db}
	for _, tok := range []string{"mg_nope", "sk-proj-abc", strings.Repeat("a", 500), "mg_" + strings.Repeat("A", 40)} {
		checkEnvelope(t, e.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer " + tok}, ""), 401, "authentication_error", "invalid_api_key")
	}
	if n := cs.lookups.Load(); n != 0 {
		t.Fatalf("%d key lookups for malformed tokens, want 0", n)
	}
	checkEnvelope(t, e.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer mg_" + strings.Repeat("a", 40)}, ""), 401, "authentication_error", "invalid_api_key")
	if n := cs.lookups.Load(); n != 1 {
		t.Fatalf("%d key lookups for one well-formed unknown key, want 1", n)
	}
}
