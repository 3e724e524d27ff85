// Command usage measures the usage report over many settled tasks, on SQLite and PostgreSQL:
//
//	go run ./bench/usage [-tasks 10000000] [-tenants 1000 -keys 10 -aliases 50] [-days 30] [-runs 200] [-stores sqlite,postgres] [-pg-url URL]
//
// The default cardinality is an operator's (issue 47): 1,000 tenants × 10 keys (10,000 keys)
// × 50 aliases, 500,000 key×alias pairs, where per-key rollups hardly compress. The small one
// the earlier figures were made at is -tenants 5 -keys 4 -aliases 6.
//
// For each store it opens a fresh database (a file in a temporary directory; a fresh schema on
// the test PostgreSQL, dropped at the end), fills it with -tasks settled video tasks spread
// evenly over -days days, -tenants tenants of -keys keys each, -aliases aliases (each bound to
// a route and an upstream account) and three outcomes, by bulk SQL in big transactions (a
// recursive CTE on SQLite, generate_series on PostgreSQL). The rollups are then made by the
// store's RebuildUsage — the usage migration's backfill, the same statement an upgraded
// database runs — so they are exactly what the settlements would have added (the conformance
// suite checks that the rebuild equals the settlement path). Then it runs the report an
// operator asks for most, the last 30 days grouped by day and alias, -runs times through
// internal/usage, and prints p50, p99 and max; and the same for one key's own figures (GET
// /v1/billing/usage grouped by day).
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver

	"mediagen/internal/idgen"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/store/sqlite"
	"mediagen/internal/usage"
)

type config struct {
	tasks                        int64
	days, tenants, keys, aliases int
	runs                         int
	slots                        int
	batch                        int64
	start                        time.Time
}

func main() {
	var c config
	flag.Int64Var(&c.tasks, "tasks", 10_000_000, "settled tasks to fill")
	flag.IntVar(&c.days, "days", 30, "days the settlements spread over")
	flag.IntVar(&c.tenants, "tenants", 1000, "tenants (5 for the small cardinality)")
	flag.IntVar(&c.keys, "keys", 10, "keys per tenant (4 for the small cardinality)")
	flag.IntVar(&c.aliases, "aliases", 50, "aliases (each key uses every one; 6 for the small cardinality)")
	flag.IntVar(&c.slots, "slots", 1, "per-alias rows per alias and hour after the rebuild, up to 4: what settlements make with sqldb.usageSlots that many (1: the rebuild's)")
	flag.IntVar(&c.runs, "runs", 200, "report runs measured (after 5 warm-up runs)")
	flag.Int64Var(&c.batch, "batch", 1_000_000, "tasks per fill transaction")
	stores := flag.String("stores", "sqlite,postgres", "stores to measure")
	pgURL := flag.String("pg-url", envOr("MEDIAGEN_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL server for the postgres store")
	flag.Parse()
	c.start = time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	ctx := context.Background()
	fmt.Printf("usage report: %d settled tasks over %d days, %d tenants × %d keys, %d aliases, 3 outcomes\n",
		c.tasks, c.days, c.tenants, c.keys, c.aliases)
	for _, s := range strings.Split(*stores, ",") {
		var err error
		switch s {
		case "sqlite":
			err = runSQLite(ctx, c)
		case "postgres":
			err = runPostgres(ctx, c, *pgURL)
		default:
			err = fmt.Errorf("unknown store %q", s)
		}
		if err != nil {
			log.Printf("%s: %v", s, err)
		}
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func runSQLite(ctx context.Context, c config) error {
	dir, err := os.MkdirTemp("", "bench-usage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "usage.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)&_pragma=synchronous(OFF)&_txlock=immediate")
	if err != nil {
		return err
	}
	defer raw.Close()
	raw.SetMaxOpenConns(1)
	fill := `WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i + 1 < ?)
		INSERT INTO tasks (id, key_id, tenant_id, route, model, status, progress, client_request_id, payload_hash,
			request, pricing, reserved, charged, result, created_at, updated_at, finished_at, step, state)
		SELECT 'vid_' || i, ` + taskColumns + `, x'00', ` + jsonColumns + ` FROM n`
	return measure(ctx, "sqlite", db, raw, fill, c)
}

func runPostgres(ctx context.Context, c config, base string) error {
	admin, err := sql.Open("pgx", base)
	if err != nil {
		return err
	}
	defer admin.Close()
	schema := "bench_usage_" + strings.ToLower(idgen.Secret(5))
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	defer func() { _, _ = admin.Exec("DROP SCHEMA " + schema + " CASCADE") }()
	sep := "?"
	if strings.Contains(base, "?") {
		sep = "&"
	}
	url := base + sep + "search_path=" + schema
	db, err := postgres.Open(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	raw, err := sql.Open("pgx", url)
	if err != nil {
		return err
	}
	defer raw.Close()
	fill := `INSERT INTO tasks (id, key_id, tenant_id, route, model, status, progress, client_request_id, payload_hash,
			request, pricing, reserved, charged, result, created_at, updated_at, finished_at, step, state)
		SELECT 'vid_' || i, ` + taskColumns + `, '\x00'::bytea, ` + jsonColumns + ` FROM generate_series($1::bigint, $2::bigint - 1) AS i`
	return measure(ctx, "postgres", db, raw, fill, c)
}

// The filled tasks, as SQL over i (the task's number) and the parameters that follow the
// range: keys, tenants' keys, aliases, start (µs), span (µs). The same expressions on both
// dialects: integer arithmetic and || only.
//
//	key     i % keys                 (tenant: key / keys per tenant)
//	alias   (i / 7) % aliases        (route: alias % 3; upstream account: alias % 2)
//	outcome failed when i % 20 = 0, expired when i % 50 = 1, else completed
//	settled start + i × step, step = span / tasks (evenly over the days)
const taskColumns = `'key_' || (i % @K), 'tenant_' || ((i % @K) / @KPT),
	CASE ((i / 7) % @A) % 3 WHEN 0 THEN 'native' WHEN 1 THEN 'enhancement' ELSE 'production' END,
	'alias-' || ((i / 7) % @A),
	CASE WHEN i % 20 = 0 THEN 'failed' WHEN i % 50 = 1 THEN 'expired' ELSE 'completed' END,
	100, ''`

const jsonColumns = `'{"upstream":"acct-' || (((i / 7) % @A) % 2) || '","upstream_model":"m"}',
	'{"route":"native","currency":"USD","rate":1}',
	100000 + (i % 997) * 1000,
	CASE WHEN i % 20 = 0 OR i % 50 = 1 THEN 0 ELSE 90000 + (i % 997) * 900 END,
	CASE WHEN i % 20 = 0 OR i % 50 = 1 THEN '' ELSE '{"video_key":"v","duration":' || (4 + i % 7) || '.04,"fps":24,"width":1280,"height":720,"completion_tokens":' || (50000 + i % 1000) || '}' END,
	@S + i * @STEP - 60000000, @S + i * @STEP, @S + i * @STEP, 'done', ''`

func measure(ctx context.Context, name string, db *sqldb.DB, raw *sql.DB, fill string, c config) error {
	span := int64(c.days) * 24 * int64(time.Hour/time.Microsecond)
	nkeys := c.tenants * c.keys
	r := strings.NewReplacer("@KPT", fmt.Sprint(c.keys), "@K", fmt.Sprint(nkeys), "@A", fmt.Sprint(c.aliases),
		"@STEP", fmt.Sprint(span/c.tasks), "@S", fmt.Sprint(c.start.UnixMicro()))
	fill = r.Replace(fill)
	t0 := time.Now()
	for from := int64(0); from < c.tasks; from += c.batch {
		to := min(from+c.batch, c.tasks)
		tx, err := raw.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, fill, from, to); err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("fill %d..%d: %w", from, to, err)
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	fillTime := time.Since(t0)
	t1 := time.Now()
	if err := db.RebuildUsage(ctx); err != nil {
		return err
	}
	rebuildTime := time.Since(t1)
	// A rebuild writes each per-alias row in slot 0; settlements spread them over the key
	// hashes' slots, up to sqldb's usageSlots rows each (-slots shows what raising it costs). Copies with zero figures in
	// slots 1–3 make the per-alias grain as many rows as a settled database's, figures unchanged.
	if c.slots > 1 {
		for _, table := range []string{"usage_alias_hourly", "usage_alias_daily"} {
			bucket := "hour"
			if table == "usage_alias_daily" {
				bucket = "day"
			}
			spread := `INSERT INTO ` + table + ` (` + bucket + `, alias, route, upstream, currency, outcome, cost_currency, slot,
				count, seconds_us, tokens, characters, reserved, charged, overage, refunded, cost)
				SELECT ` + bucket + `, alias, route, upstream, currency, outcome, cost_currency, n.slot, 0, 0, 0, 0, 0, 0, 0, 0, 0
				FROM ` + table + ` JOIN slots n ON n.slot < ` + fmt.Sprint(c.slots) + ` WHERE ` + table + `.slot = 0`
			if _, err := raw.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS slots (slot INTEGER NOT NULL)`); err != nil {
				return err
			}
			if _, err := raw.ExecContext(ctx, `DELETE FROM slots`); err != nil {
				return err
			}
			if _, err := raw.ExecContext(ctx, `INSERT INTO slots (slot) VALUES (1), (2), (3)`); err != nil {
				return err
			}
			if _, err := raw.ExecContext(ctx, spread); err != nil {
				return fmt.Errorf("spread %s over slots: %w", table, err)
			}
		}
	}
	if name == "postgres" {
		if _, err := raw.ExecContext(ctx, "ANALYZE"); err != nil {
			return err
		}
	} else if _, err := raw.ExecContext(ctx, "PRAGMA analysis_limit=1000; ANALYZE"); err != nil {
		return err
	}
	fmt.Printf("\n%s: filled %d tasks in %s (%.0f/s); rollups rebuilt in %s\n", name, c.tasks,
		fillTime.Round(time.Millisecond), float64(c.tasks)/fillTime.Seconds(), rebuildTime.Round(time.Millisecond))
	for _, table := range []string{"usage_rollups", "usage_daily", "usage_alias_hourly", "usage_alias_daily", "usage_tenant_hourly", "usage_tenant_daily"} {
		var rows int64
		if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&rows); err != nil {
			return err
		}
		fmt.Printf("  %-20s %10d rows\n", table, rows)
	}
	t2 := time.Now()
	if err := db.RebuildUsageRange(ctx, c.start.Add(24*time.Hour), c.start.Add(48*time.Hour)); err != nil {
		return err
	}
	fmt.Printf("  rebuild of one day (mediagen admin usage rebuild -from -to): %s\n", time.Since(t2).Round(time.Millisecond))

	from := c.start
	to := from.Add(time.Duration(c.days) * 24 * time.Hour)
	queries := []struct {
		label string
		q     usage.Query
	}{
		{"30 days by day and alias (admin)", usage.Query{From: from, To: to, GroupBy: []string{store.UsageByDay, store.UsageByAlias}}},
		{"30 days by day, one key (GET /v1/billing/usage)", usage.Query{From: from, To: to, GroupBy: []string{store.UsageByDay}, Key: "key_3"}},
		{"30 days by tenant (admin)", usage.Query{From: from, To: to, GroupBy: []string{store.UsageByTenant}}},
		{"7 days by hour (console overview)", usage.Query{From: to.Add(-7 * 24 * time.Hour), To: to, GroupBy: []string{store.UsageByHour}}},
		{"30 days by alias, one tenant (admin)", usage.Query{From: from, To: to, GroupBy: []string{store.UsageByAlias}, Tenant: "tenant_3"}},
	}
	// cpu is this process's CPU time per run (p50): on SQLite the whole report's, which a
	// loaded machine stretches less than the wall time; on PostgreSQL the client's alone.
	fmt.Printf("%-50s %8s %8s %8s %8s %8s %6s\n", "report", "p50 ms", "p99 ms", "max ms", "cpu ms", "rows", "runs")
	for _, q := range queries {
		var lat, cpu []time.Duration
		var rep usage.Report
		for i := range c.runs + 5 {
			t, c0 := time.Now(), cpuTime()
			var err error
			rep, err = usage.Run(ctx, db, q.q, nil)
			if err != nil {
				return err
			}
			if i >= 5 {
				lat, cpu = append(lat, time.Since(t)), append(cpu, cpuTime()-c0)
			}
		}
		slices.Sort(lat)
		slices.Sort(cpu)
		var total int64
		for _, t := range rep.Totals {
			total += t.Count
		}
		if q.q.Key == "" && q.q.Tenant == "" && q.q.From.Equal(from) && total != c.tasks {
			return fmt.Errorf("%s: the report counts %d tasks, %d were filled", q.label, total, c.tasks)
		}
		fmt.Printf("%-50s %8.1f %8.1f %8.1f %8.1f %8d %6d\n", q.label, ms(lat[len(lat)/2]), ms(lat[(len(lat)*99)/100]), ms(lat[len(lat)-1]),
			ms(cpu[len(cpu)/2]), len(rep.Data), len(lat))
	}
	return nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
