package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/asset"
	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/store"
	"mediagen/internal/video"
)

// Live catalog reload (docs/catalog.md, "Reload"). A reload re-reads the catalog file, checks
// it as strictly as a start does plus what serve needs of its environment (API keys,
// --public-url), rebuilds the upstream clients, and swaps the new catalog in whole: every
// request and job step takes the catalog in force once, at its start, so none sees two. A
// catalog that does not check is refused with all its problems and the old one stays in force.
// Triggers: SIGHUP, a reload request in the database (`mediagen admin catalog reload`, noticed
// by every replica's poll), the admin API, and with --catalog-watch a change of the file's
// content (catalog_watch.go).

// Reload triggers, the values of the reloads metric's trigger label.
const (
	triggerSignal  = "signal"  // SIGHUP
	triggerRequest = "request" // a request in the database (CLI, or another replica's API call)
	triggerAPI     = "api"     // this replica's admin API
	triggerFile    = "file"    // the file's content changed (--catalog-watch)
)

// catalogHeartbeat is how often a replica rewrites its row when nothing changed; a row older
// than catalogStale is shown as a replica that stopped without removing it (a kill).
const (
	catalogHeartbeat = 10 * time.Second
	catalogStale     = opadmin.CatalogStale
	catalogForget    = 24 * time.Hour // a start deletes the rows silent this long
)

// reloader is the reload state of a Main.
type reloader struct {
	mu sync.Mutex // one reload at a time
	// publicURLSet: --public-url was given (serve defaults it after the check at start).
	publicURLSet bool
	replicaID    string
	seen         int64 // the highest reload request handled
	lastErr      string
	errAt        time.Time
	lastReport   time.Time

	engines atomic.Pointer[engineSet]
	weights atomic.Pointer[map[string]int]
	tools   ffmpeg.Tools
	fetch   *safefetch.Client

	file    catalogFileState // --catalog-watch
	metrics *reloadMetrics
	hup     chan os.Signal
	stop    context.CancelFunc
	done    chan struct{}
}

// engineSet is the engines of the upstream accounts by name: video (worker role; nil in an
// api-only process) and speech. A reload replaces the set whole; engines of accounts that
// left the catalog stay in it, so that tasks already accepted on them finish.
type engineSet struct {
	video  map[string]video.Upstream
	speech map[string]provider.Synthesizer
}

type reloadMetrics struct {
	info    *prometheus.GaugeVec
	loaded  prometheus.Gauge
	reloads *prometheus.CounterVec
}

func newReloadMetrics(reg prometheus.Registerer) *reloadMetrics {
	r := &reloadMetrics{
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "mediagen_catalog_info",
			Help: "1 for the catalog version in force in this process: the short sha256 of the catalog file's bytes."}, []string{"hash"}),
		loaded: prometheus.NewGauge(prometheus.GaugeOpts{Name: "mediagen_catalog_loaded_timestamp_seconds",
			Help: "When the catalog in force was loaded (Unix seconds)."}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "mediagen_catalog_reloads_total",
			Help: "Catalog reloads by trigger (signal, request, api, file) and outcome (ok, refused)."}, []string{"trigger", "outcome"}),
	}
	reg.MustRegister(r.info, r.loaded, r.reloads)
	for _, t := range []string{triggerSignal, triggerRequest, triggerAPI, triggerFile} {
		for _, o := range []string{"ok", "refused"} {
			r.reloads.WithLabelValues(t, o) // at 0 from the start, for rate() and alerts
		}
	}
	return r
}

func (r *reloadMetrics) set(l *catalog.Loaded) {
	r.info.Reset() // one series: the version in force
	r.info.WithLabelValues(l.Hash).Set(1)
	r.loaded.Set(float64(l.LoadedAt.UnixNano()) / 1e9)
}

// cat is the catalog in force.
func (m *Main) cat() *catalog.Catalog { return m.catalogs.Current() }

// CatalogVersion is the version in force in this process (tests, and the admin API).
func (m *Main) CatalogVersion() *catalog.Loaded { return m.catalogs.Loaded() }

// ReplicaID is the id this process reports its catalog version under.
func (m *Main) ReplicaID() string { return m.reload.replicaID }

// setEngines puts the engines of the catalog in force (build, and every reload).
func (m *Main) setEngines(e *engineSet) { m.reload.engines.Store(e) }

func (m *Main) videoEngine(name string) (video.Upstream, bool) {
	u, ok := m.reload.engines.Load().video[name]
	return u, ok
}

func (m *Main) speechEngine(name string) provider.Synthesizer {
	return m.reload.engines.Load().speech[name]
}

// tenantWeights are the job engine's weights of the catalog in force, made once per catalog
// (the engine asks at every claim).
func (m *Main) tenantWeights() map[string]int { return *m.reload.weights.Load() }

func (m *Main) setWeights(c *catalog.Catalog) {
	w := c.Weights()
	m.reload.weights.Store(&w)
}

// newReplicaID names this process in catalog_replicas: host, process id and a random part
// (two replicas may share a host and, in tests, a process).
func newReplicaID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "replica"
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// startCatalogWatch reports this replica's version, then reloads on SIGHUP and on reload
// requests in the database until Close.
func (m *Main) startCatalogWatch(ctx context.Context) error {
	r := &m.reload
	r.replicaID = newReplicaID()
	r.metrics = newReloadMetrics(m.reg)
	r.metrics.set(m.catalogs.Loaded())
	// This process has just read the file: the requests made before it started are done.
	seen, err := m.db.LatestCatalogReload(ctx)
	if err != nil {
		return err
	}
	r.seen = seen
	r.file = catalogFileState{hash: m.catalogs.Loaded().Hash}
	now := time.Now()
	// Rows of replicas killed long ago would be listed as stale for ever.
	if n, err := m.db.PruneCatalogReplicas(ctx, now.Add(-catalogForget)); err != nil {
		return err
	} else if n > 0 {
		m.log.Info("catalog: forgot replicas silent for a day", "replicas", n)
	}
	if err := m.reportCatalog(ctx, now); err != nil {
		return err
	}
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	r.stop, r.done = stop, make(chan struct{})
	r.hup = make(chan os.Signal, 1)
	signal.Notify(r.hup, syscall.SIGHUP)
	go m.watchCatalog(bg)
	return nil
}

func (m *Main) stopCatalogWatch() {
	r := &m.reload
	if r.stop == nil {
		return
	}
	signal.Stop(r.hup)
	r.stop()
	<-r.done
	// A clean stop leaves the list; a killed replica's row stays, shown as stale.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.db.RemoveCatalogReplica(ctx, r.replicaID); err != nil {
		m.log.Warn("catalog: could not remove this replica's row", "err", err)
	}
}

func (m *Main) watchCatalog(ctx context.Context) {
	defer close(m.reload.done)
	poll := m.Config.CatalogPoll
	if poll <= 0 {
		poll = time.Second
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.reload.hup:
			_, _ = m.ReloadCatalog(ctx, triggerSignal)
		case now := <-tick.C:
			if m.Config.CatalogWatch && m.Config.Catalog != "" && m.catalogFileChanged() {
				_, _ = m.ReloadCatalog(ctx, triggerFile)
				continue
			}
			latest, err := m.db.LatestCatalogReload(ctx)
			if err != nil {
				if ctx.Err() == nil {
					m.log.Warn("catalog: reload requests unreadable", "err", err)
				}
				continue
			}
			m.reload.mu.Lock()
			due := latest > m.reload.seen
			m.reload.mu.Unlock()
			if due {
				_, _ = m.reloadUpTo(ctx, triggerRequest, latest)
				continue
			}
			m.heartbeat(ctx, now)
		}
	}
}

// heartbeat rewrites this replica's row when it is catalogHeartbeat old, so that a killed
// replica shows as stale and a running one does not.
func (m *Main) heartbeat(ctx context.Context, now time.Time) {
	m.reload.mu.Lock()
	defer m.reload.mu.Unlock()
	if now.Sub(m.reload.lastReport) < catalogHeartbeat {
		return
	}
	if err := m.reportCatalog(ctx, now); err != nil && ctx.Err() == nil {
		m.log.Warn("catalog: heartbeat not written", "err", err)
	}
}

// reportCatalog writes this replica's row. The caller holds reload.mu (or runs before the
// watch starts).
func (m *Main) reportCatalog(ctx context.Context, now time.Time) error {
	r := &m.reload
	l := m.catalogs.Loaded()
	role := m.Config.Role
	if role == "" {
		role = "all"
	}
	err := m.db.ReportCatalog(ctx, store.CatalogReplica{ReplicaID: r.replicaID, Role: role, Hash: l.Hash, LoadedAt: l.LoadedAt,
		LastError: r.lastErr, ErrorAt: r.errAt, ReloadSeen: r.seen, HeartbeatAt: now.UTC()})
	if err == nil {
		r.lastReport = now
	}
	return err
}

// ReloadCatalog re-reads the catalog file and puts it in force, or refuses it and keeps the
// old one: the error is then a *catalog.Problems listing every problem, or the reason the
// file could not be read. Either way the outcome is logged, counted and reported in this
// replica's row.
func (m *Main) ReloadCatalog(ctx context.Context, trigger string) (*catalog.Loaded, error) {
	return m.reloadUpTo(ctx, trigger, 0)
}

// reloadUpTo is ReloadCatalog that also marks reload request upTo as handled.
func (m *Main) reloadUpTo(ctx context.Context, trigger string, upTo int64) (*catalog.Loaded, error) {
	r := &m.reload
	r.mu.Lock()
	defer r.mu.Unlock()
	if upTo > r.seen {
		r.seen = upTo
	}
	now := time.Now()
	loaded, err := m.reloadLocked(ctx, now)
	path := catalogName(m.Config.Catalog)
	if err != nil {
		r.lastErr, r.errAt = err.Error(), now.UTC()
		var p *catalog.Problems
		if errors.As(err, &p) {
			r.lastErr = strings.Join(p.List, "\n")
			m.log.Error("catalog reload refused; the catalog in force stays", "trigger", trigger, "file", path,
				"in_force", m.catalogs.Loaded().Hash, "problems", p.List)
		} else {
			m.log.Error("catalog reload refused; the catalog in force stays", "trigger", trigger, "file", path,
				"in_force", m.catalogs.Loaded().Hash, "err", err)
		}
		r.metrics.reloads.WithLabelValues(trigger, "refused").Inc()
	} else {
		r.lastErr, r.errAt = "", time.Time{}
		r.metrics.set(loaded)
		r.metrics.reloads.WithLabelValues(trigger, "ok").Inc()
		m.log.Info("catalog reloaded", "trigger", trigger, "file", path, "hash", loaded.Hash)
		for _, w := range loaded.Catalog.Warnings() {
			m.log.Warn("catalog warning", "file", path, "hash", loaded.Hash, "warning", w)
		}
	}
	if rerr := m.reportCatalog(ctx, now); rerr != nil {
		m.log.Warn("catalog: this replica's version not recorded", "err", rerr)
	}
	return loaded, err
}

func (m *Main) reloadLocked(ctx context.Context, now time.Time) (*catalog.Loaded, error) {
	name, data := "demo.yaml", catalog.DemoYAML() // no --catalog: the embedded one, as at start
	if m.Config.Catalog != "" {
		name = m.Config.Catalog
		var err error
		if data, err = catalog.ReadFile(name); err != nil {
			return nil, err // too large, or unreadable: the catalog in force stays
		}
	}
	cat, problems := catalog.Check(name, data)
	if cat != nil {
		var more []string
		more = append(more, m.Config.serveNeeds(cat, m.getenv, m.reload.publicURLSet)...)
		more = append(more, accountChanges(m.cat(), cat)...)
		if len(more) > 0 {
			if problems == nil {
				problems = &catalog.Problems{File: name}
			}
			problems.List = append(problems.List, more...)
		}
	}
	if problems != nil {
		return nil, problems
	}
	engines, err := m.rebuildEngines(cat)
	if err != nil {
		return nil, err
	}
	// The virtual asset groups the catalog grants, as at start: written before the swap, so
	// a refused reload leaves them as they were.
	if granted, revoked, err := asset.SyncCatalog(ctx, m.db, cat, now.UTC()); err != nil {
		return nil, fmt.Errorf("catalog virtual_groups: %w", err)
	} else if granted+revoked > 0 {
		m.log.Info("catalog virtual groups applied", "granted", granted, "revoked", revoked)
	}
	loaded := &catalog.Loaded{Catalog: cat, Hash: catalog.Hash(data), LoadedAt: now.UTC()}
	m.setEngines(engines)
	m.setWeights(cat)
	m.catalogs.Swap(loaded)
	return loaded, nil
}

// serveNeeds lists what serve needs of its environment for the catalog and does not have:
// each remote account's API key (its environment variable or file), and --public-url where a
// remote account fetches asset references from this service (needsPublicURL).
func (c *Config) serveNeeds(cat *catalog.Catalog, getenv func(string) string, publicURLSet bool) []string {
	var out []string
	for _, acc := range cat.Accounts() {
		if !acc.Kind.Remote() {
			continue
		}
		if _, err := acc.APIKey(getenv, catalog.ReadKeyFile); err != nil {
			out = append(out, err.Error())
		}
	}
	if !publicURLSet {
		if acc, ok := c.needsPublicURL(cat); ok {
			out = append(out, fmt.Sprintf("upstream %s (kind %s) fetches asset references from this service: serve needs --public-url (MEDIAGEN_PUBLIC_URL) set to the address it can reach", acc.Name, acc.Kind))
		}
	} else if msg := publicURLTaken(cat, c.PublicURL); msg != "" {
		out = append(out, msg)
	}
	return out
}

// publicURLTaken says why the catalog cannot run with this public URL: a tenant lists the
// service's own host among its addresses, where requests would take only that tenant's keys
// and every other tenant would be locked out of its own links.
func publicURLTaken(cat *catalog.Catalog, publicURL string) string {
	t, ok := cat.OwnerOfHost(publicURL)
	if !ok {
		return ""
	}
	return fmt.Sprintf("tenant %q lists an address on the host of --public-url (%s), the service's own address for every tenant; give the tenant a host of its own", t.ID, publicURL)
}

// accountChanges lists the changes of an account a reload refuses: its kind and its base URL
// (and a vertex account's project, location and storage_uri) are where its jobs live, so a task in flight on it would be polled at an API that never
// heard of its job. Add an account under a new name and bind the aliases to it instead.
func accountChanges(old, next *catalog.Catalog) []string {
	var out []string
	for _, acc := range next.Accounts() {
		was, ok := old.Upstream(acc.Name)
		switch {
		case !ok:
		case was.Kind != acc.Kind:
			out = append(out, fmt.Sprintf("upstream %q: kind changes from %s to %s; the jobs of tasks in flight live at the old one: add a new account and bind the aliases to it", acc.Name, was.Kind, acc.Kind))
		case was.BaseURL != acc.BaseURL:
			out = append(out, fmt.Sprintf("upstream %q: base_url changes; the jobs of tasks in flight live at the old one: add a new account and bind the aliases to it", acc.Name))
		case was.Project != acc.Project || was.Location != acc.Location || was.StorageURI != acc.StorageURI:
			// A vertex operation lives in its project and location, and its video under the
			// storage_uri it was created with: the client reads neither elsewhere.
			out = append(out, fmt.Sprintf("upstream %q: project, location or storage_uri changes; the jobs of tasks in flight live at the old one: add a new account and bind the aliases to it", acc.Name))
		}
	}
	return out
}

// rebuildEngines makes the engines of a new catalog: every remote account's client anew (its
// key re-read, its timeout and rate from the catalog), and a local engine for each local
// account that has none yet. Engines of accounts the catalog no longer names stay, so their
// tasks in flight finish. Engines a test injected (Main.Upstreams) are kept as they are.
func (m *Main) rebuildEngines(cat *catalog.Catalog) (*engineSet, error) {
	old := m.reload.engines.Load()
	next := &engineSet{video: maps.Clone(old.video), speech: maps.Clone(old.speech)}
	worker := old.video != nil && m.Upstreams == nil
	for _, acc := range cat.Accounts() {
		switch {
		case acc.Kind.Remote():
			speaks := remoteSpeaks(acc.Kind) && next.speech != nil
			if !worker && !speaks {
				continue
			}
			c, err := newRemoteClient(acc, m.getenv, m.FetchTLS, m.frames, m.reload.fetch)
			if err != nil {
				return nil, err
			}
			if u, ok := videoUpstream(c); ok && worker {
				next.video[acc.Name] = u
			}
			if sp, ok := c.(provider.Synthesizer); ok && speaks {
				next.speech[acc.Name] = sp
			}
		case acc.Kind == catalog.KindFFmpeg && worker:
			e, err := m.localEngine(acc)
			if err != nil {
				return nil, err
			}
			next.video[acc.Name] = video.Upstream{Enhancer: e}
		case acc.Kind == catalog.KindEspeak && m.engine != nil && next.speech != nil:
			e, err := m.localEngine(acc)
			if err != nil {
				return nil, err
			}
			next.speech[acc.Name] = e
		}
	}
	return next, nil
}

// localEngine is the engine of a local account: the one made at start or by an earlier
// reload (its job directory and max_concurrent are those it was made with), or a new one.
func (m *Main) localEngine(acc catalog.UpstreamAccount) (*sandbox.Engine, error) {
	if e, ok := m.locals[acc.Name]; ok {
		return e, nil
	}
	e, err := m.newLocalEngine(acc, m.reload.tools, m.reload.fetch)
	if err != nil {
		return nil, err
	}
	if m.locals == nil {
		m.locals = map[string]*sandbox.Engine{}
	}
	m.locals[acc.Name] = e
	return e, nil
}

// apiReloader is this process's reload as the admin API drives it (POST
// /admin/v1/catalog/reload).
type apiReloader struct{ m *Main }

func (a apiReloader) ReloadCatalog(ctx context.Context) (opadmin.Reloaded, error) {
	prev := a.m.catalogs.Loaded().Hash
	l, err := a.m.ReloadCatalog(ctx, triggerAPI)
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr):
		// The operator's own file: saying why it cannot be read is the point.
		return opadmin.Reloaded{}, &apierr.Error{Kind: apierr.KindInvalid, Code: "catalog_refused",
			Message: "The catalog file cannot be read; the catalog in force stays: " + pathErr.Error() + "."}
	}
	if err != nil {
		return opadmin.Reloaded{}, err
	}
	return opadmin.Reloaded{ReplicaID: a.m.reload.replicaID, Hash: l.Hash, PreviousHash: prev, LoadedAt: l.LoadedAt}, nil
}

// Handled marks the request the API recorded for the other replicas as done here, so that
// this replica's own poll does not reload a second time.
func (a apiReloader) Handled(request int64) {
	r := &a.m.reload
	r.mu.Lock()
	defer r.mu.Unlock()
	if request > r.seen {
		r.seen = request
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := a.m.reportCatalog(ctx, time.Now()); err != nil {
			a.m.log.Warn("catalog: this replica's version not recorded", "err", err)
		}
	}
}
