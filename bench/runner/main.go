// Command runner measures video tasks through the job engine with a no-op upstream: how many
// tasks per second go from queued to a settled terminal state, and how memory behaves with many
// queued tasks.
//
//	go run ./bench/runner [-tasks 100000] [-workers 8] [-store sqlite|postgres] [-submitters 64] [-keys 1] [-tenants 0]
//
// With every task queued it times claims on the backlog (one job, and a batch), each handed
// back at once: the cost of the fair-share claim (docs/architecture.md#priority-and-fair-share)
// as the backlog grows, and as it spreads over more keys (-keys), one tenant each or spread
// over fewer tenants (-tenants).
//
// Memory is reported as Go heap (after a GC) and as the process's resident set (VmRSS), before
// queueing, with every task queued, at the peak while running, and after.
//
// It prints figures and never fails on a number.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"mediagen/internal/billing"
	"mediagen/internal/idgen"
	"mediagen/internal/jobs"
	apikeys "mediagen/internal/keys"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/store/sqlite"
	"mediagen/internal/video"
)

// noop finishes every task in one step, charging nothing beyond a token amount. It counts its
// steps, so the bench can watch progress without counting a table of a million rows.
type noop struct{ steps *atomic.Int64 }

func (n noop) Step(context.Context, store.TaskRun, func(video.Outcome) error) (video.Outcome, error) {
	n.steps.Add(1)
	return video.Outcome{Final: &video.Final{Status: store.StatusCompleted, Result: []byte(`{}`), Charge: 1}}, nil
}

func (noop) Expired(store.TaskRun) video.Final { return video.Final{Status: store.StatusExpired} }

func main() {
	tasks := flag.Int("tasks", 100_000, "tasks to queue")
	workers := flag.Int("workers", 8, "runner workers")
	batch := flag.Int("batch", 64, "claim batch size")
	kind := flag.String("store", "sqlite", "sqlite or postgres")
	drain := flag.Int("drain", 20_000, "tasks to run through the runner for the throughput figure (0: all)")
	submitters := flag.Int("submitters", 64, "goroutines queueing tasks at once, as concurrent API requests do (their transactions share commits)")
	keys := flag.Int("keys", 1, "keys the tasks are spread over (the groups a fair claim walks)")
	tenants := flag.Int("tenants", 0, "tenants the keys belong to, key i to tenant i mod tenants (0: each key its own)")
	flag.Parse()
	if err := run(*kind, *tasks, *workers, *batch, *drain, *submitters, max(1, *keys), *tenants); err != nil {
		fmt.Fprintln(os.Stderr, "bench/runner:", err)
		os.Exit(1)
	}
}

func heapMiB() float64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return float64(m.HeapAlloc) / (1 << 20)
}

// rssMiB is this process's resident set size (0 where /proc is missing).
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func memText() string { return fmt.Sprintf("heap %.1f MiB, RSS %.1f MiB", heapMiB(), rssMiB()) }

// taskCacheEntries is serve's default --task-cache.
const taskCacheEntries = 20_000

// storeBytes is what the store holds on disk: the schema's tables, indexes and TOAST on
// PostgreSQL (pg_total_relation_size), the database file and its WAL on SQLite.
type storeBytes func(ctx context.Context) (int64, error)

func open(ctx context.Context, kind string) (*sqldb.DB, func(), storeBytes, error) {
	if kind == "postgres" {
		base := pgtest.BaseURL()
		schema := "bench_" + idgen.Secret(5)
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return nil, nil, nil, err
		}
		if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
			return nil, nil, nil, err
		}
		url := base + "&search_path=" + schema
		db, err := postgres.Open(ctx, url)
		cleanup := func() { _, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE"); admin.Close() }
		if err == nil {
			err = postgres.EnableTaskCache(db, url, taskCacheEntries, time.Second, nil)
		}
		size := func(ctx context.Context) (int64, error) {
			var n int64
			err := admin.QueryRowContext(ctx, `SELECT COALESCE(sum(pg_total_relation_size(c.oid)), 0)::bigint
				FROM pg_class c JOIN pg_namespace ns ON ns.oid = c.relnamespace
				WHERE ns.nspname = $1 AND c.relkind IN ('r', 'm')`, schema).Scan(&n)
			return n, err
		}
		return db, cleanup, size, err
	}
	dir, err := os.MkdirTemp("", "bench-runner-")
	if err != nil {
		return nil, nil, nil, err
	}
	path := filepath.Join(dir, "bench.db")
	db, err := sqlite.Open(ctx, path)
	if err == nil {
		db.EnableTaskCache(taskCacheEntries, 0)
	}
	size := func(context.Context) (int64, error) {
		var n int64
		for _, f := range []string{path, path + "-wal"} {
			if fi, err := os.Stat(f); err == nil {
				n += fi.Size()
			}
		}
		return n, nil
	}
	return db, func() { os.RemoveAll(dir) }, size, err
}

func run(kind string, n, workers, batch, drain, submitters, nkeys, ntenants int) error {
	ctx := context.Background()
	db, cleanup, size, err := open(ctx, kind)
	if err != nil {
		return err
	}
	defer cleanup()
	defer db.Close()
	keys := make([]store.Key, nkeys)
	for i := range keys {
		tenant := i
		if ntenants > 0 {
			tenant = i % ntenants
		}
		keys[i] = store.Key{ID: idgen.New("key"), TenantID: fmt.Sprintf("bench-%d", tenant), Prefix: "mg_bench", Hash: []byte(idgen.Secret(8)), Unlimited: true, CreatedAt: time.Now()}
		if err := db.Transact(ctx, func(tx store.Tx) error { return tx.CreateKey(ctx, keys[i], "USD") }); err != nil {
			return err
		}
	}
	key := keys[0]
	// The caches a serve process enables, at their default sizes: they must stay bounded
	// however many tasks are stored.
	db.EnableBalanceCache(10_000, time.Second)
	fmt.Printf("store=%s tasks=%d workers=%d batch=%d submitters=%d keys=%d tenants=%d GOMAXPROCS=%d\n", kind, n, workers, batch, submitters, nkeys, ntenants, runtime.GOMAXPROCS(0))
	fmt.Printf("memory:  %s before queueing\n", memText())

	// Queue the tasks: each is the same transaction as an accepted request (task, job,
	// reservation), marked as the API marks it, from several goroutines at once.
	start := time.Now()
	now := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	var idsMu sync.Mutex
	var ids []string // every stride-th task, spread over the table
	stride := max(1, int64(n)/10_000)
	errs := make(chan error, submitters)
	for range submitters {
		wg.Go(func() {
			for {
				i := next.Add(1)
				if i > int64(n) {
					return
				}
				key := keys[int(i)%len(keys)]
				t := store.Task{ID: idgen.New("video"), KeyID: key.ID, TenantID: key.TenantID, Route: "native", Model: "bench",
					Status: store.StatusQueued, PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`), Reserved: 10,
					CreatedAt: now, UpdatedAt: now}
				err := db.Transact(store.ShareCommit(ctx, key.TenantID, key.ID), func(tx store.Tx) error {
					if err := tx.CreateTask(ctx, t); err != nil {
						return err
					}
					if err := tx.EnqueueJob(ctx, video.TaskJob(t)); err != nil {
						return err
					}
					return billing.Reserve(ctx, tx, apikeys.Caller{Key: key}, t.ID, 10, now)
				})
				if err != nil {
					errs <- err
					return
				}
				if i%stride == 0 {
					idsMu.Lock()
					ids = append(ids, t.ID)
					idsMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	queued := time.Since(start)
	fmt.Printf("queue:   %d tasks accepted in %v (%.0f accepts/s, task + job + reservation per transaction)\n", n, queued.Round(time.Millisecond), float64(n)/queued.Seconds())
	fmt.Printf("memory:  %s with %d tasks queued (the store holds them, not the process)\n", memText(), n)
	// The polling path over a large table: read tasks spread over all of it (cache misses,
	// then hits) and the key's balance.
	start = time.Now()
	for round := range 3 {
		for _, id := range ids {
			if _, err := db.Task(ctx, id); err != nil {
				return err
			}
		}
		if _, err := db.Balance(ctx, key.ID); err != nil {
			return err
		}
		if round == 0 {
			fmt.Printf("reads:   %d tasks read once each in %v\n", len(ids), time.Since(start).Round(time.Millisecond))
		}
	}
	fmt.Printf("memory:  %s after reading %d tasks three times (task cache of %d entries: %d held)\n", memText(), len(ids), taskCacheEntries, db.CachedTasks())

	for _, limit := range []int{1, batch} {
		if err := claimCost(ctx, db, claimSamples, limit); err != nil {
			return err
		}
	}

	if drain <= 0 || drain > n {
		drain = n
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var steps atomic.Int64
	r := jobs.New(jobs.Config{Store: db, Logger: quiet})
	if err := r.Register(jobs.Kind{Name: video.TaskKind, Handler: &video.Tasks{Store: db, Steps: noop{steps: &steps}, Logger: quiet},
		Workers: workers, Batch: batch, Poll: 5 * time.Millisecond}); err != nil {
		return err
	}
	start = time.Now()
	if err := r.Start(ctx); err != nil {
		return err
	}
	peak := 0.0
	for settled := false; !settled; {
		if steps.Load() >= int64(drain) {
			// Every step has run; their settlements commit just after. One count of the table
			// (a scan) per round from here only.
			counts, err := db.CountTasks(ctx)
			if err != nil {
				return err
			}
			settled = counts[store.StatusCompleted] >= drain
		}
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		peak = max(peak, float64(m.HeapAlloc)/(1<<20))
		time.Sleep(20 * time.Millisecond)
	}
	elapsed := time.Since(start)
	r.Stop()
	fmt.Printf("runner:  %d tasks claimed, run and settled in %v: %.0f tasks/s\n", drain, elapsed.Round(time.Millisecond), float64(drain)/elapsed.Seconds())
	fmt.Printf("memory:  peak heap while running %.1f MiB; after: %s\n", peak, memText())
	if err := db.CheckLedger(ctx); err != nil {
		return fmt.Errorf("ledger after run: %w", err)
	}
	fmt.Println("ledger:  invariants hold")
	// What a task costs the store's disk, for sizing it (docs/deploy.md "Capacity"): the
	// service keeps task records, so this grows with the tasks a day times the days kept.
	if b, err := size(ctx); err == nil {
		fmt.Printf("store:   %.1f MB on disk with %d tasks, %d of them settled: %.0f bytes a task\n", float64(b)/1e6, n, drain, float64(b)/float64(n))
	} else {
		fmt.Printf("store:   size not read: %v\n", err)
	}
	return nil
}

// claimSamples is how many claims claimCost times: enough for a p99 of one in a hundred.
const claimSamples = 200

// claimCost times claims of limit jobs on the queued backlog, handing each claim's jobs back
// (due at once, attempt uncounted) untimed, so every claim sees the same backlog.
func claimCost(ctx context.Context, db store.Store, samples, limit int) error {
	took := make([]time.Duration, 0, samples)
	for range samples {
		now := time.Now()
		start := time.Now()
		got, err := db.ClaimJobs(ctx, video.TaskKind, "", now, time.Minute, limit, nil)
		took = append(took, time.Since(start))
		if err != nil {
			return err
		}
		err = db.Transact(ctx, func(tx store.Tx) error {
			for _, j := range got {
				if err := tx.UpdateJob(ctx, store.JobUpdate{ID: j.ID, Token: j.Token, RunAt: now, Attempts: j.Attempt - 1}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	slices.Sort(took)
	at := func(q float64) time.Duration { return took[min(len(took)-1, int(q*float64(len(took))))] }
	fmt.Printf("claim:   %d claims of %d on the backlog: p50 %v, p99 %v, max %v\n", samples, limit,
		at(0.5).Round(time.Microsecond), at(0.99).Round(time.Microsecond), took[len(took)-1].Round(time.Microsecond))
	return nil
}
