package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"sync/atomic"
	"testing"
)

// URL clones one template that migrate made once; a template a killed process left half made
// (not marked IS_TEMPLATE) is made again rather than cloned.
func TestURLClonesATemplateMigratedOnce(t *testing.T) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	digest := "pgtest" + hex.EncodeToString(b[:])
	var migrations atomic.Int32
	UseTemplate(digest, func(ctx context.Context, url string) error {
		migrations.Add(1)
		db, err := sql.Open("pgx", url)
		if err != nil {
			return err
		}
		defer db.Close()
		_, err = db.ExecContext(ctx, `CREATE TABLE migrated (n int); INSERT INTO migrated VALUES (1)`)
		return err
	})
	t.Cleanup(func() { tpl.migrate = nil; dropTemplate(t) })
	// A half-made template from a killed run: it exists, unmarked and without the table.
	_, admin := server(t.Context(), t)
	defer admin.Close()
	if _, err := admin.Exec(`CREATE DATABASE ` + tpl.name); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		db := open(t, URL(t))
		var n int
		if err := db.QueryRow(`SELECT n FROM migrated`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("a clone reads %d, %v; want the template's row", n, err)
		}
		// Each clone is the test's own: a write in one is not in the next.
		if _, err := db.Exec(`INSERT INTO migrated VALUES (2)`); err != nil {
			t.Fatal(err)
		}
	}
	if got := migrations.Load(); got != 1 {
		t.Errorf("migrated %d times, want once", got)
	}
}

func open(t *testing.T, url string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

func dropTemplate(t *testing.T) {
	db, err := sql.Open("pgx", BaseURL())
	if err != nil {
		return
	}
	defer db.Close()
	_, _ = db.Exec(`ALTER DATABASE ` + tpl.name + ` IS_TEMPLATE false`)
	if _, err := db.Exec(`DROP DATABASE ` + tpl.name + ` WITH (FORCE)`); err != nil {
		t.Logf("drop the test's template: %v", err)
	}
}
