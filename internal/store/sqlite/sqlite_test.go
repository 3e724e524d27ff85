package sqlite_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
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

// TestConformanceSQLiteTaskCache runs the suite again with the task cache a serve process
// enables: cached reads must be indistinguishable from uncached ones.
func TestConformanceSQLiteTaskCache(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"))
		if err != nil {
			t.Fatal(err)
		}
		db.EnableTaskCache(1000)
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

// TestConcurrentTransactionsShareCommits checks that group commit is on and forms batches:
// transactions that wait for the writer are committed together.
func TestConcurrentTransactionsShareCommits(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	const n = 200
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			err := db.Transact(ctx, func(tx store.Tx) error {
				_, err := tx.SetMetaOnce(ctx, fmt.Sprintf("k%d", i), "v")
				return err
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	commits, txs := db.GroupStats()
	if txs != n || commits >= n {
		t.Fatalf("%d transactions in %d commits: want %d in fewer commits", txs, commits, n)
	}
	for i := range n {
		if _, ok, err := db.Meta(ctx, fmt.Sprintf("k%d", i)); err != nil || !ok {
			t.Fatalf("k%d missing: %v", i, err)
		}
	}
	t.Logf("%d transactions in %d commits", txs, commits)
}
