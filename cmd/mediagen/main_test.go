package main

import (
	"bytes"
	"context"
	"database/sql"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/testkit"
)

// The tests' PostgreSQL databases are clones of one the migrations made once (pgtest).
func init() { pgtest.UseTemplate(postgres.MigrationsDigest(), postgres.Migrate) }

// TestMain lets a test run this binary's main() in a child process (to check exit codes)
// by re-executing the test binary with MEDIAGEN_TEST_MAIN=1.
func TestMain(m *testing.M) {
	if f := os.Getenv("MEDIAGEN_TEST_COUNT_FILE"); f != "" {
		os.Exit(countingWorker(f, strings.Fields(os.Getenv("MEDIAGEN_TEST_ARGS"))))
	}
	if os.Getenv("MEDIAGEN_TEST_MAIN") == "1" {
		os.Args = append([]string{"mediagen"}, strings.Fields(os.Getenv("MEDIAGEN_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	// Child processes (serve in its own process, the CLI) read the environment.
	for k, v := range testDefaults {
		if os.Getenv(k) == "" {
			_ = os.Setenv(k, v)
		}
	}
	code := m.Run()
	removeSharedClips()
	os.Exit(code)
}

func env(vars map[string]string) func(string) string {
	return func(k string) string {
		if v, ok := vars[k]; ok {
			return v
		}
		return testDefaults[k]
	}
}

// testDefaults are the settings every service a test starts runs with unless it says
// otherwise. The x264/x265 preset ultrafast takes two thirds off the CPU of the media the
// sandbox engine encodes (the largest share of this package's run, measured with a PATH shim
// around ffmpeg); what is measured and billed is the same at every preset.
var testDefaults = map[string]string{"MEDIAGEN_ENCODE_PRESET": "ultrafast"}

// seedSQLite gives a service about to start on a fresh data directory the migrated, empty
// SQLite database of testkit instead of migrating its own (about 60 ms each, for a hundred
// services a run). Nothing is written when args name another database or the file exists.
func seedSQLite(t *testing.T, dataDir string, args []string) {
	t.Helper()
	if slices.Contains(args, "--db") {
		return
	}
	path := filepath.Join(dataDir, "mediagen.db")
	if _, err := os.Stat(path); err == nil {
		return
	}
	testkit.SQLiteFile(t, path)
}

// startMain runs serve on 127.0.0.1:0 with a fresh data directory unless args say otherwise.
func startMain(t *testing.T, dataDir string, extra ...string) (*Main, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	m := NewMain(env(nil), &out, io.Discard)
	args := append([]string{"--listen", "127.0.0.1:0", "--data-dir", dataDir}, extra...)
	seedSQLite(t, dataDir, args)
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, &out
}

func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

var reKey = regexp.MustCompile(`mg_[a-z2-7]{40}`)

// startTerminalMain is startMain with stdout taken for a terminal (the demo key's banner is
// printed there only) and the log kept.
func startTerminalMain(t *testing.T, dataDir string) (m *Main, stdout *bytes.Buffer, log *syncBuffer) {
	t.Helper()
	stdout, log = &bytes.Buffer{}, &syncBuffer{}
	m = NewMain(env(nil), stdout, log)
	m.Terminal = true
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", dataDir}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return m, stdout, log
}

func TestFirstRunPrintsDemoKeyOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m, out, _ := startTerminalMain(t, dir)
	key := reKey.FindString(out.String())
	if key == "" || key != m.DemoKey {
		t.Fatalf("no demo key printed:\n%s", out)
	}
	if !strings.Contains(out.String(), `curl -s -H "Authorization: Bearer `+key+`" `+m.URL()+`/v1/billing/balance`) {
		t.Errorf("no ready-to-paste curl line:\n%s", out)
	}
	status, body := get(t, m.URL()+"/v1/billing/balance", key)
	if status != 200 || !strings.Contains(body, `"available":100,`) || !strings.Contains(body, `"currency":"USD"`) {
		t.Fatalf("balance %d %s", status, body)
	}
	_ = m.Close()

	m2, out2, log2 := startTerminalMain(t, dir)
	if reKey.MatchString(out2.String()+log2.String()) || m2.DemoKey != "" {
		t.Fatalf("second run made another key:\n%s", out2)
	}
	if !strings.Contains(log2.String(), "made on the first start") || !strings.Contains(log2.String(), "mediagen admin key rotate key_") {
		t.Errorf("second run does not explain where the key went:\n%s", log2)
	}
	if status, _ := get(t, m2.URL()+"/v1/billing/balance", key); status != 200 {
		t.Errorf("first key no longer works: %d", status)
	}
}

func TestBrokenConfigurationStopsServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	demo, err := os.ReadFile("../../internal/catalog/demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	unknownKey := write("unknown-key.yaml", strings.Replace(string(demo), "    currency: USD\n", "    currency: USD\n    colour: blue\n", 1))
	unknownFamily := write("unknown-family.yaml", strings.Replace(string(demo), "family: fast-2.0", "family: turbo-9", 1))
	tinyRate := write("tiny-rate.yaml", strings.Replace(string(demo), "requests_per_second: 100\n", "requests_per_second: 1e-11\n", 1))
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad database URL", []string{"--db", "mysql://x"}, `unsupported database URL "mysql://x"`},
		{"unreachable postgres", []string{"--db", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2", "--db-wait", "0"}, "postgres: connect to"},
		{"postgres unreachable for all of --db-wait", []string{"--db", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2", "--db-wait", "1500ms"}, "postgres: connect to"},
		{"missing catalog", []string{"--catalog", filepath.Join(dir, "nope.yaml")}, "nope.yaml: no such file"},
		{"unknown key in catalog", []string{"--catalog", unknownKey}, `unknown key "colour"`},
		{"unknown family", []string{"--catalog", unknownFamily}, `unknown family "turbo-9"`},
		{"rate below one request a day", []string{"--catalog", tinyRate}, "line 8: requests_per_second must be from 0.00001 (about one request a day) to 1000000000, or unlimited, not 1e-11"},
		{"negative --limit-replicas", []string{"--limit-replicas", "-1"}, "--limit-replicas must be from 0 to 1000"},
		{"huge --limit-replicas", []string{"--limit-replicas", "1001"}, "--limit-replicas must be from 0 to 1000 (0 and 1 both enforce the full rates), not 1001"},
		{"negative --media-slots", []string{"--media-slots", "-1"}, "--media-slots must be from 0 (derived from the cores and memory) to 1024, not -1"},
		{"huge --media-slots", []string{"--media-slots", "1025"}, "--media-slots must be from 0 (derived from the cores and memory) to 1024, not 1025"},
		{"--task-retry-max under a second", []string{"--task-retry-max", "500ms"}, "--task-retry-max must be from 1s to 1h"},
		{"unknown --encode-preset", []string{"--encode-preset", "placebo"}, `--encode-preset "placebo": want one of ultrafast, superfast, veryfast, faster, fast, medium, slow, slower, veryslow`},
		{"bad log format", []string{"--log-format", "xml"}, "--log-format"},
		{"busy listen address", nil, "listen on"},
	}
	busy, _ := startMain(t, t.TempDir())
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"serve", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0"}, tt.args...)
			if tt.name == "busy listen address" {
				args = append(args, "--listen", strings.TrimPrefix(busy.URL(), "http://"))
			}
			err := run(context.Background(), args, env(nil), io.Discard, io.Discard)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
			if exitCode(err) == 0 {
				t.Error("exit code 0")
			}
		})
	}
}

func TestBrokenConfigurationExitsNonZero(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "MEDIAGEN_TEST_MAIN=1", "MEDIAGEN_TEST_ARGS=serve --db mysql://x --data-dir "+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	ee, ok := err.(*exec.ExitError)
	if !ok || ee.ExitCode() == 0 {
		t.Fatalf("exit: %v", err)
	}
	if !strings.Contains(stderr.String(), "mediagen: unsupported database URL") {
		t.Errorf("stderr = %q", stderr.String())
	}
}

func TestEnvironmentConfiguresServe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := NewMain(env(map[string]string{"MEDIAGEN_LISTEN": "127.0.0.1:0", "MEDIAGEN_DATA_DIR": dir, "MEDIAGEN_LOG_FORMAT": "json"}), io.Discard, io.Discard)
	if err := m.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if m.Config.DB != "sqlite:"+filepath.Join(dir, "mediagen.db") || m.Config.LogFormat != "json" {
		t.Fatalf("config = %+v", m.Config)
	}
}

func TestServeSetsGCTargetUnlessGOGCIsSet(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want int // 0: serve leaves the collector alone
	}{
		{"default", nil, 400},
		{"chosen by flag env", map[string]string{"MEDIAGEN_GC_PERCENT": "200"}, 200},
		{"GOGC wins", map[string]string{"GOGC": "50", "MEDIAGEN_GC_PERCENT": "200"}, 0},
		{"off", map[string]string{"MEDIAGEN_GC_PERCENT": "0"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMain(env(tt.env), io.Discard, io.Discard)
			if err := m.ParseFlags(nil); err != nil {
				t.Fatal(err)
			}
			pct, ok := m.Config.gcTarget()
			if got := map[bool]int{true: pct}[ok]; got != tt.want {
				t.Errorf("gc target = %d (set %v), want %d", pct, ok, tt.want)
			}
		})
	}
}

func TestServeSetsMemoryLimitUnlessGOMEMLIMITIsSet(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want int64 // 0: serve leaves the limit alone
	}{
		{"default", nil, 256 << 20},
		{"chosen by flag env", map[string]string{"MEDIAGEN_MEMORY_LIMIT_MB": "1024"}, 1024 << 20},
		{"GOMEMLIMIT wins", map[string]string{"GOMEMLIMIT": "1GiB", "MEDIAGEN_MEMORY_LIMIT_MB": "512"}, 0},
		{"off", map[string]string{"MEDIAGEN_MEMORY_LIMIT_MB": "0"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMain(env(tt.env), io.Discard, io.Discard)
			if err := m.ParseFlags(nil); err != nil {
				t.Fatal(err)
			}
			limit, ok := m.Config.memoryLimit()
			if got := map[bool]int64{true: limit}[ok]; got != tt.want {
				t.Errorf("memory limit = %d (set %v), want %d", limit, ok, tt.want)
			}
		})
	}
}

// admin runs an admin command against the data directory and returns its output.
func admin(t *testing.T, dataDir string, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	all := append([]string{"admin"}, args...)
	all = append(all, "--data-dir", dataDir)
	if err := run(context.Background(), all, env(nil), &out, &errOut); err != nil {
		t.Fatalf("admin %v: %v\n%s", args, err, errOut.String())
	}
	return out.String()
}

func TestAdminKeyCreditAndBalanceAgree(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out := admin(t, dir, "key", "create", "--tenant", "demo", "--name", "ci")
	secret := reKey.FindString(out)
	id := regexp.MustCompile(`key id:\s+(key_\S+)`).FindStringSubmatch(out)
	if secret == "" || id == nil {
		t.Fatalf("key create output:\n%s", out)
	}
	for _, amount := range []string{"12.50", "0.000001", "7"} {
		admin(t, dir, "credit", "--key", id[1], "--amount", amount, "--note", "top-up")
	}
	list := admin(t, dir, "key", "list", "--tenant", "demo")
	if !strings.Contains(list, id[1]) || !strings.Contains(list, "19.500001 USD") {
		t.Errorf("key list:\n%s", list)
	}
	m, _ := startMain(t, dir, "--key-cache-ttl", "200ms")
	status, body := get(t, m.URL()+"/v1/billing/balance", secret)
	if status != 200 || !strings.Contains(body, `"available":119.500001,`) && !strings.Contains(body, `"available":19.500001,`) {
		t.Fatalf("balance %d %s", status, body)
	}
	if !strings.Contains(body, `"available":19.500001,`) {
		t.Fatalf("balance is not exactly 12.50 + 0.000001 + 7: %s", body)
	}
	admin(t, dir, "key", "revoke", id[1])
	// The server remembers keys for --key-cache-ttl (2 s by default, 200 ms here): the
	// revocation, made by another process, takes effect within it.
	var revoked int
	if !testkit.PollEvery(20*time.Millisecond, 5*time.Second, func() bool {
		revoked, _ = get(t, m.URL()+"/v1/billing/balance", secret)
		return revoked == 401
	}) {
		t.Fatalf("revoked key still answered %d after 5 s", revoked)
	}
	tenants := admin(t, dir, "tenant", "list")
	if !strings.Contains(tenants, "demo") || !strings.Contains(tenants, "USD") {
		t.Errorf("tenant list:\n%s", tenants)
	}
	if out := admin(t, dir, "ledger", "check"); !strings.Contains(out, "ledger: OK") {
		t.Errorf("ledger check:\n%s", out)
	}
}

// admin ledger check fails, naming the problem, on a ledger that does not balance (an entry
// written around the service, as a bad restore or a manual edit would).
func TestAdminLedgerCheckFindsAnUnbalancedLedger(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	admin(t, dir, "key", "create", "--tenant", "demo", "--name", "ci")
	raw, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "mediagen.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	_, err = raw.Exec(`INSERT INTO ledger_txns (id, kind, ref, note, created_at) VALUES ('txn_forged', 'credit', '', 'forged', 0);
		INSERT INTO ledger_entries (txn_id, account_id, amount) SELECT 'txn_forged', id, 5 FROM accounts LIMIT 1;`)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	err = run(context.Background(), []string{"admin", "ledger", "check", "--data-dir", dir}, env(nil), &out, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "ledger check") {
		t.Fatalf("ledger check of an unbalanced ledger: %v %s", err, out.String())
	}
}

func TestAdminRejectsBadInput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cases := [][]string{
		{"admin", "key", "create", "--tenant", "nobody"},
		{"admin", "key", "create"},
		{"admin", "credit", "--key", "key_missing", "--amount", "1"},
		{"admin", "credit", "--key", "k", "--amount", "-1"},
		{"admin", "credit", "--key", "k", "--amount", "1.0000001"},
		{"admin", "key", "revoke", "key_missing"},
		{"admin", "catalog", "check", "../../internal/catalog/nope.yaml"},
		{"admin", "frobnicate"},
	}
	for _, args := range cases {
		err := run(context.Background(), append(args, "--data-dir", dir), env(nil), io.Discard, io.Discard)
		if err == nil || exitCode(err) == 0 {
			t.Errorf("%v: err = %v", args, err)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"admin", "catalog", "check", "../../examples/catalog.yaml"}, env(nil), &out, io.Discard); err != nil || !strings.Contains(out.String(), "OK (2 tenants") {
		t.Errorf("catalog check: %v %s", err, out.String())
	}
	// Every example catalog passes the check of the file (--file-only: the remote accounts'
	// keys are not on this machine).
	examples, _ := filepath.Glob("../../examples/*.yaml")
	if len(examples) < 3 {
		t.Fatalf("example catalogs: %v", examples)
	}
	for _, f := range examples {
		out.Reset()
		if err := run(context.Background(), []string{"admin", "catalog", "check", "--file-only", f}, env(nil), &out, io.Discard); err != nil || !strings.Contains(out.String(), ": OK") {
			t.Errorf("catalog check %s: %v %s", f, err, out.String())
		}
	}
}

// TestSecondServeOnOneSQLiteDatabaseIsRefused: SQLite serves one process, and the task cache
// relies on it; a second serve must say so instead of starting. Admin commands still work.
func TestSecondServeOnOneSQLiteDatabaseIsRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	startMain(t, dir)
	second := NewMain(env(nil), io.Discard, io.Discard)
	if err := second.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", dir}); err != nil {
		t.Fatal(err)
	}
	err := second.Run(context.Background())
	_ = second.Close()
	if err == nil || !strings.Contains(err.Error(), "another mediagen serve process is using this SQLite database") {
		t.Fatalf("second serve: %v", err)
	}
	if out := admin(t, dir, "tenant", "list"); out == "" {
		t.Error("admin tenant list printed nothing while serve runs")
	}
}

// /metrics names upstream accounts and shows volumes: with --metrics-listen it is served only
// on that address, and the public API address answers it like any unknown path.
func TestMetricsListenTakesMetricsOffTheAPIAddress(t *testing.T) {
	t.Parallel()
	m, _ := startMain(t, t.TempDir(), "--role", "api", "--metrics-listen", "127.0.0.1:0")
	if code, body := get(t, m.URL()+"/metrics", ""); code != http.StatusNotFound || strings.Contains(body, "mediagen_") {
		t.Fatalf("API address /metrics: %d %.80s, want a 404 without series", code, body)
	}
	code, body := get(t, "http://"+m.metricsAddr+"/metrics", "")
	if code != http.StatusOK || !strings.Contains(body, "mediagen_http_requests_total") {
		t.Fatalf("metrics address: %d %.200s, want the series", code, body)
	}
	if code, _ := get(t, m.URL()+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("healthz on the API address: %d", code)
	}

	plain, _ := startMain(t, t.TempDir(), "--role", "api")
	if code, body := get(t, plain.URL()+"/metrics", ""); code != http.StatusOK || !strings.Contains(body, "mediagen_") {
		t.Fatalf("without --metrics-listen: %d %.80s, want the series on the API address", code, body)
	}
}
