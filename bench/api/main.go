// Command api benchmarks the HTTP API of mediagen against a bare net/http baseline, on each
// store (SQLite, PostgreSQL). The servers run as their own processes on 127.0.0.1; the load
// generator (bench/load) runs in this process. It prints figures and never fails on a number:
// the exit status is non-zero only when the harness itself could not run.
//
//	go run ./bench/api            # 10 s per measurement, both stores (about 4 minutes)
//	go run ./bench/api -quick     # 1 s per measurement, a smoke test
//	go run ./bench/api -stores sqlite -duration 5s -rate 3000
//
// What it does, per store: start `mediagen serve` on a free port with a fresh data directory
// (SQLite) or a fresh schema (PostgreSQL), make an unlimited key with `mediagen admin key
// create`, seed tasks with POST /v1/videos, then measure each target closed-loop (maximum
// throughput) and open-loop at a fixed rate (latency without coordinated omission). See
// bench/README.md for what each figure means.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"mediagen/bench/internal/democat"
	"mediagen/bench/internal/pgschema"
	"mediagen/bench/internal/proc"

	"mediagen/bench/load"
)

type options struct {
	duration, warmup   time.Duration
	rate, createRate   float64
	concurrency        int
	maxInFlight        int
	stores             []string
	mediagen, bare     string
	pgURL              string
	seed               int
	model              string
	readSLO, createSLO time.Duration
	searchSteps        int
	searchDuration     time.Duration
	serveArgs          []string
	only               string
	role               string
	jsonOut            string
	quick              bool
}

const defaultPostgresURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// selected reports whether -only lets the measurement of target in mode run.
func (o options) selected(target, mode string) bool {
	if o.only == "" {
		return true
	}
	for _, f := range strings.Split(o.only, ",") {
		if f = strings.TrimSpace(f); f != "" && strings.Contains(target+" "+mode, f) {
			return true
		}
	}
	return false
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("api", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.DurationVar(&o.duration, "duration", 10*time.Second, "measured time of each measurement")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "warmup before each measurement (same load, not counted)")
	fs.Float64Var(&o.rate, "rate", 2000, "open-loop rate of the read measurements, requests/s")
	fs.Float64Var(&o.createRate, "create-rate", 0, "open-loop rate of POST /v1/videos, requests/s (default -rate)")
	fs.IntVar(&o.concurrency, "concurrency", 32, "closed-loop workers (saturation)")
	fs.IntVar(&o.maxInFlight, "max-inflight", 256, "open-loop bound on requests in flight; requests beyond it wait, then drop")
	stores := fs.String("stores", "sqlite,postgres", "stores to measure: sqlite, postgres")
	fs.StringVar(&o.mediagen, "mediagen", "", "mediagen binary (default: build ./cmd/mediagen into a temporary directory)")
	fs.StringVar(&o.bare, "bare", "", "bench/bare binary (default: build ./bench/bare into a temporary directory)")
	pg := os.Getenv("MEDIAGEN_TEST_POSTGRES_URL")
	if pg == "" {
		pg = defaultPostgresURL
	}
	fs.StringVar(&o.pgURL, "pg-url", pg, "PostgreSQL server for the postgres store; a fresh schema is made and dropped (env MEDIAGEN_TEST_POSTGRES_URL)")
	fs.IntVar(&o.seed, "seed", 1000, "tasks to create before measuring GET /v1/videos/{id}")
	fs.StringVar(&o.model, "model", "demo-video-fast", "model alias of the created tasks")
	fs.DurationVar(&o.readSLO, "read-slo", time.Millisecond, "DESIGN target for GET p99 at -rate")
	fs.DurationVar(&o.createSLO, "create-slo", 10*time.Millisecond, "DESIGN target for create p99; also the p99 bound of 'max sustainable'")
	fs.IntVar(&o.searchSteps, "search-steps", 3, "open-loop runs spent searching the max sustainable create rate")
	fs.DurationVar(&o.searchDuration, "search-duration", 0, "measured time of each search run (default -duration/2, at least 500ms)")
	serveArgs := fs.String("serve-args", "", "extra arguments for mediagen serve, space separated")
	fs.StringVar(&o.role, "role", "api", "passed as --role to mediagen serve when it has that flag: 'api' keeps the background worker (which renders sandbox media with ffmpeg) from competing for the CPU; empty keeps the server's default")
	fs.StringVar(&o.jsonOut, "json", "", "also write every result as JSON to this file")
	fs.StringVar(&o.only, "only", "", `run only the measurements whose "target mode" contains one of these comma-separated strings (e.g. "100 keys open,videos closed"); the search is "POST /v1/videos search"`)
	fs.BoolVar(&o.quick, "quick", false, "smoke test: 1s measurements, 200ms warmup, 100 seeded tasks, 2 search steps (explicit flags win)")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		if !set["duration"] {
			o.duration = time.Second
		}
		if !set["warmup"] {
			o.warmup = 200 * time.Millisecond
		}
		if !set["seed"] {
			o.seed = 100
		}
		if !set["search-steps"] {
			o.searchSteps = 2
		}
	}
	if o.createRate <= 0 {
		o.createRate = o.rate
	}
	if o.searchDuration <= 0 {
		o.searchDuration = max(o.duration/2, 500*time.Millisecond)
	}
	for _, s := range strings.Split(*stores, ",") {
		switch s = strings.TrimSpace(s); s {
		case "sqlite", "postgres":
			o.stores = append(o.stores, s)
		case "":
		default:
			return o, fmt.Errorf("-stores: unknown store %q (want sqlite, postgres)", s)
		}
	}
	o.serveArgs = strings.Fields(*serveArgs)
	switch {
	case o.duration <= 0 || o.warmup < 0:
		return o, errors.New("-duration must be positive and -warmup not negative")
	case o.rate <= 0 || o.concurrency <= 0 || o.maxInFlight <= 0:
		return o, errors.New("-rate, -concurrency and -max-inflight must be positive")
	case o.seed < 1:
		return o, errors.New("-seed must be at least 1")
	case len(o.stores) == 0:
		return o, errors.New("-stores: no store given")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bench/api:", err)
		}
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, o, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// bench is one run of the harness.
type bench struct {
	o        options
	out, log io.Writer
	tmp      string
	runID    string
	bins     struct{ mediagen, bare string }
	bare     *server
	rows     []*row
	stores   []*storeRun
	segment  int
	// serveExtra are the arguments added to every mediagen serve, and roleNote says why.
	serveExtra []string
	roleNote   string
	// loadBefore is the load average before anything started.
	loadBefore float64
	cleanMu    sync.Mutex
	cleanups   []func()
}

// server is a started server process and its base URL.
type server struct {
	p    *proc.Proc
	base string
}

// storeRun is what one store's measurements found out.
type storeRun struct {
	name     string
	db       string // --db value (its password, if any, never printed)
	dataDir  string
	srv      *server
	secrets  []string // the bench's keys; the first is the one key of the one-key targets
	ids      []string
	videoErr string // why the video endpoints could not be measured; empty when they could
	err      error  // why the store could not be measured at all
	rss      float64
	search   *searchResult
}

// row is one line of the table.
type row struct {
	Store     string       `json:"store"`
	Target    string       `json:"target"`
	Mode      string       `json:"mode"` // closed, open, search
	Rate      float64      `json:"rate,omitempty"`
	Result    *load.Result `json:"result,omitempty"`
	ServerCPU float64      `json:"server_cpu_cores"`
	BenchCPU  float64      `json:"bench_cpu_cores"`
	Skipped   string       `json:"skipped,omitempty"`
	Verdict   string       `json:"verdict,omitempty"`
}

func (b *bench) onCleanup(f func()) {
	b.cleanMu.Lock()
	defer b.cleanMu.Unlock()
	b.cleanups = append(b.cleanups, f)
}

func (b *bench) cleanup() {
	b.cleanMu.Lock()
	defer b.cleanMu.Unlock()
	for i := len(b.cleanups) - 1; i >= 0; i-- {
		b.cleanups[i]()
	}
	b.cleanups = nil
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.log, "bench: "+format+"\n", args...)
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) int {
	b := &bench{o: o, out: stdout, log: stderr, loadBefore: proc.LoadAvg()}
	defer b.cleanup()
	if b.loadBefore > float64(runtime.NumCPU())/2 {
		b.logf("warning: the machine is busy (load average %.2f on %d cores): figures will be noisy", b.loadBefore, runtime.NumCPU())
	}
	var rid [4]byte
	_, _ = rand.Read(rid[:])
	b.runID = hex.EncodeToString(rid[:])
	tmp, err := os.MkdirTemp("", "mediagen-bench-")
	if err != nil {
		b.logf("%v", err)
		return 1
	}
	b.tmp = tmp
	b.onCleanup(func() { _ = os.RemoveAll(tmp) })

	if err := b.prepare(ctx); err != nil {
		b.logf("%v", err)
		return 1
	}
	per := 8*(o.warmup+o.duration) + time.Duration(o.searchSteps)*(o.warmup+o.searchDuration)
	b.logf("%d cores, load average %.2f before starting; about %v of measurements per store",
		runtime.NumCPU(), b.loadBefore, per.Round(time.Second))
	measured := 0
	for _, name := range o.stores {
		if ctx.Err() != nil {
			break
		}
		st := &storeRun{name: name}
		b.stores = append(b.stores, st)
		if err := b.runStore(ctx, st); err != nil {
			st.err = err
			if ctx.Err() == nil {
				b.logf("%s: %v", name, err)
			}
			continue
		}
		measured++
	}
	b.report()
	if o.jsonOut != "" {
		if err := b.writeJSON(o.jsonOut); err != nil {
			b.logf("write %s: %v", o.jsonOut, err)
		}
	}
	if ctx.Err() != nil {
		b.logf("interrupted; everything started was stopped")
		return 130
	}
	if measured == 0 {
		return 1
	}
	return 0
}

// prepare builds (or finds) the binaries and starts the bare baseline server.
func (b *bench) prepare(ctx context.Context) error {
	b.bins.mediagen, b.bins.bare = b.o.mediagen, b.o.bare
	if b.bins.mediagen == "" || b.bins.bare == "" {
		root, err := proc.ModuleRoot()
		if err != nil {
			return err
		}
		gobin, err := exec.LookPath("go")
		if err != nil {
			return fmt.Errorf("the go command is needed to build the servers (or pass -mediagen and -bare): %w", err)
		}
		for _, bld := range []struct {
			dst *string
			pkg string
		}{{&b.bins.mediagen, "./cmd/mediagen"}, {&b.bins.bare, "./bench/bare"}} {
			if *bld.dst != "" {
				continue
			}
			out := filepath.Join(b.tmp, filepath.Base(bld.pkg))
			b.logf("building %s", bld.pkg)
			if _, err := proc.Run(ctx, 5*time.Minute, root, gobin, "build", "-o", out, bld.pkg); err != nil {
				return fmt.Errorf("build: %w", err)
			}
			*bld.dst = out
		}
	}
	for _, p := range []*string{&b.bins.mediagen, &b.bins.bare} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return err
		}
		if _, err := os.Stat(abs); err != nil {
			return err
		}
		*p = abs
	}
	// The demo catalog's default limits (100 requests/s and 200 unfinished tasks per key) would
	// refuse the bench's thousands of requests per second on one key and its tens of
	// thousands of queued tasks: the servers run on the demo catalog with every limit of the
	// demo tenant unlimited. A --catalog in -serve-args comes later and wins.
	cat, err := democat.Write(b.tmp)
	if err != nil {
		return err
	}
	b.serveExtra = append([]string{"--catalog", cat}, b.o.serveArgs...)
	if b.o.role != "" {
		// The flag package prints the usage on stderr and exits 2; runCmd puts stderr in its error.
		help, err := proc.Run(ctx, 30*time.Second, b.tmp, b.bins.mediagen, "serve", "-h")
		if err != nil {
			help += err.Error()
		}
		if strings.Contains(help, "\n  -role ") {
			b.serveExtra = append(b.serveExtra, "--role", b.o.role)
			b.roleNote = "mediagen serve --role " + b.o.role
		} else {
			b.roleNote = "this mediagen has no --role flag: it runs with its default role"
		}
	}
	srv, err := b.startServer(ctx, "bare", b.bins.bare, "/readyz", func(addr string) []string { return []string{"-listen", addr} })
	if err != nil {
		return err
	}
	b.bare = srv
	return nil
}

// startServer starts bin on a free port and waits until path answers 200. A port taken by
// someone else between choosing and binding is retried on another.
func (b *bench) startServer(ctx context.Context, name, bin, readyPath string, args func(addr string) []string) (*server, error) {
	var lastErr error
	for attempt := range 3 {
		addr, err := proc.FreeAddr()
		if err != nil {
			return nil, err
		}
		p, err := proc.Start(name, bin, filepath.Join(b.tmp, fmt.Sprintf("%s-%d.log", name, attempt)), proc.ChildEnv(), args(addr)...)
		if err != nil {
			return nil, err
		}
		b.onCleanup(func() { p.Stop(10 * time.Second) })
		srv := &server{p: p, base: "http://" + addr}
		if lastErr = proc.WaitReady(ctx, p, srv.base, readyPath, 60*time.Second); lastErr == nil {
			return srv, nil
		}
		p.Stop(5 * time.Second)
		if ctx.Err() != nil || !strings.Contains(lastErr.Error(), "address already in use") {
			break
		}
	}
	return nil, lastErr
}

var secretLine = regexp.MustCompile(`(?m)^secret:\s+(mg_[a-z2-7]{40})\s*$`)

// runStore measures everything on one store.
func (b *bench) runStore(ctx context.Context, st *storeRun) error {
	st.dataDir = filepath.Join(b.tmp, st.name)
	if err := os.MkdirAll(st.dataDir, 0o755); err != nil {
		return err
	}
	switch st.name {
	case "sqlite":
		st.db = "sqlite:" + filepath.Join(st.dataDir, "mediagen.db")
	case "postgres":
		url, drop, err := pgschema.Fresh(ctx, b.o.pgURL, "bench_"+b.runID)
		if err != nil {
			return fmt.Errorf("PostgreSQL not available, store skipped (scripts/ensure-postgres.sh starts one): %w", err)
		}
		b.onCleanup(drop)
		st.db = url
	}
	b.logf("%s: starting mediagen serve", st.name)
	srv, err := b.startServer(ctx, "mediagen-"+st.name, b.bins.mediagen, "/readyz", func(addr string) []string {
		return append([]string{"serve", "--listen", addr, "--data-dir", st.dataDir, "--db", st.db, "--log-level", "warn"}, b.serveExtra...)
	})
	if err != nil {
		return err
	}
	st.srv = srv
	defer srv.p.Stop(10 * time.Second)
	b.logf("%s: creating %d keys", st.name, manyKeys)
	for i := range manyKeys {
		out, err := proc.Run(ctx, time.Minute, st.dataDir, b.bins.mediagen,
			"admin", "key", "create", "--tenant", "demo", "--unlimited", "--name", fmt.Sprintf("bench-%d", i), "--data-dir", st.dataDir, "--db", st.db,
			"--catalog", filepath.Join(b.tmp, democat.FileName))
		if err != nil {
			return fmt.Errorf("create key: %w", err)
		}
		m := secretLine.FindStringSubmatch(out)
		if m == nil {
			return fmt.Errorf("create key: no secret in the output:\n%s", out)
		}
		st.secrets = append(st.secrets, m[1])
	}

	b.seed(ctx, st)
	if st.videoErr != "" {
		b.logf("%s: %s", st.name, st.videoErr)
	} else {
		b.logf("%s: seeded %d tasks", st.name, len(st.ids))
	}
	t := map[string]*target{}
	for _, tg := range targets() {
		t[tg.name] = tg
	}
	get, bal, create, bare := t["GET /v1/videos/{id}"], t["GET /v1/billing/balance"], t["POST /v1/videos"], t["bare"]
	create100 := t["POST /v1/videos, 100 keys"]
	steps := []struct {
		t    *target
		mode load.Mode
		rate float64
	}{
		{bare, load.Closed, 0}, {get, load.Closed, 0},
		{bare, load.Open, b.o.rate}, {get, load.Open, b.o.rate},
		{bal, load.Closed, 0}, {bal, load.Open, b.o.rate},
		{create, load.Open, b.o.createRate}, {create, load.Closed, 0},
		{create100, load.Open, b.o.createRate}, {create100, load.Closed, 0},
	}
	for _, s := range steps {
		if !b.o.selected(s.t.name, string(s.mode)) {
			continue
		}
		if _, err := b.measure(ctx, st, s.t, s.mode, s.rate, b.o.duration, string(s.mode)); err != nil {
			return err
		}
	}
	if b.o.selected(create.name, "search") {
		if err := b.searchCreate(ctx, st, create); err != nil {
			return err
		}
	}
	st.rss = proc.RSSMiB(srv.p.PID())
	if srv.p.Exited() {
		return fmt.Errorf("mediagen exited during the run (%v):\n%s", srv.p.WaitErr, srv.p.LogTail(20))
	}
	return nil
}

// seed checks that the video endpoints answer and creates o.seed tasks for the GET
// measurements. When they do not answer as expected it records why in st.videoErr.
func (b *bench) seed(ctx context.Context, st *storeRun) {
	var create *target
	for _, t := range targets() {
		if t.method == http.MethodPost && t.videos && t.keys <= 1 {
			create = t
			break
		}
	}
	r, err := newRequester(create, st.srv.base, st.secrets, b.o.model, b.runID+"-seed", nil)
	if err != nil {
		st.videoErr = err.Error()
		return
	}
	client := load.NewClient(8)
	defer client.CloseIdleConnections()
	post := func(i int) (string, error) {
		req, err := r.newRequest(i)
		if err != nil {
			return "", err
		}
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		resp, err := client.Do(req.WithContext(ctx))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode != create.expect {
			return "", fmt.Errorf("status %d: %s", resp.StatusCode, excerpt(body))
		}
		var task struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(body, &task); err != nil || task.ID == "" {
			return "", fmt.Errorf("status %d without a task id: %s", resp.StatusCode, excerpt(body))
		}
		return task.ID, nil
	}
	first, err := post(0)
	if err != nil {
		st.videoErr = "video endpoints not available: POST /v1/videos answered " + err.Error()
		return
	}
	ids := make([]string, b.o.seed)
	ids[0] = first
	var next atomic.Int64
	next.Store(1)
	var failed atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(2 * time.Minute)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for ctx.Err() == nil && time.Now().Before(deadline) {
				i := int(next.Add(1) - 1)
				if i >= len(ids) {
					return
				}
				id, err := post(i)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ids[i] = id
			}
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != "" {
			st.ids = append(st.ids, id)
		}
	}
	if n := failed.Load(); n > 0 {
		b.logf("%s: %d of %d seed creates failed, e.g. %v", st.name, n, len(ids), firstErr.Load())
	}
	// GET must answer too, or its measurements would only count errors.
	getT := &target{name: "GET /v1/videos/{id}", server: "api", method: http.MethodGet, path: "/v1/videos/{id}"}
	gr, _ := newRequester(getT, st.srv.base, st.secrets, b.o.model, "probe", st.ids)
	req, _ := gr.newRequest(0)
	resp, err := client.Do(req)
	if err != nil {
		st.videoErr = "video endpoints not available: GET /v1/videos/{id}: " + err.Error()
		return
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		st.videoErr = fmt.Sprintf("video endpoints not available: GET /v1/videos/{id} answered status %d: %s", resp.StatusCode, excerpt(body))
	}
}

func excerpt(b []byte) string {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 160 {
		s = s[:160] + "…"
	}
	if s == "" {
		s = "(empty body)"
	}
	return s
}

// measure runs one measurement of t on st (or on the bare server) and adds its row.
func (b *bench) measure(ctx context.Context, st *storeRun, t *target, mode load.Mode, rate float64, dur time.Duration, label string) (*row, error) {
	r := &row{Store: st.name, Target: t.name, Mode: label, Rate: rate}
	b.rows = append(b.rows, r)
	if t.videos && st.videoErr != "" {
		r.Skipped = st.videoErr
		return r, nil
	}
	srv := st.srv
	if t.server == "bare" {
		srv = b.bare
	}
	b.segment++
	req, err := newRequester(t, srv.base, st.secrets, b.o.model, fmt.Sprintf("%s-%d", b.runID, b.segment), st.ids)
	if err != nil {
		r.Skipped = err.Error()
		return r, nil
	}
	conns := b.o.maxInFlight
	if mode == load.Closed {
		conns = b.o.concurrency
	}
	client := load.NewClient(conns)
	defer client.CloseIdleConnections()
	cfg := load.Config{
		Rate: rate, Concurrency: b.o.concurrency, Duration: dur, Warmup: b.o.warmup,
		MaxInFlight: b.o.maxInFlight, Timeout: 10 * time.Second, Client: client,
		NewRequest: req.newRequest, Expect: func(s int) bool { return s == t.expect },
	}
	b.logf("%s: %s %s %s", st.name, t.name, label, rateText(rate))
	srvCPU0, cpuOK := proc.CPUTime(srv.p.PID())
	self0, wall0 := proc.SelfCPU(), time.Now()
	var res load.Result
	if mode == load.Closed {
		res, err = load.Saturate(ctx, cfg)
	} else {
		res, err = load.Run(ctx, cfg)
	}
	wall := time.Since(wall0).Seconds()
	if srvCPU1, ok := proc.CPUTime(srv.p.PID()); ok && cpuOK {
		r.ServerCPU = (srvCPU1 - srvCPU0).Seconds() / wall
	}
	r.BenchCPU = (proc.SelfCPU() - self0).Seconds() / wall
	r.Result = &res
	if err != nil {
		r.Verdict = "interrupted"
		return r, err
	}
	if srv.p.Exited() {
		return r, fmt.Errorf("%s exited during %s (%v):\n%s", srv.p.Name, t.name, srv.p.WaitErr, srv.p.LogTail(20))
	}
	return r, nil
}

func rateText(rate float64) string {
	if rate == 0 {
		return ""
	}
	return fmt.Sprintf("at %.0f/s", rate)
}

// searchResult is the highest open-loop create rate that held up.
type searchResult struct {
	best       float64 // highest rate that passed (0: none did)
	bestP99    time.Duration
	failing    float64 // lowest rate that failed (0: none tested failed)
	closedPeak float64
}

// searchCreate looks for the highest open-loop rate of POST /v1/videos with nothing dropped,
// no errors, no backlog left after the window and p99 within -create-slo: a bisection between the
// -create-rate run and the closed-loop peak, -search-steps runs of -search-duration.
func (b *bench) searchCreate(ctx context.Context, st *storeRun, create *target) error {
	var atRate, closed *row
	for _, r := range b.rows {
		if r.Store == st.name && r.Target == create.name && r.Result != nil {
			switch r.Mode {
			case string(load.Open):
				atRate = r
			case string(load.Closed):
				closed = r
			}
		}
	}
	if atRate == nil || closed == nil {
		if st.videoErr != "" {
			b.rows = append(b.rows, &row{Store: st.name, Target: create.name, Mode: "search", Skipped: st.videoErr})
		}
		return nil
	}
	if closed.Result.OK == 0 {
		return nil // nothing was accepted: a search would only count errors
	}
	pass := func(r *row) bool { return r.Result.Sustained() && r.Result.Latency.P99 <= b.o.createSLO }
	sr := &searchResult{closedPeak: closed.Result.Throughput}
	st.search = sr
	lo, hi := 0.0, 0.0
	if pass(atRate) {
		lo, sr.best, sr.bestP99 = atRate.Rate, atRate.Rate, atRate.Result.Latency.P99
	} else {
		hi, sr.failing = atRate.Rate, atRate.Rate
	}
	if hi == 0 { // the peak bounds it from above, untested
		hi = max(sr.closedPeak, lo*1.25)
	}
	for range b.o.searchSteps {
		mid := float64(int((lo+hi)/2/10+0.5) * 10)
		if mid <= lo || mid >= hi || mid < 10 {
			break
		}
		r, err := b.measure(ctx, st, create, load.Open, mid, b.o.searchDuration, "search")
		if err != nil {
			return err
		}
		if pass(r) {
			r.Verdict = "pass"
			lo, sr.best, sr.bestP99 = mid, mid, r.Result.Latency.P99
		} else {
			r.Verdict = "fail"
			hi, sr.failing = mid, mid
		}
	}
	return nil
}

func (b *bench) writeJSON(path string) error {
	type storeJSON struct {
		Store      string  `json:"store"`
		Error      string  `json:"error,omitempty"`
		VideoError string  `json:"video_error,omitempty"`
		Seeded     int     `json:"seeded_tasks"`
		RSSMiB     float64 `json:"server_rss_mib"`
		MaxCreate  float64 `json:"max_sustainable_create_rate,omitempty"`
	}
	doc := struct {
		RunID  string      `json:"run_id"`
		Time   time.Time   `json:"time"`
		Cores  int         `json:"cores"`
		Rows   []*row      `json:"rows"`
		Stores []storeJSON `json:"stores"`
	}{RunID: b.runID, Time: time.Now().UTC(), Cores: runtime.NumCPU(), Rows: b.rows}
	for _, st := range b.stores {
		s := storeJSON{Store: st.name, VideoError: st.videoErr, Seeded: len(st.ids), RSSMiB: st.rss}
		if st.err != nil {
			s.Error = st.err.Error()
		}
		if st.search != nil {
			s.MaxCreate = st.search.best
		}
		doc.Stores = append(doc.Stores, s)
	}
	data, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
