package testkit

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
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
// It starts as a copy of a database this process migrated once: migrating takes tens of
// times as long as opening a migrated file, and a test binary opens dozens.
func SQLite(t testing.TB) store.Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	SQLiteFile(t, path)
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("open the test store: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// SQLiteFile writes a migrated, empty SQLite database to path (its directory made if
// missing), for code that opens the database itself, as serve does with its data directory.
func SQLiteFile(t testing.TB, path string) {
	t.Helper()
	tmpl, err := migrated()
	if err != nil {
		t.Fatalf("migrate the template store: %v", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatalf("copy the template store: %v", err)
	}
	if err := os.WriteFile(path, tmpl, 0o600); err != nil {
		t.Fatalf("copy the template store: %v", err)
	}
}

// template is the bytes of a migrated, empty database, made once per test process.
var template struct {
	once sync.Once
	b    []byte
	err  error
}

func migrated() ([]byte, error) {
	template.once.Do(func() { template.b, template.err = migrate() })
	return template.b, template.err
}

// migrate runs the migrations on a database in a directory of its own and returns the file
// with its write-ahead log folded in: one file, still in WAL mode, which sqlite.Open opens in
// a few milliseconds (migrating took about a hundred).
func migrate() ([]byte, error) {
	dir, err := os.MkdirTemp("", "mediagen-testkit-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "template.db")
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		return nil, err
	}
	if err := db.Close(); err != nil {
		return nil, fmt.Errorf("close: %w", err)
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return nil, err
	}
	_, err = raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	if cerr := raw.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("fold the log in: %w", err)
	}
	if _, err := os.Stat(path + "-wal"); err == nil {
		return nil, errors.New("the template kept a write-ahead log")
	}
	return os.ReadFile(path)
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
