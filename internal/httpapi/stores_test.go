package httpapi

import (
	"context"
	"testing"

	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/testkit"
)

// The tests' PostgreSQL databases are clones of one the migrations made once (pgtest).
func init() { pgtest.UseTemplate(postgres.MigrationsDigest(), postgres.Migrate) }

// testDrivers are the store drivers a test runs the API on when the answer may depend on the
// database: PostgreSQL refuses text that SQLite stores (NUL, invalid UTF-8), for one.
var testDrivers = []string{"sqlite", "postgres"}

// openTestStore opens a fresh, migrated store of the driver, closed when the test ends:
// SQLite in a temporary directory, PostgreSQL in a schema of its own on the test server
// (skipped when that server is unreachable, except under CI=true; see pgtest).
func openTestStore(t testing.TB, driver string) store.Store {
	t.Helper()
	var (
		db  store.Store
		err error
	)
	switch driver {
	case "sqlite":
		return testkit.SQLite(t) // a copy of one migrated file: much faster than migrating
	case "postgres":
		db, err = postgres.Open(context.Background(), pgtest.URL(t))
	default:
		t.Fatalf("unknown store driver %q", driver)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}
