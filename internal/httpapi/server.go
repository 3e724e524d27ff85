// Package httpapi is the HTTP transport: one flat routing table, middleware, handlers that
// return errors, and the one adapter that turns those errors into envelopes.
package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/asset"
	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/limits"
	"mediagen/internal/netlimit"
	"mediagen/internal/speech"
	"mediagen/internal/store"
	"mediagen/internal/video"
	"mediagen/internal/webhook"
)

// DefaultMaxBodyBytes bounds JSON request bodies. The largest legitimate body, a request with
// 50 content items of long URLs and a long prompt, stays far below it.
const DefaultMaxBodyBytes = 1 << 20

// Store is what the HTTP edge reads itself: keys to authenticate, balances, and a ping for
// readiness. Everything else goes through the use cases. The SQL store satisfies it.
type Store interface {
	KeyByHash(ctx context.Context, hash []byte) (store.Key, error)
	Balance(ctx context.Context, keyID string) (store.Balance, error)
	// UsageReport reads the usage rollups, for a key's own figures (GET /v1/billing/usage).
	UsageReport(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error)
	Ping(ctx context.Context) error
}

// Config holds what the server needs.
type Config struct {
	Store   Store
	Catalog *catalog.Catalog
	// Catalogs, when set, holds the catalog in force and Catalog is ignored: each request
	// reads it once, at authentication, and keeps that one to its end (a live reload swaps
	// it for the requests after).
	Catalogs     *catalog.Holder
	Logger       *slog.Logger
	Registry     *prometheus.Registry // metrics are registered here and served on /metrics
	MaxBodyBytes int64
	Now          func() time.Time
	Videos       *video.Service
	Links        video.Linker // mints temporary links to stored results (nil: none yet)
	// Files serves GET /v1/files/{key...}: signed, expiring links to stored results.
	Files interface {
		ServeFile(w http.ResponseWriter, r *http.Request) error
	}
	// OpsOnly serves only /healthz, /readyz and /metrics (a worker-only process).
	OpsOnly bool
	// MetricsElsewhere leaves /metrics off this handler: the process serves it on a listener
	// of its own (MetricsHandler), so the public address does not show it.
	MetricsElsewhere bool
	// KeyCacheTTL keeps authenticated keys in memory this long (0: look up every request).
	// A revocation takes effect within it.
	KeyCacheTTL time.Duration
	// Speech serves POST /v1/audio/speech (nil: the route answers 503).
	Speech *speech.Service
	// Assets serves the asset library and the verification page (nil: they answer 503).
	Assets *asset.Service
	// Uploads stores input_reference files of OpenAI-shaped creates (nil: multipart creates
	// answer 503); MaxUploadBytes bounds one (0: DefaultMaxUploadBytes).
	Uploads        blob.Store
	MaxUploadBytes int64
	// Limiter enforces the catalog's request-rate and concurrent-request limits in this
	// process (nil: a limiter of its own on Now, each limit enforced in full).
	Limiter *limits.Limiter
	// Downloads bounds the file downloads (GET /v1/files) per client address, per file and in
	// all, and their rate per client address (nil: the defaults, with no total).
	Downloads *limits.Downloads
	// VerifyRates bounds the verification page's requests per client address (nil: the
	// defaults, limits.VerifyRequestsPerSecond and VerifyBurst).
	VerifyRates *limits.ClientRates
	// Proxies are the reverse proxies whose X-Forwarded-For names the client address
	// (--trusted-proxies); without any, the client is the connection's peer.
	Proxies netlimit.Proxies
	// WriteStall, BodyReadStall and BodyReadTimeout override DefaultWriteStall,
	// DefaultBodyReadStall and DefaultBodyReadTimeout (tests; 0: the default).
	WriteStall, BodyReadStall, BodyReadTimeout time.Duration
	// Tracer, when set, makes each request a server span (trace.go); nil: no tracing.
	Tracer trace.Tracer
	// Webhooks serves /v1/webhook_endpoints for tenants whose operator switched webhooks on
	// (nil: those paths are unknown routes for everyone).
	Webhooks *webhook.Service
}

// Server is the API.
type Server struct {
	store    Store
	catalogs *catalog.Holder
	log      *slog.Logger
	metrics  *metrics
	reg      *prometheus.Registry
	maxBody  int64
	now      func() time.Time
	mux      *http.ServeMux
	videos   *video.Service
	links    video.Linker
	files    interface {
		ServeFile(w http.ResponseWriter, r *http.Request) error
	}
	opsOnly bool
	// metricsElsewhere: /metrics is not a route of this handler (Config.MetricsElsewhere).
	metricsElsewhere bool
	keys             *keyCache
	speech           *speech.Service
	assets           *asset.Service
	uploads          blob.Store
	maxUpload        int64
	limiter          *limits.Limiter
	// rateLimited counts 429s by scope and limit (limits.go).
	rateLimited *prometheus.CounterVec
	downloads   *limits.Downloads
	verifyRates *limits.ClientRates
	proxies     netlimit.Proxies
	writeStall  time.Duration
	bodyPace    netlimit.Pace
	edge        edgeMetrics
	// console serves /console/ (SetConsole); nil: those paths are the API's 404.
	console atomic.Pointer[http.Handler]
	tracer  trace.Tracer // nil: no spans
	// webhooks serves the endpoint routes (nil: unknown routes; webhooks.go).
	webhooks *webhook.Service
}

// New builds the server and its routing table.
func New(c Config) *Server {
	s := &Server{
		store: c.Store, catalogs: c.Catalogs, log: c.Logger, reg: c.Registry,
		maxBody: c.MaxBodyBytes, now: c.Now, mux: http.NewServeMux(),
		videos: c.Videos, links: c.Links, files: c.Files, opsOnly: c.OpsOnly, metricsElsewhere: c.MetricsElsewhere,
		keys: newKeyCache(c.KeyCacheTTL), speech: c.Speech,
		uploads: c.Uploads, maxUpload: c.MaxUploadBytes,
	}
	if s.maxUpload <= 0 {
		s.maxUpload = DefaultMaxUploadBytes
	}
	if vs, ok := c.Store.(video.Store); ok && s.videos == nil {
		// A server built without a video service (tests of other routes) still answers the
		// video routes from its store.
		s.videos = &video.Service{Store: vs}
	}
	if s.catalogs == nil {
		s.catalogs = catalog.Static(c.Catalog)
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.reg == nil {
		s.reg = prometheus.NewRegistry()
	}
	if s.maxBody <= 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.now == nil {
		s.now = time.Now
	}
	s.metrics = newMetrics(s.reg)
	s.rateLimited = newRateLimited(s.reg)
	s.downloads, s.proxies = c.Downloads, c.Proxies
	if s.downloads == nil {
		s.downloads = limits.NewDownloads(s.now, limits.DownloadLimits{})
	}
	s.verifyRates = c.VerifyRates
	if s.verifyRates == nil {
		s.verifyRates = limits.NewClientRates(s.now, limits.VerifyRequestsPerSecond, limits.VerifyBurst, "verification page requests")
	}
	s.writeStall = c.WriteStall
	if s.writeStall <= 0 {
		s.writeStall = DefaultWriteStall
	}
	s.bodyPace = BodyPace(c.BodyReadStall, c.BodyReadTimeout)
	s.edge = newEdgeMetrics(s.reg, s.downloads)
	s.limiter = c.Limiter
	if s.limiter == nil {
		s.limiter = limits.New(s.now, 1)
	}
	s.assets = c.Assets
	s.tracer = c.Tracer
	s.webhooks = c.Webhooks
	s.routes()
	return s
}

// routes is the whole routing table.
func (s *Server) routes() {
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /readyz", s.readyz)
	if !s.metricsElsewhere {
		s.mux.Handle("GET /metrics", route{s.metricsHandler()})
	}
	if s.opsOnly {
		return
	}

	s.handle("GET /v1/billing/balance", s.auth(s.getBalance))
	s.handle("GET /v1/billing/usage", s.auth(s.getUsage))
	s.handle("POST /v1/videos", s.auth(s.createVideo))
	s.handle("GET /v1/videos", s.auth(s.listVideos))
	s.handle("GET /v1/videos/{task_id}", s.auth(s.getVideo))
	s.handle("GET /v1/videos/{task_id}/content", s.auth(s.videoContent))
	s.handle("DELETE /v1/videos/{task_id}", s.auth(s.deleteVideo))
	s.handle("POST /v1/audio/speech", s.auth(s.createSpeech))
	s.assetRoutes()
	s.webhookRoutes()
	s.mux.Handle("/console/", route{http.HandlerFunc(s.serveConsole)})
	s.mux.Handle("/console", route{http.HandlerFunc(s.serveConsole)})
	if s.files != nil {
		s.handle("GET /v1/files/{key...}", s.download(s.files.ServeFile)) // the signature is the credential
	}
}

// Handler returns the server wrapped in its outer middleware.
func (s *Server) Handler() http.Handler {
	h := s.observe(s.recoverer(http.HandlerFunc(s.dispatch)))
	if s.tracer != nil {
		h = s.traceRequests(h)
	}
	return s.requestID(h)
}

// dispatch routes the request, answering unknown paths, unclean paths and wrong methods with
// envelopes instead of the mux's plain-text pages and redirects.
func (s *Server) dispatch(w http.ResponseWriter, r *http.Request) {
	if len(r.RequestURI) > MaxRequestTarget {
		s.writeError(w, r, apiErrURITooLong())
		return
	}
	h, pattern := s.mux.Handler(r)
	if _, ours := h.(route); ours {
		if info := infoFrom(r.Context()); info != nil {
			info.route = pattern // a pattern of the routing table: a closed set for the metrics
		}
		// ServeMux.ServeHTTP, not h: only it sets the path values ({task_id}) on r.
		s.mux.ServeHTTP(w, r)
		return
	}
	probe := &statusOnly{header: http.Header{}}
	h.ServeHTTP(probe, r)
	switch probe.status {
	case http.StatusMethodNotAllowed:
		w.Header().Set("Allow", probe.header.Get("Allow"))
		s.writeError(w, r, apiErrMethod(r.Method))
	case http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		// The mux redirects unclean paths ("//", "/./", "/../") and a subtree root without its
		// slash to their clean form. The API has one spelling per path, and a redirect turns
		// a POST into a GET in many clients (and would lead a signed link elsewhere): answer
		// the envelope instead.
		s.writeError(w, r, apiErrUncleanPath())
	default:
		s.writeError(w, r, apiErrNotFound())
	}
}

// statusOnly records what the mux's fallback handler would answer, and discards the body.
type statusOnly struct {
	header http.Header
	status int
}

func (p *statusOnly) Header() http.Header         { return p.header }
func (p *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (p *statusOnly) WriteHeader(code int)        { p.status = code }

// SetConsole mounts the web console (internal/console) on /console/ of the public address. The
// console is built after the server because it applies the server's limits (Admit).
func (s *Server) SetConsole(h http.Handler) { s.console.Store(&h) }

// serveConsole hands /console/ to the console: its pages are HTML, not the API's envelopes.
func (s *Server) serveConsole(w http.ResponseWriter, r *http.Request) {
	h := s.console.Load()
	if h == nil {
		s.writeError(w, r, apiErrNotFound())
		return
	}
	s.nameConsoleSpan(*h, r)
	(*h).ServeHTTP(w, r)
}

// Admit applies the catalog's request-rate and concurrent-request limits of the caller's key
// and tenant to one console write, as to an API request; end is called when it is done.
func (s *Server) Admit(c keys.Caller) (end func(), err error) { return s.admit(&c) }
