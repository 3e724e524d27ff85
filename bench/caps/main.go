// Command caps measures what spend caps cost the paths they touch (docs/billing.md, "Spend
// caps"): task creation (task, job, reservation in one transaction, 64 at a time on one key,
// commits shared as video.accept shares them) for a key without caps and for a key with caps
// that never bind (the guarded counter upserts, merged per batch on PostgreSQL); settlement with and
// without a hold, and, as the baseline, a settlement without the spend step at all (what it
// cost before caps). Then a cap that binds: how many of the concurrent creates it accepts.
//
//	go run ./bench/caps [-store sqlite|postgres] [-n 4000] [-submitters 64]
//
// Last, a cap set mid-period: a key that made -n tasks today with no cap gets daily and
// monthly caps, and its tenant a daily cap; the first capped create seeds the three counters
// from the records (the key's -n, the tenant's every task today), and the bench prints what it
// took, what a create takes once the counters exist, and the seed's plan.
//
// It prints figures and never fails on a number.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/store/sqlite"
	"mediagen/internal/video"
)

func main() {
	kind := flag.String("store", "sqlite", "sqlite or postgres")
	n := flag.Int("n", 4000, "tasks per measurement")
	submitters := flag.Int("submitters", 64, "concurrent creates")
	flag.Parse()
	if err := run(*kind, *n, *submitters); err != nil {
		fmt.Fprintln(os.Stderr, "bench/caps:", err)
		os.Exit(1)
	}
}

func open(ctx context.Context, kind string) (*sqldb.DB, func(), error) {
	if kind == "postgres" {
		base := pgtest.BaseURL()
		schema := "bench_" + idgen.Secret(5)
		admin, err := sql.Open("pgx", base)
		if err != nil {
			return nil, nil, err
		}
		if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
			return nil, nil, err
		}
		db, err := postgres.Open(ctx, base+"&search_path="+schema)
		return db, func() { _, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE"); admin.Close() }, err
	}
	dir, err := os.MkdirTemp("", "bench-caps-")
	if err != nil {
		return nil, nil, err
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"))
	return db, func() { os.RemoveAll(dir) }, err
}

// newKey makes an unlimited key with caps.
func newKey(ctx context.Context, db *sqldb.DB, caps store.Caps) (store.Key, error) {
	_, k, err := keys.New(keys.Spec{TenantID: "bench", Unlimited: true, Caps: caps}, time.Now())
	if err != nil {
		return k, err
	}
	return k, db.Transact(ctx, func(tx store.Tx) error { return tx.CreateKey(ctx, k, "USD") })
}

const amount = money.Micros(10)

// create makes n tasks of c's key from submitters goroutines, each as video.accept does: the
// task, its job and its reservation in one transaction, its commit shared. It returns the created tasks, the refused count and the rate.
func create(ctx context.Context, db *sqldb.DB, c keys.Caller, n, submitters int) ([]store.Task, int, float64, error) {
	var (
		next    atomic.Int64
		mu      sync.Mutex
		made    []store.Task
		refused int
		first   error
		wg      sync.WaitGroup
	)
	start := time.Now()
	for range submitters {
		wg.Go(func() {
			for next.Add(1) <= int64(n) {
				now := time.Now().UTC()
				t := store.Task{ID: idgen.New("video"), KeyID: c.Key.ID, TenantID: c.Key.TenantID, Route: "native", Model: "bench",
					Status: store.StatusQueued, PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`), Reserved: amount,
					CreatedAt: now, UpdatedAt: now}
				err := db.Transact(store.ShareCommit(ctx, c.Key.TenantID, c.Key.ID), func(tx store.Tx) error {
					if err := tx.CreateTask(ctx, t); err != nil {
						return err
					}
					if err := tx.EnqueueJob(ctx, video.TaskJob(t)); err != nil {
						return err
					}
					return billing.Reserve(ctx, tx, c, t.ID, amount, now)
				})
				mu.Lock()
				switch {
				case err == nil:
					made = append(made, t)
				case billing.IsCapRefusal(err):
					refused++
				case first == nil:
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return made, refused, float64(n) / time.Since(start).Seconds(), first
}

// settle settles every task (final = reservation − 1) from 8 goroutines, with billing.Settle or,
// bare, with its ledger posting alone (no spend step). It returns the rate.
func settle(ctx context.Context, db *sqldb.DB, tasks []store.Task, bare bool) (float64, error) {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range 8 {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(tasks)) {
					return
				}
				t := tasks[i]
				err := db.Transact(ctx, func(tx store.Tx) error {
					if !bare {
						_, err := billing.Settle(ctx, tx, t.KeyID, t.ID, amount, amount-1, time.Now())
						return err
					}
					return tx.Post(ctx, store.Txn{ID: idgen.New("txn"), Kind: "settle", Ref: t.ID, AllowOverdraft: true, Entries: []store.Entry{
						{Account: store.AccountID(t.KeyID, store.AccountReserved), Amount: -amount},
						{Account: store.AccountID(t.KeyID, store.AccountSpent), Amount: amount - 1},
						{Account: store.AccountID(t.KeyID, store.AccountAvailable), Amount: 1},
					}})
				})
				if err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err, _ := first.Load().(error); err != nil {
		return 0, err
	}
	return float64(len(tasks)) / time.Since(start).Seconds(), nil
}

func run(kind string, n, submitters int) error {
	ctx := context.Background()
	db, cleanup, err := open(ctx, kind)
	if cleanup != nil {
		defer cleanup()
	}
	if err != nil {
		return err
	}
	defer db.Close()
	fmt.Printf("store %s, %d tasks per row, %d concurrent creates on one key, settlements 8 at a time\n\n", kind, n, submitters)
	fmt.Printf("%-58s %12s\n", "measurement", "per second")

	plain, err := newKey(ctx, db, store.Caps{})
	if err != nil {
		return err
	}
	capped, err := newKey(ctx, db, store.Caps{Daily: money.CapOf(1 << 50), Monthly: money.CapOf(1 << 50)})
	if err != nil {
		return err
	}
	var made [2][]store.Task
	for i, k := range []store.Key{plain, capped} {
		what := "create, no cap"
		if i == 1 {
			what = "create, daily and monthly caps that never bind"
		}
		tasks, _, rate, err := create(ctx, db, keys.Caller{Key: k}, n, submitters)
		if err != nil {
			return fmt.Errorf("%s: %w", what, err)
		}
		made[i] = tasks
		fmt.Printf("%-58s %12.0f\n", what, rate)
	}
	half := len(made[0]) / 2
	for _, row := range []struct {
		what  string
		tasks []store.Task
		bare  bool
	}{
		{"settle without the spend step (before caps)", made[0][:half], true},
		{"settle, no cap (the spend step finds no hold)", made[0][half:], false},
		{"settle, capped (hold adjusts two counters)", made[1], false},
	} {
		rate, err := settle(ctx, db, row.tasks, row.bare)
		if err != nil {
			return fmt.Errorf("%s: %w", row.what, err)
		}
		fmt.Printf("%-58s %12.0f\n", row.what, rate)
	}

	// A cap of exactly 100 reservations against 4 × as many concurrent creates.
	binding, err := newKey(ctx, db, store.Caps{Daily: money.CapOf(100 * amount)})
	if err != nil {
		return err
	}
	tasks, refused, _, err := create(ctx, db, keys.Caller{Key: binding}, 400, submitters)
	if err != nil {
		return err
	}
	day, _, err := billing.SpentNow(ctx, db, "key", binding.ID, time.Now())
	if err != nil {
		return err
	}
	fmt.Printf("\ncap of 100 reservations, 400 concurrent creates: %d accepted, %d refused 402, day's counter %s (cap %s)\n",
		len(tasks), refused, day, 100*amount)
	if err := seedFigures(ctx, db, n, submitters); err != nil {
		return fmt.Errorf("seed: %w", err)
	}
	if err := db.CheckLedger(ctx); err != nil {
		return err
	}
	fmt.Println("ledger: OK")
	return nil
}

// seedFigures times the first capped create of a key and tenant that spent today before any
// cap (it seeds their counters from the records), a create after it, and shows the seed's plans.
func seedFigures(ctx context.Context, db *sqldb.DB, n, submitters int) error {
	k, err := newKey(ctx, db, store.Caps{})
	if err != nil {
		return err
	}
	if _, _, _, err := create(ctx, db, keys.Caller{Key: k}, n, submitters); err != nil {
		return err
	}
	k.Caps = store.Caps{Daily: money.CapOf(1 << 50), Monthly: money.CapOf(1 << 50)}
	tenant := &catalog.Tenant{ID: k.TenantID, Currency: "USD"}
	tenant.SpendCaps.Daily = catalog.Cap{Cap: money.CapOf(1 << 50)}
	c := keys.Caller{Key: k, Tenant: tenant}
	start := time.Now()
	if _, _, _, err := create(ctx, db, c, 1, 1); err != nil {
		return err
	}
	first := time.Since(start)
	const next = 200
	_, _, rate, err := create(ctx, db, c, next, 1)
	if err != nil {
		return err
	}
	now := time.Now()
	day, month, err := billing.SpentNow(ctx, db, "key", k.ID, now)
	if err != nil {
		return err
	}
	tday, _, err := billing.SpentNow(ctx, db, "tenant", k.TenantID, now)
	if err != nil {
		return err
	}
	fmt.Printf("\ncap set mid-period on a key with %d tasks today (its tenant: %s spent or reserved today before the cap):\n", n, tday-money.Micros(1+next)*amount)
	fmt.Printf("  first capped create, seeding 3 counters from the records: %.2f ms\n", float64(first.Microseconds())/1000)
	fmt.Printf("  next creates, one at a time: %.2f ms each\n", 1000/rate)
	fmt.Printf("  key's day %s, month %s (want %s: the %d tasks before the cap and the %d after)\n",
		day, month, money.Micros(n+1+next)*amount, n, 1+next)
	dp, resets := billing.PeriodOf(billing.Daily, now)
	for _, scope := range []struct{ scope, owner string }{{"key", k.ID}, {"tenant", k.TenantID}} {
		plan, err := db.ExplainSpendSeed(ctx, store.SpendCounter{Scope: scope.scope, Owner: scope.owner, Period: dp,
			From: resets.AddDate(0, 0, -1), Until: resets})
		if err != nil {
			return err
		}
		fmt.Printf("  plan of the %s seed:\n", scope.scope)
		for _, line := range plan {
			fmt.Printf("    %s\n", line)
		}
	}
	return nil
}
