package postgres_test

import (
	"context"
	"database/sql"
	"testing"

	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/store/storetest"
)

// TestUsageMigrationBackfillsSettledRecords: a database upgraded to the usage rollups
// (migration 0015) counts the tasks and speech records it had already settled exactly as the
// settlement path would have.
func TestUsageMigrationBackfillsSettledRecords(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	want := storetest.SettleWithoutUsage(t, db)
	_ = db.Close()
	// Back to the schema before 0015, with the settled records kept.
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE usage_rollups`, `DROP TABLE usage_daily`, `DELETE FROM schema_migrations WHERE version = 15`} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_ = raw.Close()
	db, err = postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.CheckUsageRows(t, db, want)
}
