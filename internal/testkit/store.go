package testkit

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/store/sqlite"
)

// SQLite is a fresh SQLite store in the test's temporary directory, closed when the test ends.
func SQLite(t testing.TB) store.Store {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatalf("open the test store: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// Key creates a key for tenant billing in USD (as every test tenant does), credited with
// credit when it is positive, and returns its secret and record.
func Key(t testing.TB, db store.Store, tenant string, credit money.Micros, unlimited bool) (string, store.Key) {
	t.Helper()
	secret, display, hash := keys.Generate()
	k := store.Key{ID: idgen.New("key"), TenantID: tenant, Prefix: display, Hash: hash, Unlimited: unlimited, CreatedAt: time.Now()}
	ctx := context.Background()
	err := db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateKey(ctx, k, "USD"); err != nil {
			return err
		}
		if credit > 0 {
			_, err := billing.Credit(ctx, tx, k, "USD", credit, "test", time.Now())
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("create a test key: %v", err)
	}
	return secret, k
}
