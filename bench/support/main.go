// Command support measures the support searches (docs/admin.md, "Support: finding a task")
// and GET /v1/videos's query on a big tasks table, on SQLite and PostgreSQL: it fills the table
// with -tasks synthetic tasks (10 tenants, 1,000 keys, 5 aliases, 3 routes, 2% failed, 30 days)
// and one upstream-job event each, then runs each search -runs times through the store and
// prints its latency and the database's plan (EXPLAIN), so a search that stops using its index
// shows as a scan. Figures, never a pass or fail.
//
//	go run ./bench/support -tasks 1000000
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/store/sqlite"
)

const days = 30

func main() {
	n := flag.Int("tasks", 1_000_000, "tasks to fill the table with")
	runs := flag.Int("runs", 50, "runs of each search")
	stores := flag.String("stores", "sqlite,postgres", "stores to measure")
	pgURL := flag.String("pg-url", envOr("MEDIAGEN_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL server; a fresh schema is made and dropped")
	flag.Parse()
	ctx := context.Background()
	for _, s := range strings.Split(*stores, ",") {
		var err error
		switch strings.TrimSpace(s) {
		case "sqlite":
			err = runSQLite(ctx, *n, *runs)
		case "postgres":
			err = runPostgres(ctx, *pgURL, *n, *runs)
		default:
			err = fmt.Errorf("unknown store %q", s)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "support bench:", err)
			os.Exit(1)
		}
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// base is the creation time of the first task; the last is days later.
var base = time.Now().UTC().Add(-days * 24 * time.Hour).Truncate(time.Second)

func step(n int) int64 { return int64(days*24*time.Hour/time.Microsecond) / int64(n) }

func runSQLite(ctx context.Context, n, runs int) error {
	dir, err := os.MkdirTemp("", "support-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "bench.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	defer db.Close()
	raw, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(WAL)")
	if err != nil {
		return err
	}
	defer raw.Close()
	start := time.Now()
	const chunk = 200_000
	for lo := 0; lo < n; lo += chunk {
		hi := min(lo+chunk, n)
		_, err := raw.ExecContext(ctx, `WITH RECURSIVE s(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM s WHERE i + 1 < ?)
			INSERT INTO tasks (id, key_id, tenant_id, route, model, status, progress, client_request_id, payload_hash,
				request, pricing, reserved, charged, created_at, updated_at, finished_at)
			SELECT printf('video_b%09d', i), printf('key_%04d', i % 1000), printf('tenant_%d', (i % 1000) % 10),
				CASE i % 3 WHEN 0 THEN 'native' WHEN 1 THEN 'production' ELSE 'enhancement' END,
				printf('alias-%d', i % 5),
				CASE WHEN i % 50 = 0 THEN 'failed' WHEN i % 997 = 1 THEN 'queued' ELSE 'completed' END,
				100, '', x'01', '', '', 1000, 1000, ? + i * ?, ? + i * ?, ? + i * ? FROM s`,
			lo, hi, base.UnixMicro(), step(n), base.UnixMicro(), step(n), base.UnixMicro(), step(n))
		if err != nil {
			return fmt.Errorf("fill tasks: %w", err)
		}
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO task_events (task_id, seq, at, from_status, to_status, upstream_job)
		SELECT id, 1, created_at, 'in_progress', status, 'job-' || substr(id, 7) FROM tasks`); err != nil {
		return fmt.Errorf("fill events: %w", err)
	}
	if _, err := raw.ExecContext(ctx, `ANALYZE`); err != nil {
		return err
	}
	fmt.Printf("sqlite: %d tasks and events filled in %s\n", n, time.Since(start).Round(time.Second))
	return measure(ctx, "sqlite", db, n, runs)
}

func runPostgres(ctx context.Context, base0 string, n, runs int) error {
	schema := fmt.Sprintf("support_bench_%d", time.Now().UnixNano())
	admin, err := sql.Open("pgx", base0)
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := admin.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		return fmt.Errorf("create schema: %w", err)
	}
	defer admin.ExecContext(context.Background(), `DROP SCHEMA IF EXISTS `+schema+` CASCADE`) //nolint:errcheck
	u, err := url.Parse(base0)
	if err != nil {
		return err
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	db, err := postgres.Open(ctx, u.String())
	if err != nil {
		return err
	}
	defer db.Close()
	raw, err := sql.Open("pgx", u.String())
	if err != nil {
		return err
	}
	defer raw.Close()
	start := time.Now()
	if _, err := raw.ExecContext(ctx, `INSERT INTO tasks (id, key_id, tenant_id, route, model, status, progress, client_request_id,
			payload_hash, request, pricing, reserved, charged, created_at, updated_at, finished_at)
		SELECT 'video_b' || lpad(i::text, 9, '0'), 'key_' || lpad((i % 1000)::text, 4, '0'), 'tenant_' || ((i % 1000) % 10),
			CASE i % 3 WHEN 0 THEN 'native' WHEN 1 THEN 'production' ELSE 'enhancement' END,
			'alias-' || (i % 5),
			CASE WHEN i % 50 = 0 THEN 'failed' WHEN i % 997 = 1 THEN 'queued' ELSE 'completed' END,
			100, '', '\x01'::bytea, '', '', 1000, 1000, $1::bigint + i::bigint * $2::bigint, $1::bigint + i::bigint * $2::bigint, $1::bigint + i::bigint * $2::bigint
		FROM generate_series(0, $3::int - 1) AS i`, base.UnixMicro(), step(n), n); err != nil {
		return fmt.Errorf("fill tasks: %w", err)
	}
	if _, err := raw.ExecContext(ctx, `INSERT INTO task_events (task_id, seq, at, from_status, to_status, upstream_job)
		SELECT id, 1, created_at, 'in_progress', status, 'job-' || substr(id, 7) FROM tasks`); err != nil {
		return fmt.Errorf("fill events: %w", err)
	}
	if _, err := raw.ExecContext(ctx, `ANALYZE`); err != nil {
		return err
	}
	fmt.Printf("postgres: %d tasks and events filled in %s\n", n, time.Since(start).Round(time.Second))
	return measure(ctx, "postgres", db, n, runs)
}

type search struct {
	name string
	f    store.TaskFilter
}

func measure(ctx context.Context, name string, db *sqldb.DB, n, runs int) error {
	mid := fmt.Sprintf("video_b%09d", n/2)
	midAt := base.Add(time.Duration(int64(n/2)*step(n)) * time.Microsecond)
	last := base.Add(days * 24 * time.Hour)
	page := store.Page{Limit: 51}
	searches := []search{
		{"newest 50, no filter", store.TaskFilter{Page: page}},
		{"tenant", store.TaskFilter{TenantID: "tenant_3", Page: page}},
		{"key (admin)", store.TaskFilter{KeyID: "key_0042", Page: page}},
		{"key, GET /v1/videos limit 20", store.TaskFilter{KeyID: "key_0042", Page: store.Page{Limit: 21}}},
		{"key + status failed", store.TaskFilter{KeyID: "key_0050", Status: "failed", Page: page}},
		{"status failed (2%)", store.TaskFilter{Status: "failed", Page: page}},
		{"status queued (0.1%)", store.TaskFilter{Status: "queued", Page: page}},
		{"alias", store.TaskFilter{Model: "alias-3", Page: page}},
		{"tenant + alias + route", store.TaskFilter{TenantID: "tenant_3", Model: "alias-3", Route: "native", Page: page}},
		{"last 24 h", store.TaskFilter{CreatedFrom: last.Add(-24 * time.Hour), Page: page}},
		{"tenant, one day 15 days ago", store.TaskFilter{TenantID: "tenant_3", CreatedFrom: midAt, CreatedTo: midAt.Add(24 * time.Hour), Page: page}},
		{"upstream job", store.TaskFilter{UpstreamJob: "job-" + mid[len("video_"):], Page: page}},
		{"after a cursor mid-table", store.TaskFilter{Page: store.Page{Limit: 51, AfterAt: midAt, AfterID: mid}}},
		{"key, after a cursor mid-table", store.TaskFilter{KeyID: "key_0000", Page: store.Page{Limit: 51, AfterAt: midAt, AfterID: mid}}},
	}
	fmt.Printf("\n%s, %d tasks: each search %d times through the store (ms)\n", name, n, runs)
	fmt.Printf("%-32s %6s %8s %8s %8s  %s\n", "SEARCH", "ROWS", "P50", "P99", "MAX", "PLAN")
	for _, s := range searches {
		var lat []time.Duration
		rows := 0
		for range runs {
			t0 := time.Now()
			got, err := db.SearchTasks(ctx, s.f)
			lat = append(lat, time.Since(t0))
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			rows = len(got)
		}
		slices.Sort(lat)
		plan, err := db.ExplainSearchTasks(ctx, s.f)
		if err != nil {
			return err
		}
		fmt.Printf("%-32s %6d %8.3f %8.3f %8.3f  %s\n", s.name, rows, ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), ms(lat[len(lat)-1]),
			strings.Join(plan, " | "))
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
