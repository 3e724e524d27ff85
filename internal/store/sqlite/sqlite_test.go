package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

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

// TestInFlightMigrationCountsExistingWork applies migration 0006 to a database that already
// holds unfinished and finished tasks and speech records: the counters start at what is
// unfinished, so the in-flight limits hold from the first request after an upgrade.
func TestInFlightMigrationCountsExistingWork(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	err = db.Transact(ctx, func(tx store.Tx) error {
		for i, st := range []string{store.StatusQueued, store.StatusInProgress, store.StatusCompleted} {
			task := store.Task{ID: fmt.Sprintf("vid_%d", i), KeyID: "key_a", TenantID: "acme", Route: "native", Model: "m",
				Status: st, PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`), CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateTask(ctx, task); err != nil {
				return err
			}
		}
		sp := store.Speech{ID: "speech_1", KeyID: "key_b", TenantID: "acme", Model: "s", Status: store.SpeechPending,
			PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`), AttemptToken: "a", AttemptUntil: now, CreatedAt: now, UpdatedAt: now}
		return tx.CreateSpeech(ctx, sp)
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Back to the schema before 0006, with the rows still there.
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `DROP TABLE in_flight; DELETE FROM schema_migrations WHERE version = 6`); err != nil {
		t.Fatal(err)
	}
	_ = raw.Close()
	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tasks, speeches store.InFlight
	err = db.Transact(ctx, func(tx store.Tx) (err error) {
		if tasks, err = tx.TasksInFlight(ctx, "key_a", "acme"); err != nil {
			return err
		}
		speeches, err = tx.SpeechesInFlight(ctx, "key_b", "acme")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if tasks != (store.InFlight{Key: 2, Tenant: 2}) || speeches != (store.InFlight{Key: 1, Tenant: 1}) {
		t.Errorf("after the migration: tasks %+v, speeches %+v; want 2/2 and 1/1", tasks, speeches)
	}
}
