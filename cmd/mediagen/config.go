package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/console"
	"mediagen/internal/limits"
	"mediagen/internal/logctx"
	"mediagen/internal/media/budget"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/media/samples"
	"mediagen/internal/netlimit"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/store/sqlite"
)

// Config is everything the binary reads from flags and the environment. Each flag --name has
// the environment variable MEDIAGEN_NAME (upper case, '-' → '_') as its default.
type Config struct {
	DB        string
	Listen    string
	DataDir   string
	PublicURL string
	// Blob is where results and speech audio are kept: "" for <data-dir>/blobs, or an
	// s3://bucket/prefix?endpoint=… URL (blob.ParseS3URL).
	Blob      string
	Catalog   string
	LogFormat string
	LogLevel  string
	// FetchAllow opens safefetch to addresses it refuses by default: "loopback" and/or CIDRs,
	// comma-separated. For operators' own development and the sandbox; off by default.
	FetchAllow string
	// SandboxSamples serves the sandbox's built-in sample media to the service's own fetch
	// client (auto: only with the embedded demo catalog; on; off). See internal/media/samples.
	SandboxSamples string
	// DebugListen, when set, serves net/http/pprof on its own listener (never on the API's).
	DebugListen string
	// MetricsListen, when set, serves /metrics on its own listener and not on the API's.
	MetricsListen string
	// AdminListen, when set, serves the admin API (/admin/v1/) on its own listener; never on
	// the API's.
	AdminListen string
	// MaxConns bounds the API listener's open connections (0: derived from the open-file
	// limit, at most defaultMaxConns); MaxConnsPerClient bounds one client address's.
	MaxConns, MaxConnsPerClient int
	// TrustedProxies are the reverse proxies (addresses and CIDRs, comma-separated) whose
	// X-Forwarded-For names the client, and whose connections are exempt from the
	// per-client connection bound.
	TrustedProxies string
	proxies        netlimit.Proxies

	Role        string        // all, api or worker
	SigningKey  string        // hex HMAC key for file links; default: <data-dir>/signing.key
	LinkTTL     time.Duration // lifetime of result links
	Retention   time.Duration // stored results older than this are deleted
	SandboxPace time.Duration // minimum duration of a sandbox job
	// EncodePreset is the x264/x265 speed preset of what this process encodes itself: the
	// sandbox engine, the local ffmpeg accounts and the sandbox samples.
	EncodePreset string
	Workers      int           // task steps running at once in this process
	TaskDeadline time.Duration // unfinished tasks older than this expire
	// TaskRetryMax caps the wait between two attempts of a task step that failed transiently.
	TaskRetryMax time.Duration
	// JobLease is how long a claimed background job is held without a heartbeat: the jobs of
	// a killed process are taken over within it (docs/architecture.md#the-job-engine).
	JobLease    time.Duration
	KeyCacheTTL time.Duration // how long an authenticated key is remembered
	// ConsoleSessionTTL is how long a web console session lasts after sign-in.
	ConsoleSessionTTL time.Duration
	// CatalogPoll is how often serve looks for a reload request in the database
	// (`mediagen admin catalog reload`, docs/catalog.md).
	CatalogPoll time.Duration
	// CatalogWatch reloads the catalog when its file's content changes, checked at every
	// CatalogPoll (a Kubernetes ConfigMap mount, whose kubelet swaps a symlink: catalog_watch.go).
	CatalogWatch bool
	DBWait       time.Duration // how long serve waits for an unreachable PostgreSQL at start
	// LimitReplicas divides the request-rate limits among this many API replicas (docs/limits.md).
	LimitReplicas int
	TaskCache     int // tasks kept in memory for polling
	// TaskCacheTTL bounds how stale a cached task can be after another replica's write whose
	// notification was late (PostgreSQL; exact on SQLite).
	TaskCacheTTL time.Duration
	// BalanceCacheTTL bounds how stale a cached balance can be after a charge or credit made by
	// another process; this process's own postings invalidate at once.
	BalanceCacheTTL time.Duration
	VerifyTTL       time.Duration // lifetime of a real-human verification token
	AssetMaxMB      int           // largest accepted asset source, in MiB
	MaxProbes       int           // remote videos this process measures at once (submission)
	// MediaSlots is the media budget: media processes (ffmpeg, ffprobe, espeak-ng) this
	// process runs at once, whatever starts them; 0 derives it from the cores and memory.
	MediaSlots int
	// SpeechTimeout is the bounded wait of POST /v1/audio/speech: the engine must deliver the
	// audio within it, and a retry waits at most this long for a running original.
	SpeechTimeout time.Duration
	// GCPercent is the Go collector's target for serve (GOGC), unless GOGC is set: the live heap
	// of a replica is small, so the default of 100 collects several times a second under load.
	GCPercent int
	gogcSet   bool // GOGC is in the environment: it wins
	// MemoryLimitMiB is the Go runtime's soft memory limit for serve (GOMEMLIMIT), unless
	// GOMEMLIMIT is set: it caps what --gc-percent's multiplier makes of a burst of garbage.
	MemoryLimitMiB int
	gomemlimitSet  bool
	serving        bool // the HTTP flags were registered (serve)

	envErrs []string
}

// envName maps a flag name to its environment variable.
func envName(flagName string) string {
	return "MEDIAGEN_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// register adds the flags that every command shares (database, data, catalog, logging);
// serve adds the HTTP ones.
func (c *Config) register(fs *flag.FlagSet, getenv func(string) string, withHTTP bool) {
	str := func(p *string, name, def, usage string) {
		if v := getenv(envName(name)); v != "" {
			def = v
		}
		fs.StringVar(p, name, def, usage+" (env "+envName(name)+")")
	}
	// Environment values that do not parse are kept as text and reported by validate.
	dur := func(p *time.Duration, name string, def time.Duration, usage string) {
		if v := getenv(envName(name)); v != "" {
			if d, err := time.ParseDuration(v); err == nil {
				def = d
			} else {
				c.envErrs = append(c.envErrs, fmt.Sprintf("%s=%q is not a duration such as 30s or 24h", envName(name), v))
			}
		}
		fs.DurationVar(p, name, def, usage+" (env "+envName(name)+")")
	}
	num := func(p *int, name string, def int, usage string) {
		if v := getenv(envName(name)); v != "" {
			if n, err := strconv.Atoi(v); err == nil {
				def = n
			} else {
				c.envErrs = append(c.envErrs, fmt.Sprintf("%s=%q is not a number", envName(name), v))
			}
		}
		fs.IntVar(p, name, def, usage+" (env "+envName(name)+")")
	}
	boolean := func(p *bool, name string, def bool, usage string) {
		if v := getenv(envName(name)); v != "" {
			if b, err := strconv.ParseBool(v); err == nil {
				def = b
			} else {
				c.envErrs = append(c.envErrs, fmt.Sprintf("%s=%q is not true or false", envName(name), v))
			}
		}
		fs.BoolVar(p, name, def, usage+" (env "+envName(name)+")")
	}
	str(&c.DataDir, "data-dir", "data", "directory for the SQLite database and stored media")
	str(&c.DB, "db", "", "database URL: sqlite:PATH or postgres://…; default sqlite:<data-dir>/mediagen.db")
	str(&c.Catalog, "catalog", "", "operator catalog file (YAML); empty uses the embedded demo catalog")
	str(&c.LogFormat, "log-format", "text", "log format: text or json")
	str(&c.LogLevel, "log-level", "info", "log level: debug, info, warn or error")
	c.serving = withHTTP
	if withHTTP {
		str(&c.Listen, "listen", "127.0.0.1:8080", "HTTP listen address")
		str(&c.PublicURL, "public-url", "", "public base URL of the service, used in signed links (required by a worker with a remote upstream account unless --blob is an S3 bucket); default http://<listen>")
		str(&c.Role, "role", "all", "what this process runs: all (API and worker), api, or worker")
		str(&c.Blob, "blob", "", "where results and speech audio are kept: empty for <data-dir>/blobs, or s3://BUCKET/PREFIX?endpoint=HOST:PORT[&region=R&secure=false&public_endpoint=HOST:PORT] with the credentials in AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (README, \"Object storage\")")
		str(&c.SigningKey, "signing-key", "", "hex key that signs file links; replicas must share it (default: created in <data-dir>/signing.key)")
		dur(&c.LinkTTL, "link-ttl", 24*time.Hour, "lifetime of signed result links")
		dur(&c.Retention, "retention", 7*24*time.Hour, "stored results older than this are deleted")
		dur(&c.SandboxPace, "sandbox-pace", 2*time.Second, "minimum wall time of a sandbox job (progress rises over it)")
		str(&c.EncodePreset, "encode-preset", ffmpeg.DefaultPreset, "x264/x265 speed preset of the videos this process encodes itself (the sandbox engine, local ffmpeg accounts, sandbox samples): ultrafast, superfast, veryfast, faster, fast, medium, slow, slower or veryslow. Faster presets cost less CPU and make larger files (ultrafast: about a third of veryfast's CPU, 2-3 times the size)")
		dur(&c.TaskDeadline, "task-deadline", 6*time.Hour, "tasks not finished this long after acceptance expire")
		dur(&c.TaskRetryMax, "task-retry-max", 2*time.Minute, "longest wait between two attempts of a video task step that failed transiently (an upstream 5xx, a lost answer): the wait doubles from 1s up to it, for at most 8 attempts (1s to 1h)")
		num(&c.Workers, "workers", 4, "task steps this process runs at once")
		dur(&c.JobLease, "job-lease", 30*time.Second, "how long a background job's claim holds without a heartbeat (renewed every third of it): the jobs of a killed process are taken over within it")
		dur(&c.SpeechTimeout, "speech-timeout", 60*time.Second, "bounded wait of a speech request: no audio within it fails the request with speech_timeout and refunds it")
		dur(&c.VerifyTTL, "verify-ttl", 15*time.Minute, "lifetime of a real-human verification token")
		num(&c.AssetMaxMB, "asset-max-mb", 1024, "largest accepted asset source, in MiB (images are capped at 32 MiB)")
		num(&c.MaxProbes, "max-probes", 32, "remote videos this process measures at once for submissions (each holds at most 8 MiB, from a server without range support); a request that finds none free within its 20 s measuring window gets a 503")
		num(&c.MediaSlots, "media-slots", 0, fmt.Sprintf("media processes (ffmpeg, ffprobe, espeak-ng) this process runs at once, whatever starts them (renders, results, speech, thumbnails, sweeps); waiting work is served fairly across tenants. 0 derives it: two per core, at most one per GiB of memory, at least 2 (%d here; at most %d). A thumbnail request that finds no slot within %s gets a 503 (a 429 when its tenant holds its share) with Retry-After (docs/limits.md)", budget.DefaultSize(), budget.MaxSize, budget.RequestWait))
		num(&c.TaskCache, "task-cache", 20000, "tasks kept in memory for polling; 0 disables. SQLite: exact (every task write goes through this process). PostgreSQL: other replicas' writes arrive by LISTEN/NOTIFY, bounded by --task-cache-ttl")
		dur(&c.TaskCacheTTL, "task-cache-ttl", time.Second, "PostgreSQL: longest a cached task is served after the read that filled it, the bound on staleness if another replica's notification is late or lost (at most 1s)")
		dur(&c.BalanceCacheTTL, "balance-cache-ttl", time.Second, "longest a cached balance is served; this process's own charges and credits invalidate at once, other replicas' and `admin credit` show within it (at most 1s; 0 disables)")
		num(&c.LimitReplicas, "limit-replicas", 1, "request-rate limits: each replica enforces 1/N of the catalog's rates and bursts; set N (at most 1000) to the number of API replicas for a cluster-wide rate, 1 to enforce the full rate in every replica (docs/limits.md)")
		dur(&c.DBWait, "db-wait", 30*time.Second, "PostgreSQL and an S3 --blob: at start, keep trying an unreachable server this long before giving up (a replica restarted while the database or the store restarts); 0 gives up at once. A missing database, role or bucket, wrong credentials or a wrong region stop at once")
		dur(&c.CatalogPoll, "catalog-poll", time.Second, "how often serve looks for a catalog reload request in the database (`mediagen admin catalog reload`); every replica reloads within it")
		boolean(&c.CatalogWatch, "catalog-watch", false, "reload the catalog when the --catalog file's content changes, checked every --catalog-poll (the file is followed through symlinks, so a Kubernetes ConfigMap's update is seen); a file that does not check is refused once and the catalog in force stays")
		dur(&c.ConsoleSessionTTL, "console-session-ttl", console.DefaultSessionTTL, "how long a web console session lasts after sign-in (docs/console.md)")
		dur(&c.KeyCacheTTL, "key-cache-ttl", 2*time.Second, "remember authenticated keys this long; a revocation takes effect within it (0 disables)")
		num(&c.GCPercent, "gc-percent", 400, "Go garbage collection target of serve: the heap grows this many percent over the live heap before a collection (GOGC); higher trades memory for CPU, and 400 took a third off the CPU of a create (bench/README.md). The GOGC environment variable, when set, wins; 0 or less leaves Go's default")
		c.gogcSet = getenv("GOGC") != ""
		num(&c.MemoryLimitMiB, "memory-limit-mb", defaultMemoryLimitMiB, "soft limit of the Go runtime's memory, in MiB (GOMEMLIMIT): the collector runs more often as the process nears it, so that --gc-percent's headroom (5 × the live heap at 400) cannot turn thousands of connections' garbage into hundreds of MiB; a live heap above it costs collector CPU, not a failure (docs/http.md). The GOMEMLIMIT environment variable, when set, wins; 0 disables")
		c.gomemlimitSet = getenv("GOMEMLIMIT") != ""
		str(&c.MetricsListen, "metrics-listen", "", "serve /metrics on this separate address (e.g. 127.0.0.1:9090) instead of the API's; empty: /metrics is on the API address, where anyone who reaches it can read it (upstream account names, volumes, overage)")
		num(&c.MaxConns, "max-conns", 0, "connections the API listener holds at once; 0 derives it from the open-file limit (at most 4096, docs/http.md). Past 75% of it only clients holding fewer than 8 connections get a new one; at it, idle keep-alive connections are closed first")
		num(&c.MaxConnsPerClient, "max-conns-per-client", defaultConnsPerClient, "connections one client address (an IPv4 address, an IPv6 /64) holds at once on the API listener")
		str(&c.TrustedProxies, "trusted-proxies", "", "reverse proxies in front of serve (addresses or CIDRs, comma-separated): their X-Forwarded-For names the client address of the file-download limits, and their connections are exempt from --max-conns-per-client; empty: the client is the connection's peer")
		str(&c.AdminListen, "admin-listen", "", "serve the admin API (/admin/v1/, docs/admin.md) on this separate address, e.g. 127.0.0.1:9091; off when empty. It is never served on the API's address; keep it on a private network")
		str(&c.DebugListen, "debug-listen", "", "serve Go profiling (/debug/pprof/) on this separate address, e.g. 127.0.0.1:6060; off when empty. Never expose it publicly")
		str(&c.SandboxSamples, "sandbox-samples", "auto", "serve the sandbox's sample media at https://"+samples.Host+"/… to the service's own fetches, with no network I/O: auto (only with the embedded demo catalog), on or off")
		str(&c.FetchAllow, "fetch-allow", "", "let media fetches reach these non-public addresses: 'loopback' and/or CIDRs, comma-separated (development only)")
	}
}

// validate checks the values flags cannot type-check.
func (c *Config) validate() error {
	if c.LogFormat != "text" && c.LogFormat != "json" {
		return fmt.Errorf("--log-format %q: want text or json", c.LogFormat)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	if len(c.envErrs) > 0 {
		return errors.New(strings.Join(c.envErrs, "; "))
	}
	switch c.Role {
	case "", "all", "api", "worker":
	default:
		return fmt.Errorf("--role %q: want all, api or worker", c.Role)
	}
	if c.SpeechTimeout < 0 {
		return errors.New("--speech-timeout must not be negative")
	}
	if c.TaskCacheTTL < 0 || c.TaskCacheTTL > time.Second {
		return errors.New("--task-cache-ttl must be between 0 and 1s (PostgreSQL needs more than 0; to disable the cache, use --task-cache 0)")
	}
	if c.BalanceCacheTTL < 0 || c.BalanceCacheTTL > time.Second {
		return errors.New("--balance-cache-ttl must be between 0 (off) and 1s")
	}
	if c.serving && c.MaxProbes < 1 {
		return errors.New("--max-probes must be at least 1")
	}
	if c.MediaSlots < 0 || c.MediaSlots > budget.MaxSize {
		return fmt.Errorf("--media-slots must be from 0 (derived from the cores and memory) to %d, not %d", budget.MaxSize, c.MediaSlots)
	}
	if c.TaskCache < 0 {
		return errors.New("--task-cache must not be negative")
	}
	if c.LimitReplicas < 0 || c.LimitReplicas > limits.MaxReplicas {
		// The rates are divided by it: a huge N would make every bucket's wait longer than
		// a time.Duration holds.
		return fmt.Errorf("--limit-replicas must be from 0 to %d (0 and 1 both enforce the full rates), not %d", limits.MaxReplicas, c.LimitReplicas)
	}
	if c.serving && (c.CatalogPoll < 10*time.Millisecond || c.CatalogPoll > time.Minute) {
		return errors.New("--catalog-poll must be from 10ms to 1m")
	}
	if c.serving && (c.TaskRetryMax < time.Second || c.TaskRetryMax > time.Hour) {
		return errors.New("--task-retry-max must be from 1s to 1h")
	}
	if c.Workers < 0 || c.LinkTTL < 0 || c.Retention < 0 || c.TaskDeadline < 0 || c.JobLease < 0 {
		return errors.New("--workers, --link-ttl, --retention, --task-deadline and --job-lease must not be negative")
	}
	if _, err := c.fetchOptions(); err != nil {
		return err
	}
	if c.MaxConns < 0 || c.MaxConnsPerClient < 0 {
		return errors.New("--max-conns and --max-conns-per-client must not be negative")
	}
	ps, err := netlimit.ParseProxies(c.TrustedProxies)
	if err != nil {
		return fmt.Errorf("--trusted-proxies: %w", err)
	}
	c.proxies = ps
	if c.serving && !ffmpeg.KnownPreset(c.EncodePreset) {
		return fmt.Errorf("--encode-preset %q: want one of %s", c.EncodePreset, strings.Join(ffmpeg.Presets, ", "))
	}
	switch c.SandboxSamples {
	case "", "auto", "on", "off":
	default:
		return fmt.Errorf("--sandbox-samples %q: want auto, on or off", c.SandboxSamples)
	}
	if c.DB == "" {
		c.DB = "sqlite:" + filepath.Join(c.DataDir, "mediagen.db")
	}
	return nil
}

// defaultMemoryLimitMiB is --memory-limit-mb's default. A replica's live heap is a few MiB to a
// few tens (bench/README.md: 60-76 MiB resident after a full API benchmark); under the edge's
// bounds an attack's live heap is under 100 MiB (bench/conns), which --gc-percent 400 alone
// lets grow to five times that before a collection. 256 MiB keeps the process under 300 MB,
// the bound, and is reached by legitimate work only when every one of --max-probes
// reads 8 MiB from a server without range support at once.
const defaultMemoryLimitMiB = 256

// memoryLimit is the GOMEMLIMIT that serve sets, in bytes, if it sets one.
func (c *Config) memoryLimit() (int64, bool) {
	return int64(c.MemoryLimitMiB) << 20, c.MemoryLimitMiB > 0 && !c.gomemlimitSet
}

// gcTarget is the GOGC that serve sets, if it sets one: not over a GOGC from the environment.
func (c *Config) gcTarget() (int, bool) {
	return c.GCPercent, c.GCPercent > 0 && !c.gogcSet
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("--log-level %q: want debug, info, warn or error", s)
	}
	return l, nil
}

func (c *Config) logger(w io.Writer) *slog.Logger {
	lvl, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: lvl}
	// Every line logged with a request's context (or a job run's) carries its request_id.
	if c.LogFormat == "json" {
		return slog.New(logctx.NewHandler(slog.NewJSONHandler(w, opts)))
	}
	return slog.New(logctx.NewHandler(slog.NewTextHandler(w, opts)))
}

// loadCatalogVersion is loadCatalog with the catalog's version (the hash of the file's
// bytes) and load time.
func (c *Config) loadCatalogVersion(now time.Time) (*catalog.Loaded, bool, error) {
	if c.Catalog == "" {
		data := catalog.DemoYAML()
		return &catalog.Loaded{Catalog: catalog.Demo(), Hash: catalog.Hash(data), LoadedAt: now.UTC()}, true, nil
	}
	data, err := catalog.ReadFile(c.Catalog)
	if err != nil {
		return nil, false, err
	}
	cat, err := catalog.Parse(c.Catalog, data)
	if err != nil {
		return nil, false, err
	}
	return &catalog.Loaded{Catalog: cat, Hash: catalog.Hash(data), LoadedAt: now.UTC()}, false, nil
}

// needsPublicURL names a catalog account that needs --public-url in this configuration: a
// remote upstream fetches asset:// references through signed links to this service, and a
// loopback default would hand it links it cannot reach. With a bucket, every link is
// presigned at the store instead; an api-only process hands no links to upstreams.
func (c *Config) needsPublicURL(cat *catalog.Catalog) (catalog.UpstreamAccount, bool) {
	if c.Role == "api" || strings.HasPrefix(c.Blob, "s3://") {
		return catalog.UpstreamAccount{}, false
	}
	for _, acc := range cat.Accounts() {
		// An elevenlabs account speaks text only, and a seedspeech account is sent the
		// references' bytes: neither is handed a link.
		if acc.Kind.Remote() && acc.Kind != catalog.KindElevenLabs && acc.Kind != catalog.KindSeedSpeech {
			return acc, true
		}
	}
	return catalog.UpstreamAccount{}, false
}

// loadCatalog reads the configured catalog, or the embedded demo catalog when none is set.
func (c *Config) loadCatalog() (*catalog.Catalog, bool, error) {
	if c.Catalog == "" {
		return catalog.Demo(), true, nil
	}
	cat, err := catalog.Load(c.Catalog)
	return cat, false, err
}

// sqlitePath returns the file of a sqlite: URL.
func sqlitePath(dbURL string) (string, error) {
	path := strings.TrimPrefix(strings.TrimPrefix(dbURL, "sqlite:"), "//")
	if path == "" {
		return "", fmt.Errorf("database URL %q has no file path: want sqlite:PATH", dbURL)
	}
	return path, nil
}

// openStore opens the database named by the URL and applies migrations.
func openStore(ctx context.Context, dbURL string) (*sqldb.DB, error) {
	switch {
	case strings.HasPrefix(dbURL, "sqlite:"):
		path, err := sqlitePath(dbURL)
		if err != nil {
			return nil, err
		}
		return sqlite.Open(ctx, path)
	case strings.HasPrefix(dbURL, "postgres://"), strings.HasPrefix(dbURL, "postgresql://"):
		return postgres.Open(ctx, dbURL)
	default:
		return nil, fmt.Errorf("unsupported database URL %q: want sqlite:PATH or postgres://user@host/db", dbURL)
	}
}

// fetchOptions builds the SSRF policy for user-supplied URLs from --fetch-allow.
func (c *Config) fetchOptions() (safefetch.Options, error) {
	var o safefetch.Options
	for _, part := range strings.Split(c.FetchAllow, ",") {
		part = strings.TrimSpace(part)
		switch {
		case part == "":
		case part == "loopback":
			o.AllowLoopback = true
		default:
			p, err := netip.ParsePrefix(part)
			if err != nil {
				return o, fmt.Errorf("--fetch-allow %q: want 'loopback' or a CIDR such as 10.1.0.0/16", part)
			}
			o.AllowCIDRs = append(o.AllowCIDRs, p.Masked())
		}
	}
	return o, nil
}

// samplesOn says whether the sandbox samples are served: "auto" turns them on only with the
// embedded demo catalog, so an operator's catalog (a production configuration) never has them
// unless it asks.
func (c *Config) samplesOn(demoCatalog bool) bool {
	switch c.SandboxSamples {
	case "on":
		return true
	case "off":
		return false
	}
	return demoCatalog
}
