package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/store"
	"mediagen/internal/store/sqldb"
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

// TestConformanceSQLiteCaches runs the suite again with the caches a serve process enables:
// cached reads must be indistinguishable from uncached ones.
func TestConformanceSQLiteCaches(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "test.db"))
		if err != nil {
			t.Fatal(err)
		}
		db.EnableTaskCache(1000, 0)
		db.EnableBalanceCache(1000, time.Second)
		return db
	})
}

// TestCachedReadsBoundedAfterAnotherProcessWrites: `mediagen admin credit` writes the
// database from its own process, which the serve process never hears of; its cached balance
// (and a task cache given a ttl) must show such a write once the ttl has passed.
func TestCachedReadsBoundedAfterAnotherProcessWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	open := func() *sqldb.DB {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		return db
	}
	writer, reader := open(), open()
	const ttl = 300 * time.Millisecond
	reader.EnableTaskCache(1000, ttl)
	reader.EnableBalanceCache(1000, ttl)
	storetest.ReadsBoundedAcrossReplicas(t, writer, reader, ttl)
	storetest.PollsNeverGoBackAcrossReplicas(t, writer, reader, ttl)
	if reader.CachedBalances() == 0 || reader.CachedTasks() == 0 {
		t.Error("the reader cached nothing: the test did not exercise the caches")
	}
}

// TestCreatesOfOneKeyThroughTwoHandles: two store handles on one file (a serve process and
// an admin command, say) creating tasks of one key at once keep every rule.
func TestCreatesOfOneKeyThroughTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	var handles []store.Store
	for range 2 {
		db, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		handles = append(handles, db)
	}
	storetest.CreatesOfOneKeyAcrossReplicas(t, handles, 50)
	storetest.CheckLedger(t, handles[0])
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
	ctx := t.Context()
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
	ctx := t.Context()
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
		if tasks, err = tx.InFlight(ctx, store.InFlightTasks, "key_a", "acme"); err != nil {
			return err
		}
		speeches, err = tx.InFlight(ctx, store.InFlightSpeeches, "key_b", "acme")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if tasks != (store.InFlight{Key: 2, Tenant: 2}) || speeches != (store.InFlight{Key: 1, Tenant: 1}) {
		t.Errorf("after the migration: tasks %+v, speeches %+v; want 2/2 and 1/1", tasks, speeches)
	}
}

// TestJobsMigrationMovesUnfinishedWork builds a database at the schema before 0007_jobs with
// a queued task, a Processing asset and a pending callback, then opens it with this version:
// each unfinished record gets its job, with its schedule and attempts, and finished ones none.
func TestJobsMigrationMovesUnfinishedWork(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "old.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	files, _ := fs.Glob(sqlite.Migrations(), "*.sql")
	for _, f := range files {
		v, _ := strconv.Atoi(f[:4])
		if v >= 7 {
			continue
		}
		body, _ := fs.ReadFile(sqlite.Migrations(), f)
		if _, err := raw.ExecContext(ctx, string(body)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if _, err := raw.ExecContext(ctx, `INSERT INTO schema_migrations VALUES (?, ?, 0)`, v, f); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{
		`INSERT INTO tasks (id, key_id, tenant_id, route, model, status, progress, client_request_id, payload_hash, request, pricing,
			reserved, created_at, updated_at, next_run_at, attempts, step)
			VALUES ('vid_q', 'k', 'acme', 'native', 'm', 'in_progress', 40, '', x'01', '{}', '{}', 10, 1000, 1000, 5000, 2, 'poll'),
			       ('vid_d', 'k', 'acme', 'native', 'm', 'completed', 100, '', x'01', '{}', '{}', 10, 1000, 1000, 0, 0, 'done')`,
		`INSERT INTO asset_groups (id, tenant_id, library, name, origin, status, created_at, updated_at)
			VALUES ('grp', 'acme', 'virtual', 'g', 'tenant', 'Active', 1000, 1000)`,
		`INSERT INTO assets (id, tenant_id, group_id, library, name, asset_type, source_url, status, attempts, lease_until, lease_token, created_at, updated_at)
			VALUES ('asset_p', 'acme', 'grp', 'virtual', 'a', 'Image', 'https://x', 'Processing', 1, 9000, 'lease_old', 2000, 2000),
			       ('asset_a', 'acme', 'grp', 'virtual', 'a', 'Image', 'https://x', 'Active', 1, 0, '', 2000, 2000)`,
		`INSERT INTO verify_sessions (id, token_hash, tenant_id, key_id, callback_url, status, created_at, expires_at, finished_at,
			callback_body, callback_state, callback_attempts, callback_next_at)
			VALUES ('vs_p', x'01', 'acme', 'k', 'https://hooks', 'passed', 1000, 9000, 3000, '{}', 'pending', 1, 7000),
			       ('vs_d', x'02', 'acme', 'k', 'https://hooks', 'passed', 1000, 9000, 3000, '{}', 'delivered', 1, 0)`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := raw.QueryContext(ctx, `SELECT id, kind, ref, tenant_id, run_at, attempts, lease_token FROM jobs ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []string
	for rows.Next() {
		var id, kind, ref, tenant, token string
		var runAt, attempts int64
		if err := rows.Scan(&id, &kind, &ref, &tenant, &runAt, &attempts, &token); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s run_at=%d attempts=%d lease=%q", id, kind, ref, tenant, runAt, attempts, token))
	}
	want := []string{
		`asset.ingest:asset_p asset.ingest asset_p acme run_at=0 attempts=1 lease=""`,
		`verify.callback:vs_p verify.callback vs_p acme run_at=7000 attempts=0 lease=""`,
		`video.task:vid_q video.task vid_q acme run_at=5000 attempts=2 lease=""`,
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("jobs after the migration:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The records read as before, and the moved task runs from where it was.
	r, err := db.TaskRun(ctx, "vid_q")
	if err != nil || r.Step != "poll" || r.Progress != 40 || r.Status != store.StatusInProgress {
		t.Errorf("task after the migration: %+v %v", r, err)
	}
	if a, err := db.Asset(ctx, "asset_p"); err != nil || a.Attempts != 1 || a.Status != store.AssetProcessing {
		t.Errorf("asset after the migration: %+v %v", a, err)
	}
}

// TestSpendCapExactThroughTwoHandles: 50 concurrent capped reservations of one key through two
// handles on one file: exactly as many accepted as the cap allows, never over.
func TestSpendCapExactThroughTwoHandles(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	var handles []store.Store
	for range 2 {
		db, err := sqlite.Open(context.Background(), path)
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
}

// TestSpeechJobsMigrationEnqueuesPendingSpeeches opens a database whose pending speech record
// was made before 0022 (without its speech.generate job): the migration gives it its job, a
// finished record none, and the periodic sweep's job, which no process runs any more, goes.
func TestSpeechJobsMigrationEnqueuesPendingSpeeches(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	err = db.Transact(ctx, func(tx store.Tx) error {
		for _, id := range []string{"speech_pending", "speech_done"} {
			sp := store.Speech{ID: id, KeyID: "key_b", TenantID: "acme", Model: "s", Status: store.SpeechPending,
				PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`), AttemptToken: "a", AttemptUntil: now, CreatedAt: now, UpdatedAt: now}
			if err := tx.CreateSpeech(ctx, sp); err != nil {
				return err
			}
		}
		if err := tx.FinishSpeech(ctx, store.SpeechFinish{ID: "speech_done", Token: "a", Status: store.SpeechFailed, FinishedAt: now}); err != nil {
			return err
		}
		return tx.EnqueueJob(ctx, store.Job{ID: "speech.sweep", Kind: "speech.sweep", RunAt: now, CreatedAt: now})
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.ExecContext(ctx, `DELETE FROM schema_migrations WHERE version = 22`); err != nil {
		t.Fatal(err)
	}
	_ = raw.Close()
	db, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	jobs, err := db.ClaimJobs(ctx, "speech.generate", "", now.Add(time.Hour), time.Minute, 10, nil)
	if err != nil || len(jobs) != 1 || jobs[0].ID != "speech.generate:speech_pending" || jobs[0].Ref != "speech_pending" ||
		jobs[0].KeyID != "key_b" || jobs[0].TenantID != "acme" {
		t.Fatalf("jobs after the migration: %+v %v; want the pending record's", jobs, err)
	}
	if swept, err := db.ClaimJobs(ctx, "speech.sweep", "", now.Add(time.Hour), time.Minute, 10, nil); err != nil || len(swept) != 0 {
		t.Fatalf("the sweep's job after the migration: %+v %v", swept, err)
	}
}
