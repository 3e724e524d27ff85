package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"mediagen/internal/store"
	"mediagen/internal/store/sqlite"
	"mediagen/internal/store/storetest"
)

func TestConformanceSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"))
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

func TestReopenDoesNotRemigrate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	for i := 0; i < 2; i++ {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		_ = db.Close()
	}
}
