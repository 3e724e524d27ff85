package postgres_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/store/storetest"
	"mediagen/internal/testkit"
)

// The tests' databases are clones of one migrated by this package's migrations.
func init() { pgtest.UseTemplate(postgres.MigrationsDigest(), postgres.Migrate) }

func TestConformancePostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := postgres.Open(context.Background(), pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		return db
	})
}

// TestConformancePostgresCaches runs the suite with the caches a serve replica enables.
func TestConformancePostgresCaches(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return openCached(t, pgtest.URL(t), time.Second)
	})
}

// openCached opens a replica's store as serve does: task cache heard by notifications,
// balance cache bounded by ttl.
func openCached(t *testing.T, url string, ttl time.Duration) *sqldb.DB {
	t.Helper()
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	if err := postgres.EnableTaskCache(db, url, 1000, ttl, nil); err != nil {
		t.Fatal(err)
	}
	db.EnableBalanceCache(1000, ttl)
	return db
}

// TestCachedReadsFollowAnotherReplica: two replicas on one database. A read on one that
// starts a ttl after the other's write shows it; pollers on one never see a task the other
// advances go back; and with a ttl of a minute the task cache
// still shows each write within a few seconds, which only the notifications can do.
func TestCachedReadsFollowAnotherReplica(t *testing.T) {
	url := pgtest.URL(t)
	writer := openCached(t, url, time.Second)
	t.Cleanup(func() { _ = writer.Close() })
	reader := openCached(t, url, 300*time.Millisecond)
	t.Cleanup(func() { _ = reader.Close() })
	storetest.ReadsBoundedAcrossReplicas(t, writer, reader, 300*time.Millisecond)

	storetest.PollsNeverGoBackAcrossReplicas(t, writer, reader, 300*time.Millisecond)

	slow := openCached(t, url, time.Minute)
	t.Cleanup(func() { _ = slow.Close() })
	lag := storetest.TaskWritesSeenPromptly(t, writer, slow, 5*time.Second)
	t.Logf("slowest notification lag: %v", lag)
	if slow.CachedTasks() == 0 {
		t.Error("the reader cached nothing: the test did not exercise the cache")
	}
}

// TestTaskCacheOffWhileNotificationsAreLost: when the notification connection drops, the
// cache stops serving (it could miss other replicas' writes) and comes back once it listens
// again.
func TestTaskCacheOffWhileNotificationsAreLost(t *testing.T) {
	url := pgtest.URL(t)
	writer := openCached(t, url, time.Second)
	t.Cleanup(func() { _ = writer.Close() })
	reader := openCached(t, url, time.Minute)
	t.Cleanup(func() { _ = reader.Close() })
	ctx := t.Context()
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() })
	storetest.TaskWritesSeenPromptly(t, writer, reader, 5*time.Second)
	if reader.CachedTasks() == 0 {
		t.Fatal("nothing cached before the connection drop")
	}
	if _, err := admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE query LIKE 'LISTEN mediagen_tasks%' AND pid <> pg_backend_pid()`); err != nil {
		t.Fatal(err)
	}
	// Dropped: the cache empties at once; it listens again within about a second.
	deadline := time.Now().Add(10 * time.Second)
	testkit.Poll(10*time.Second, func() bool { return reader.CachedTasks() == 0 })
	if n := reader.CachedTasks(); n != 0 {
		t.Fatalf("%d tasks still cached after the notification connection dropped", n)
	}
	storetest.TaskWritesSeenPromptly(t, writer, reader, 5*time.Second)
	for reader.CachedTasks() == 0 && time.Now().Before(deadline) {
		storetest.TaskWritesSeenPromptly(t, writer, reader, 5*time.Second)
	}
	if reader.CachedTasks() == 0 {
		t.Error("the cache did not come back after the connection was restored")
	}
}

// TestSharedCreatesAcrossTwoReplicas: creates of one key through two store handles (two
// replicas) share commits within each, and every rule holds across them.
func TestSharedCreatesAcrossTwoReplicas(t *testing.T) {
	url := pgtest.URL(t)
	var handles []store.Store
	var dbs []*sqldb.DB
	for range 2 {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		handles, dbs = append(handles, db), append(dbs, db)
	}
	storetest.CreatesOfOneKeyAcrossReplicas(t, handles, 100)
	storetest.CheckLedger(t, handles[0])
	for i, db := range dbs {
		commits, txs := db.GroupStats()
		t.Logf("replica %d: %d shared transactions in %d commits, %d run again alone", i, txs, commits, db.GroupReruns())
		if commits == 0 || txs <= commits {
			t.Errorf("replica %d: %d transactions in %d commits: creates did not share commits", i, txs, commits)
		}
	}
}

// TestSharedCommitRerunsAloneAfterADeadlock: when one member of a shared transaction meets a
// deadlock (here a fake one, twice: in the optimistic attempt without savepoints, then in the
// attempt with them), the whole transaction is rolled back and every member runs again
// alone: each is committed exactly once and none sees the error.
func TestSharedCommitRerunsAloneAfterADeadlock(t *testing.T) {
	db, err := postgres.Open(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx := store.ShareCommit(t.Context(), "acme", "key_a")
	// The first member holds the lane, so the next ones queue and form one batch.
	blocker := make(chan error, 1)
	go func() {
		blocker <- db.Transact(ctx, func(store.Tx) error { time.Sleep(300 * time.Millisecond); return nil }) // fixed: holds the lane a while
	}()
	time.Sleep(50 * time.Millisecond) // fixed: a head start, so the blocker holds the lane before the others queue
	var runs [10]atomic.Int32
	errs := make(chan error, len(runs))
	for i := range runs {
		go func() {
			errs <- db.Transact(ctx, func(tx store.Tx) error {
				if runs[i].Add(1) <= 2 && i == 5 {
					return fmt.Errorf("lock wait: %w", &pgconn.PgError{Code: "40P01", Message: "deadlock detected"})
				}
				h := sha256.Sum256([]byte(fmt.Sprint("member", i)))
				return tx.CreateKey(ctx, store.Key{ID: fmt.Sprintf("key_m%d", i), TenantID: "acme", Name: "m", Prefix: "p",
					Hash: h[:], CreatedAt: time.Now()}, "USD")
			})
		}()
	}
	if err := <-blocker; err != nil {
		t.Fatal(err)
	}
	for range runs {
		if err := <-errs; err != nil {
			t.Errorf("member failed: %v", err)
		}
	}
	keys, err := db.Keys(ctx, "acme")
	if err != nil || len(keys) != len(runs) {
		t.Fatalf("%d keys (%v), want %d: each member committed once", len(keys), err, len(runs))
	}
	if db.GroupReruns() == 0 {
		t.Error("no member was run again: the members did not share a transaction")
	}
}

func TestConcurrentMigratorsApplyOnce(t *testing.T) {
	url := pgtest.EmptyURL(t)
	errs := make(chan error, 3)
	for i := 0; i < 3; i++ {
		go func() {
			db, err := postgres.Open(context.Background(), url)
			if err == nil {
				_ = db.Close()
			}
			errs <- err
		}()
	}
	for i := 0; i < 3; i++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}

// Two store handles on one database are two replicas: the in-flight limit holds across them
// because the count lives in the database, locked by each create until it commits.
func TestInFlightLimitHoldsAcrossTwoReplicas(t *testing.T) {
	url := pgtest.URL(t)
	var handles []store.Store
	for i := 0; i < 2; i++ {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		handles = append(handles, db)
	}
	storetest.InFlightLimitHolds(t, handles, 7, 60)
}

// TestLedgerCheckFindsEntriesWithoutTheirRows: entries carry no foreign keys on PostgreSQL
// (migration 0009), so the audit is what reports an entry whose transaction or account is gone.
func TestLedgerCheckFindsEntriesWithoutTheirRows(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	db, err := postgres.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.CheckLedger(ctx); err != nil {
		t.Fatalf("an empty ledger: %v", err)
	}
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `INSERT INTO ledger_entries (txn_id, account_id, amount) VALUES ('txn_gone', 'acct_gone', 0)`); err != nil {
		t.Fatal(err)
	}
	err = db.CheckLedger(ctx)
	for _, want := range []string{"entry without its transaction txn_gone", "entry without its account acct_gone"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("CheckLedger = %v, want it to report %q", err, want)
		}
	}
}

// TestSpendCapExactAcrossTwoReplicas: 50 concurrent capped reservations of one key through two
// store handles on one database: exactly as many accepted as the cap allows, never over.
func TestSpendCapExactAcrossTwoReplicas(t *testing.T) {
	url := pgtest.URL(t)
	var handles []store.Store
	for range 2 {
		db, err := postgres.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		handles = append(handles, db)
	}
	storetest.SpendCapExactAcrossHandles(t, handles, 50)
	storetest.SpendHoldsAndSettlementsInterleave(t, handles)
	storetest.SpendCapSeededOnceAcrossHandles(t, handles, 30)
	storetest.CheckLedger(t, handles[0])
	for i, h := range handles {
		commits, txs := h.(*sqldb.DB).GroupStats()
		t.Logf("replica %d: %d shared transactions in %d commits", i, txs, commits)
		if txs <= commits {
			t.Errorf("replica %d: the capped reservations marked to share did not share commits", i)
		}
	}
}
