// Command console measures the web console's pages (issue 27) on a big database: GET of each
// page of the tenant and the operator console, signed in, with 1M tasks stored.
//
//	go run ./bench/console [-tasks 10000000] [-tenants 1000 -keys 10 -aliases 50] [-runs 50] [-stores sqlite|postgres|sqlite,postgres] [-pg-url URL]
//
// The default cardinality is an operator's (issue 47): 1,000 tenants × 10 keys × 50 aliases.
// The earlier figures were made with -tasks 1000000 -tenants 3 -keys 4 -aliases 1.
//
// For each store (SQLite by default) it opens a fresh database (a file in a temporary
// directory; a fresh schema on the test PostgreSQL, dropped at the end, skipped when no server
// answers), on the demo catalog
// with -tenants tenants in all (the demo tenant and copies of it). It makes -keys keys per tenant
// and an owner admin token through admin.Service, one real task per key through video.Service
// (its template: the stored request and quote are what the service writes), then fills -tasks
// tasks by bulk SQL in big transactions (a recursive CTE on SQLite, generate_series on
// PostgreSQL): task i belongs to key i % keys, runs alias (i / 7) % aliases (its key's template
// task's alias, with "-n" after it but for n = 0), is created evenly over 30 days up to now, and is
// failed (5%), queued or in progress (0.2%) or completed. The usage rollups are then rebuilt by
// the store's RebuildUsage, the statement an upgraded database runs.
//
// The tenant console (console.NewTenant, signed in with the first key of the demo tenant) and the
// operator console (console.NewOperator, signed in with the owner token) are served by httptest
// on loopback. Each page of the table pages below is fetched -runs times after 3 warm-up
// fetches; the median, p99 and max of the whole GET (response read to the end) are printed. A
// page that answers 404 is printed as "not yet built"; another status as that status, untimed.
// The target is 100 ms per page (the console's brief).
//
// To add a page, add a line to pages; {task} is a task of the signed-in key in the middle of the
// table, {key} that key's id, {tenant} its tenant.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // the "sqlite" database/sql driver

	"mediagen/bench/internal/pgschema"
	"mediagen/internal/admin"
	"mediagen/internal/catalog"
	"mediagen/internal/console"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/store/sqlite"
	"mediagen/internal/video"
)

// pages are the console pages measured, in order. Console "tenant" or "operator".
var pages = []struct{ console, path string }{
	{"tenant", "/console/"},
	{"tenant", "/console/?status=completed"},
	{"tenant", "/console/?status=failed"},
	{"tenant", "/console/tasks/{task}"},
	{"tenant", "/console/usage"},
	{"tenant", "/console/assets"},
	{"tenant", "/console/create"},
	{"operator", "/console/"},
	{"operator", "/console/tenants"},
	{"operator", "/console/tenants?page=2"},
	{"operator", "/console/tenants?q=tenant-5"},
	{"operator", "/console/keys"},
	{"operator", "/console/keys/{key}"},
	{"operator", "/console/tasks"},
	{"operator", "/console/tasks?tenant={tenant}"},
	{"operator", "/console/tasks?status=failed"},
	{"operator", "/console/tasks/{task}"},
	{"operator", "/console/audit"},
}

type config struct {
	tasks         int64
	tenants, keys int
	aliases       int
	runs          int
	batch         int64
}

func main() {
	var c config
	flag.Int64Var(&c.tasks, "tasks", 10_000_000, "tasks to fill")
	flag.IntVar(&c.tenants, "tenants", 1000, "tenants (the demo tenant and copies of it)")
	flag.IntVar(&c.keys, "keys", 10, "keys per tenant")
	flag.IntVar(&c.aliases, "aliases", 50, "aliases the tasks are spread over")
	flag.IntVar(&c.runs, "runs", 50, "fetches of each page measured (after 3 warm-up fetches)")
	flag.Int64Var(&c.batch, "batch", 250_000, "tasks per fill transaction")
	stores := flag.String("stores", "sqlite", "stores to measure: sqlite, postgres or both (postgres adds its own fill, a few minutes)")
	pgURL := flag.String("pg-url", envOr("MEDIAGEN_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL server for the postgres store")
	flag.Parse()
	ctx := context.Background()
	fmt.Printf("console pages: %d tasks, %d tenants × %d keys, %d aliases, %d fetches per page\n", c.tasks, c.tenants, c.keys, c.aliases, c.runs)
	failed := false
	for _, s := range strings.Split(*stores, ",") {
		var err error
		switch strings.TrimSpace(s) {
		case "sqlite":
			err = runSQLite(ctx, c)
		case "postgres":
			err = runPostgres(ctx, c, *pgURL)
		default:
			err = fmt.Errorf("unknown store %q", s)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "console bench, %s: %v\n", s, err)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

func runSQLite(ctx context.Context, c config) error {
	dir, err := os.MkdirTemp("", "bench-console-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "console.db")
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
	series := `WITH RECURSIVE n(i) AS (SELECT @FROM UNION ALL SELECT i + 1 FROM n WHERE i + 1 < @TO) `
	return measure(ctx, "sqlite", db, raw, series, "FROM n", c)
}

func runPostgres(ctx context.Context, c config, base string) error {
	schema := "bench_console_" + strings.ToLower(idgen.Secret(5))
	u, drop, err := pgschema.Fresh(ctx, base, schema)
	if err != nil {
		fmt.Printf("\npostgres: skipped: %v\n", err)
		return nil
	}
	defer drop()
	db, err := postgres.Open(ctx, u)
	if err != nil {
		return err
	}
	defer db.Close()
	raw, err := sql.Open("pgx", u)
	if err != nil {
		return err
	}
	defer raw.Close()
	return measure(ctx, "postgres", db, raw, "", "FROM generate_series(@FROM::bigint, @TO::bigint - 1) AS n(i)", c)
}

// fillSelect makes task i from its key's template task t (k is bench_keys, the key of task i).
// Integer arithmetic, || and CASE only, so both dialects run it.
const fillSelect = `INSERT INTO tasks (id, key_id, tenant_id, route, model, status, progress, client_request_id, payload_hash,
		request, pricing, reserved, charged, result, error_code, error_message, created_at, updated_at, finished_at, step, state)
	SELECT 'video_b' || i, k.key_id, k.tenant_id, t.route,
		t.model || CASE WHEN (i / 7) % @A = 0 THEN '' ELSE '-' || ((i / 7) % @A) END,
		CASE WHEN i % 20 = 0 THEN 'failed' WHEN i % 997 = 1 THEN 'queued' WHEN i % 997 = 2 THEN 'in_progress' ELSE 'completed' END,
		CASE WHEN i % 997 = 1 THEN 0 WHEN i % 997 = 2 THEN 40 ELSE 100 END,
		'', t.payload_hash, t.request, t.pricing, t.reserved,
		CASE WHEN i % 20 = 0 OR i % 997 IN (1, 2) THEN 0 ELSE t.reserved - (i % 7) * 1000 END,
		CASE WHEN i % 20 = 0 OR i % 997 IN (1, 2) THEN '' ELSE '{"video_key":"v/' || i || '.mp4","duration":' || (4 + i % 7) || '.04,"fps":24,"width":1280,"height":720,"completion_tokens":' || (50000 + i % 1000) || '}' END,
		CASE WHEN i % 20 = 0 THEN 'upstream_failed' ELSE '' END,
		CASE WHEN i % 20 = 0 THEN 'The upstream provider could not render this video.' ELSE '' END,
		@S + i * @STEP, @S + i * @STEP + 60000000,
		CASE WHEN i % 997 IN (1, 2) THEN 0 ELSE @S + i * @STEP + 60000000 END,
		CASE WHEN i % 997 IN (1, 2) THEN t.step ELSE 'done' END,
		CASE WHEN i % 997 IN (1, 2) THEN t.state ELSE '' END
	`

// env is one store, filled, with both consoles signed in.
type env struct {
	tenant, operator *client
	task, key, ten   string
}

func measure(ctx context.Context, name string, db *sqldb.DB, raw *sql.DB, prefix, from string, c config) error {
	cat, err := benchCatalog(c.tenants)
	if err != nil {
		return err
	}
	catFn := func() *catalog.Catalog { return cat }
	svc := admin.New(admin.Config{Store: db, Catalog: catFn})
	cli := admin.CLIActor("bench")
	videos := &video.Service{Store: db, Now: time.Now}
	t0 := time.Now()
	// Keys, each with one real task made by the video service: the template of its tasks.
	if _, err := raw.ExecContext(ctx, `CREATE TABLE bench_keys (n INTEGER PRIMARY KEY, key_id TEXT NOT NULL, tenant_id TEXT NOT NULL, template TEXT NOT NULL)`); err != nil {
		return err
	}
	var firstSecret, firstKey, firstTenant string
	n := 0
	for _, tn := range cat.Tenants {
		for j := range c.keys {
			made, err := svc.CreateKey(ctx, cli, admin.KeyInput{Tenant: tn.ID, Name: fmt.Sprintf("bench %d", j), Credit: 1_000_000_000_000})
			if err != nil {
				return fmt.Errorf("create key: %w", err)
			}
			key, err := db.KeyByHash(ctx, keys.Hash(made.Secret))
			if err != nil {
				return err
			}
			body := fmt.Sprintf(`{"model":"demo-video-fast","prompt":"a red kite over the sea","metadata":{"duration":4,"resolution":"480p","ratio":"16:9","client_request_id":"template-%d"}}`, n)
			task, _, err := videos.Create(ctx, keys.Caller{Key: key, Tenant: tn, Catalog: cat}, []byte(body))
			if err != nil {
				return fmt.Errorf("template task: %w", err)
			}
			if _, err := raw.ExecContext(ctx, bind(name == "postgres", `INSERT INTO bench_keys (n, key_id, tenant_id, template) VALUES (?, ?, ?, ?)`), n, key.ID, tn.ID, task.ID); err != nil {
				return err
			}
			if n == 0 {
				firstSecret, firstKey, firstTenant = made.Secret, key.ID, tn.ID
			}
			n++
		}
	}
	owner, err := svc.CreateToken(ctx, cli, admin.TokenInput{Name: "bench-owner", Role: string(admin.RoleOwner)})
	if err != nil {
		return err
	}
	// The tasks, in big transactions.
	span := int64(30 * 24 * time.Hour / time.Microsecond)
	start := time.Now().Add(-30 * 24 * time.Hour).UnixMicro()
	fill := prefix + fillSelect + from + ` JOIN bench_keys k ON k.n = i % @K JOIN tasks t ON t.id = k.template`
	fill = strings.NewReplacer("@K", fmt.Sprint(n), "@A", fmt.Sprint(max(c.aliases, 1)), "@STEP", fmt.Sprint(span/c.tasks), "@S", fmt.Sprint(start)).Replace(fill)
	for lo := int64(0); lo < c.tasks; lo += c.batch {
		hi := min(lo+c.batch, c.tasks)
		q := strings.NewReplacer("@FROM", fmt.Sprint(lo), "@TO", fmt.Sprint(hi)).Replace(fill)
		if _, err := raw.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("fill %d..%d: %w", lo, hi, err)
		}
	}
	fillTime := time.Since(t0)
	t1 := time.Now()
	if err := db.RebuildUsage(ctx); err != nil {
		return err
	}
	rebuildTime := time.Since(t1)
	t2 := time.Now()
	analyze := "ANALYZE"
	if name == "sqlite" {
		// A sampled ANALYZE (SQLite's recommended limit): the full one reads every index.
		analyze = "PRAGMA analysis_limit=1000; ANALYZE"
	}
	if _, err := raw.ExecContext(ctx, analyze); err != nil {
		return err
	}
	fmt.Printf("\n%s: %d keys and %d tasks filled in %s; usage rollups rebuilt in %s; analyzed in %s\n", name, n, c.tasks,
		fillTime.Round(time.Millisecond), rebuildTime.Round(time.Millisecond), time.Since(t2).Round(time.Millisecond))

	// The consoles, signed in.
	common := console.Common{Sessions: db}
	tc, err := console.NewTenant(console.TenantConfig{Common: common, Store: db, Catalogs: catalog.Static(cat), Videos: videos})
	if err != nil {
		return err
	}
	oc, err := console.NewOperator(console.OperatorConfig{Common: common, Admin: svc})
	if err != nil {
		return err
	}
	tsrv, osrv := httptest.NewServer(tc), httptest.NewServer(oc)
	defer tsrv.Close()
	defer osrv.Close()
	e := env{task: fmt.Sprintf("video_b%d", (c.tasks/2)/int64(n)*int64(n)), key: firstKey, ten: firstTenant}
	if e.tenant, err = signIn(tsrv.URL, firstSecret); err != nil {
		return fmt.Errorf("tenant console: %w", err)
	}
	if e.operator, err = signIn(osrv.URL, owner.Secret); err != nil {
		return fmt.Errorf("operator console: %w", err)
	}

	fmt.Printf("%-9s %-36s %8s %8s %8s %8s\n", "CONSOLE", "PAGE", "P50 ms", "P99 ms", "MAX ms", "KB")
	for _, p := range pages {
		path := strings.NewReplacer("{task}", e.task, "{key}", url.PathEscape(e.key), "{tenant}", url.QueryEscape(e.ten)).Replace(p.path)
		cl := e.tenant
		if p.console == "operator" {
			cl = e.operator
		}
		status, size, err := cl.get(path)
		switch {
		case err != nil:
			fmt.Printf("%-9s %-36s %s\n", p.console, p.path, err)
			continue
		case status == http.StatusNotFound:
			fmt.Printf("%-9s %-36s not yet built (404)\n", p.console, p.path)
			continue
		case status != http.StatusOK:
			fmt.Printf("%-9s %-36s answered %d, not timed\n", p.console, p.path, status)
			continue
		}
		var lat []time.Duration
		for i := range c.runs + 3 {
			t := time.Now()
			if _, _, err := cl.get(path); err != nil {
				return err
			}
			if i >= 3 {
				lat = append(lat, time.Since(t))
			}
		}
		slices.Sort(lat)
		fmt.Printf("%-9s %-36s %8.1f %8.1f %8.1f %8.1f\n", p.console, p.path, ms(lat[len(lat)/2]), ms(lat[len(lat)*99/100]), ms(lat[len(lat)-1]), float64(size)/1024)
	}
	return nil
}

// bind writes ? placeholders as $n for PostgreSQL.
func bind(postgres bool, q string) string {
	if !postgres {
		return q
	}
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// benchCatalog is the demo catalog with n tenants: the demo tenant and copies of it.
func benchCatalog(n int) (*catalog.Catalog, error) {
	y := catalog.DemoYAML()
	i := bytes.Index(y, []byte("\n  - id: demo\n"))
	if i < 0 {
		return nil, errors.New("the demo catalog has no demo tenant block")
	}
	block := string(y[i:])
	out := bytes.Clone(y)
	for j := 2; j <= n; j++ {
		b := strings.Replace(block, "\n  - id: demo\n", fmt.Sprintf("\n  - id: tenant-%d\n", j), 1)
		b = strings.Replace(b, "name: Demo tenant", fmt.Sprintf("name: Tenant %d", j), 1)
		out = append(out, b...)
	}
	return catalog.Parse("bench.yaml", out)
}

// client is a signed-in browser: a cookie jar, no redirects followed.
type client struct {
	base string
	http *http.Client
}

func signIn(base, secret string) (*client, error) {
	jar, _ := cookiejar.New(nil)
	c := &client{base: base, http: &http.Client{Jar: jar, Timeout: time.Minute,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	req, err := http.NewRequest(http.MethodPost, base+"/console/signin", strings.NewReader(url.Values{"secret": {secret}, "next": {"/console/"}}.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	res, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		return nil, fmt.Errorf("sign in: %d %s", res.StatusCode, body)
	}
	return c, nil
}

// get fetches path and reads the whole answer.
func (c *client) get(path string) (status int, size int64, err error) {
	res, err := c.http.Get(c.base + path)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	size, err = io.Copy(io.Discard, res.Body)
	if res.StatusCode == http.StatusSeeOther {
		return 0, 0, fmt.Errorf("redirected to %s (signed out?)", res.Header.Get("Location"))
	}
	return res.StatusCode, size, err
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
