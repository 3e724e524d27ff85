package sqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"mediagen/internal/store/sqlite"
	"mediagen/internal/store/storetest"
)

// TestUsageMigrationBackfillsSettledRecords: a database upgraded to the usage rollups
// (migrations 0015, 0021 and 0031's grains) counts the tasks and speech records it had already settled exactly as the
// settlement path would have.
func TestUsageMigrationBackfillsSettledRecords(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "old.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	want := storetest.SettleWithoutUsage(t, db)
	_ = db.Close()
	// Back to the schema before 0015 (and so before 0021's costs and 0031's grains), with the
	// settled records kept: the three migrations run again on the reopen.
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{`DROP TABLE usage_rollups`, `DROP TABLE usage_daily`, `DROP TABLE usage_alias_hourly`, `DROP TABLE usage_alias_daily`,
		`DROP TABLE usage_tenant_hourly`, `DROP TABLE usage_tenant_daily`, `DELETE FROM schema_migrations WHERE version IN (15, 21, 31)`,
		`ALTER TABLE tasks DROP COLUMN cost_micros`, `ALTER TABLE tasks DROP COLUMN cost_currency`, `ALTER TABLE tasks DROP COLUMN cost_account`,
		`ALTER TABLE speeches DROP COLUMN cost_micros`, `ALTER TABLE speeches DROP COLUMN cost_currency`, `ALTER TABLE speeches DROP COLUMN cost_account`} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_ = raw.Close()
	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	storetest.CheckUsageRows(t, db, want)
	storetest.CheckUsageGrains(t, db, storetest.UsageAt.Add(-24*time.Hour), storetest.UsageAt.Add(24*time.Hour))
}
