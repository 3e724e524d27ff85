package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/httpapi"
	"mediagen/internal/jobs"
	"mediagen/internal/media/budget"
	"mediagen/internal/netlimit"
	"mediagen/internal/provider/openai"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/store/sqlite"
	"mediagen/internal/tracing"
	"mediagen/internal/video"
	"mediagen/internal/webhook"
)

// Main is the serve command as an object, so tests can start the whole service on port :0
// and stop it again (ParseFlags, Run, Close).
type Main struct {
	Config Config

	getenv         func(string) string
	stdout, stderr io.Writer

	log *slog.Logger
	db  *sqldb.DB
	// catalogs holds the catalog in force; a reload swaps it (reload.go).
	catalogs *catalog.Holder
	reload   reloader
	demo     bool
	ln       net.Listener
	srv      *http.Server
	debug    *http.Server
	metrics  *http.Server // --metrics-listen
	admin    *http.Server // --admin-listen
	// adminAddr is where the admin API listens (its port, when --admin-listen asked for :0).
	adminAddr string
	// metricsAddr is where metrics listens (its port, when --metrics-listen asked for :0).
	metricsAddr string
	debugAddr   string
	// edge are the connection and download bounds in force (edge.go); connMetrics count the
	// bounded listeners' connections.
	edge        edgeBounds
	connMetrics *netlimit.Metrics
	// serveLock marks the SQLite database as served by this process (sqlite.LockServe).
	serveLock    *os.File
	blobs        blob.Store // results and speech audio: blobFS, or an S3 bucket
	blobFS       *blob.FS   // set when the results are on this machine's disk
	mediaOrigins []string   // origins results are served from besides this one (an S3 endpoint)
	engine       *sandbox.Engine
	locals       map[string]*sandbox.Engine // local upstream accounts' engines (upstreams.go)
	remotes      map[string]remoteClient    // remote upstream accounts' clients (upstreams.go)
	frames       openai.Frames              // first-frame fitting of openai accounts (worker role)
	jobs         *jobs.Engine
	hooks        *webhook.Service // webhook endpoints and deliveries (built in build.go), for the admin listener
	reg          *prometheus.Registry
	media        *budget.Budget // the media budget (--media-slots): every media process waits in it
	bgStop       context.CancelFunc
	// tracing is the tracer provider (tracing.go): the noop one unless OTEL_* asks for OTLP.
	tracing *tracing.Provider

	// FetchTLS, when set before Run, is the TLS configuration of the client that fetches
	// user-supplied URLs and of the clients of remote upstreams (tests use it to trust their
	// loopback HTTPS servers).
	FetchTLS *tls.Config
	// Upstreams, when set before Run, replaces the engines aliases bind to (tests use a
	// counting fake); nil runs the embedded sandbox.
	Upstreams map[string]video.Upstream
	// Now, when set before Run, is the asset service's clock: verification tokens expire by
	// it (tests move it past a token's lifetime instead of waiting it out). nil: time.Now.
	Now func() time.Time
	// AssetLibraryPoll, when set before Run, is the wait between two reads of an asset's
	// status in its upstream library (tests shorten it); 0: asset.DefaultUpstreamPoll.
	AssetLibraryPoll time.Duration
	// AssetLibraryDeadline, when set before Run, is how long an asset may wait for its
	// upstream library before it fails (tests shorten it); 0: asset.DefaultUpstreamDeadline.
	AssetLibraryDeadline time.Duration

	served   chan error
	closed   sync.Once
	closeErr error

	// DemoKey is the demo key created on this run, if any (for tests and the banner).
	DemoKey string
	// Terminal reports that stdout is a terminal, the only place the first start prints the
	// demo key's secret (NewMain sets it; tests set it to read the banner).
	Terminal bool
}

// NewMain returns a Main reading the given environment and writing to the given streams.
func NewMain(getenv func(string) string, stdout, stderr io.Writer) *Main {
	return &Main{getenv: getenv, stdout: stdout, stderr: stderr, Terminal: isTerminal(stdout)}
}

// ParseFlags reads the configuration from args and the environment.
func (m *Main) ParseFlags(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	m.Config.register(fs, m.getenv, true)
	pos, err := parseFlags(fs, args, m.stdout, m.stderr, strictParse)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usageError{fmt.Sprintf("serve: unexpected argument %q", pos[0])}
	}
	if err := m.Config.validate(); err != nil {
		return usageError{err.Error()}
	}
	return nil
}

// balanceCacheEntries bounds the balance cache: one entry per key polled within
// --balance-cache-ttl, a few hundred bytes each, so 10,000 keys cost a few MiB at most.
const balanceCacheEntries = 10_000

// Run loads the catalog, opens and migrates the database, makes the demo key on first run, and
// starts serving in the background. Any configuration problem stops it here with an error.
func (m *Main) Run(ctx context.Context) error {
	m.log = m.Config.logger(m.stderr)
	loaded, demo, err := m.Config.loadCatalogVersion(time.Now())
	if err != nil {
		return err
	}
	if err := m.planEdge(); err != nil {
		return err
	}
	m.catalogs, m.demo = catalog.NewHolder(loaded), demo
	for _, w := range loaded.Catalog.Warnings() {
		m.log.Warn("catalog warning", "file", catalogName(m.Config.Catalog), "warning", w)
	}
	if strings.HasPrefix(m.Config.DB, "sqlite:") {
		path, err := sqlitePath(m.Config.DB)
		if err != nil {
			return err
		}
		if m.serveLock, err = sqlite.LockServe(path); err != nil {
			return err
		}
	}
	if err := m.startTracing(ctx); err != nil {
		return err
	}
	if m.db, err = m.openStoreWaiting(ctx); err != nil {
		return err
	}
	m.db.SetTracer(m.tracing.Tracer())
	if m.serveLock != nil {
		// This process owns the database, so it sees every task write: the cache is exact.
		m.db.EnableTaskCache(m.Config.TaskCache, 0)
	} else if err := postgres.EnableTaskCache(m.db, m.Config.DB, m.Config.TaskCache, m.Config.TaskCacheTTL, m.log); err != nil {
		return err
	}
	m.db.EnableBalanceCache(balanceCacheEntries, m.Config.BalanceCacheTTL)
	ln, err := net.Listen("tcp", m.Config.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", m.Config.Listen, err)
	}
	m.ln = ln
	m.reload.publicURLSet = m.Config.PublicURL != ""
	if m.Config.PublicURL == "" {
		if acc, ok := m.Config.needsPublicURL(m.cat()); ok {
			_ = ln.Close()
			return fmt.Errorf("upstream %s (kind %s) fetches asset references from this service: set --public-url to the address it can reach", acc.Name, acc.Kind)
		}
		m.Config.PublicURL = "http://" + ln.Addr().String()
	}
	m.Config.PublicURL = strings.TrimRight(m.Config.PublicURL, "/")
	if msg := publicURLTaken(m.cat(), m.Config.PublicURL); msg != "" {
		_ = ln.Close()
		return errors.New(msg)
	}
	if demo {
		if err := m.firstRun(ctx); err != nil {
			return err
		}
	}
	api, err := m.build(ctx)
	if err != nil {
		return err
	}
	m.connMetrics = netlimit.NewMetrics(m.reg)
	bounded := m.edge.wrapAPI(ln, m.Config.proxies, m.connMetrics)
	m.ln = bounded
	m.srv = httpapi.NewHTTPServer(api.Handler(), slog.NewLogLogger(m.log.Handler(), slog.LevelWarn))
	m.srv.ConnState = bounded.ConnState
	if pct, ok := m.Config.gcTarget(); ok {
		debug.SetGCPercent(pct)
	}
	if limit, ok := m.Config.memoryLimit(); ok {
		debug.SetMemoryLimit(limit)
	}
	if m.Config.DebugListen != "" {
		if err := m.startDebug(); err != nil {
			return err
		}
	}
	if m.Config.MetricsListen != "" {
		if err := m.startMetrics(api.MetricsHandler()); err != nil {
			return err
		}
	}
	if err := m.startCatalogWatch(ctx); err != nil {
		return err
	}
	if m.Config.AdminListen != "" {
		if err := m.startAdmin(); err != nil {
			return err
		}
	}
	m.served = make(chan error, 1)
	go func() { m.served <- m.srv.Serve(m.ln) }()
	m.log.Info("mediagen serving", "addr", ln.Addr().String(), "public_url", m.Config.PublicURL,
		"db", m.db.Dialect(), "catalog", catalogName(m.Config.Catalog), "version", version)
	return nil
}

func catalogName(path string) string {
	if path == "" {
		return "embedded demo"
	}
	return path
}

// planEdge reads (and, where the runtime did not, raises) the open-file limit and fits the
// connection and download bounds in it; a --max-conns that does not fit stops serve here.
func (m *Main) planEdge() error {
	soft, hard, err := netlimit.RaiseFileLimit()
	if err != nil {
		m.log.Warn("open-file limit unknown; connection bounds from the flags alone", "err", err)
	}
	ops := opsListenerConns(m.Config.DebugListen != "", m.Config.MetricsListen != "", m.Config.AdminListen != "")
	m.edge, err = planEdge(soft, m.Config.MaxConns, m.Config.MaxConnsPerClient, ops)
	if err != nil {
		return err
	}
	m.log.Info("connection bounds", append([]any{"open_files", soft, "open_files_hard", hard,
		"max_conns", m.edge.MaxConns, "max_conns_per_client", m.edge.ConnsPerClient, "high_water", m.edge.HighWater,
		"max_downloads", m.edge.Downloads, "trusted_proxies", len(m.Config.proxies)}, edgeTimeouts()...)...)
	return nil
}

// URL is the base URL the server listens on.
func (m *Main) URL() string { return "http://" + m.ln.Addr().String() }

// openStoreWaiting opens the database; a PostgreSQL server that cannot be reached is tried
// again every second for --db-wait, so that replicas restarted together with their database
// come up instead of exiting (a bad URL or a failed migration still stops at once).
func (m *Main) openStoreWaiting(ctx context.Context) (*sqldb.DB, error) {
	deadline := time.Now().Add(m.Config.DBWait)
	for attempt := 1; ; attempt++ {
		db, err := openStore(ctx, m.Config.DB)
		if err == nil || !errors.Is(err, postgres.ErrUnreachable) || !time.Now().Before(deadline) {
			return db, err
		}
		if attempt == 1 || attempt%10 == 0 {
			m.log.Warn("PostgreSQL is unreachable; trying again", "for", time.Until(deadline).Round(time.Second), "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// Close stops accepting connections, lets in-flight requests finish (up to 30 s), and closes
// the database.
// Close is safe to call more than once.
func (m *Main) Close() error {
	m.closed.Do(func() { m.closeErr = m.close() })
	return m.closeErr
}

func (m *Main) close() error {
	var errs []error
	// First stop accepting and let in-flight requests finish (a synchronous speech request
	// may still be generating); then stop the background work, which hands its leases back
	// while the database is still open; the database closes last.
	if m.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutdown: %w", err))
		}
		if err := <-m.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	} else if m.ln != nil {
		_ = m.ln.Close()
	}
	if m.debug != nil {
		_ = m.debug.Close()
	}
	if m.metrics != nil {
		_ = m.metrics.Close()
	}
	if m.admin != nil {
		_ = m.admin.Close()
	}
	m.stopCatalogWatch()
	if m.jobs != nil {
		m.jobs.Stop()
	}
	if m.bgStop != nil {
		m.bgStop()
	}
	for _, e := range m.locals {
		errs = append(errs, e.Close())
	}
	if m.engine != nil {
		errs = append(errs, m.engine.Close())
	}
	// The spans of the requests and runs just finished go out before the database closes.
	errs = append(errs, m.stopTracing())
	if m.db != nil {
		errs = append(errs, m.db.Close())
	}
	if m.serveLock != nil {
		errs = append(errs, m.serveLock.Close())
	}
	return errors.Join(errs...)
}
