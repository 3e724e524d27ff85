package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/asset"
	"mediagen/internal/billing"
	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/console"
	"mediagen/internal/httpapi"
	"mediagen/internal/jobs"
	"mediagen/internal/limits"
	"mediagen/internal/media/budget"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/media/samples"
	"mediagen/internal/provider"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/routing"
	"mediagen/internal/speech"
	"mediagen/internal/video"
	"mediagen/internal/webhook"
)

// build assembles the service from the configuration: storage, the sandbox engine, the
// pipeline, the job engine with the kinds of this role, and the HTTP API (for the api role).
func (m *Main) build(ctx context.Context) (*httpapi.Server, error) {
	c := &m.Config
	key, err := m.signingKey()
	if err != nil {
		return nil, err
	}
	if err := m.openBlobs(ctx, key); err != nil {
		return nil, err
	}
	fetchOpts, _ := c.fetchOptions()
	fetchOpts.TLSConfig = m.FetchTLS
	reg := prometheus.NewRegistry()
	m.reg = reg
	// One budget of media processes for the whole process: every ffmpeg, ffprobe and
	// espeak-ng child of every part below waits in it, fairly across tenants (docs/limits.md).
	m.media = budget.New(budget.Config{Size: c.MediaSlots, Registry: reg})
	tools := ffmpeg.Tools{Preset: c.EncodePreset, Budget: m.media}
	// A process killed mid-run (SIGKILL, power loss) ran no deferred cleanup: its tools'
	// scratch directories stay in the temporary directory until someone removes them.
	if n, err := tools.RemoveStaleTemp(os.TempDir(), time.Now()); err != nil {
		m.log.Warn("stale scratch files not removed", "err", err)
	} else if n > 0 {
		m.log.Info("removed scratch files of stopped processes", "removed", n)
	}
	if c.samplesOn(m.demo) {
		fetchOpts.Samples = (&samples.Server{Tools: tools, Dir: filepath.Join(c.DataDir, "samples")}).Fetch()
		m.log.Info("sandbox samples on", "urls", samples.Names())
	}
	fetch := safefetch.New(fetchOpts)
	m.reload.tools, m.reload.fetch = tools, fetch // a reload makes new local engines with them
	registerStoreMetrics(reg, m.db)
	registerHealthMetrics(reg, m.db, m.blobs)
	m.setWeights(m.cat())
	tr := m.tracing.Tracer() // nil: tracing off
	m.jobs = jobs.New(jobs.Config{Store: m.db, Logger: m.log, Registry: reg, Weights: m.tenantWeights, Tracer: tr})
	overages := billing.NewOverages(reg)
	excess := billing.NewExcessMetrics(reg)
	bg, stop := context.WithCancel(context.WithoutCancel(ctx))
	m.bgStop = stop

	// Webhook deliveries go through a client of their own: the same address policy as every
	// fetch (--fetch-allow), no sandbox samples, short timeouts and a small read (webhook.NewClient).
	hookOpts := fetchOpts
	hookOpts.Samples = nil
	hooks := &webhook.Service{Store: m.db, Catalogs: m.catalogs, Client: webhook.NewClient(hookOpts), Logger: m.log, Notify: m.jobs.Notify}
	hooks.RegisterMetrics(reg)
	m.hooks = hooks

	videos := &video.Service{Store: m.db, Prober: video.URLProber{Client: fetch, Slots: video.NewProbeSlots(c.MaxProbes), Tracer: tr}, Accounts: m.catalogs.Upstream}
	assets, assetBlobs, err := m.buildAssets(ctx, key, fetchOpts, reg, hooks)
	if err != nil {
		return nil, err
	}
	videos.Assets = videoAssets{assets}
	videos.Blobs = m.blobs
	videos.FirstFrame = tools.FirstFrameJPG
	videos.Media = m.media
	var tasks *video.Tasks
	engines := &engineSet{}
	// One health per account for the process: routed video tasks and routed speech requests
	// count against the same breaker (internal/routing).
	router := &routing.Router{State: routing.NewBreakerState(reg), Policy: func(name string) (int, time.Duration) {
		acc, _ := m.cat().Upstream(name)
		return acc.BreakerPolicy()
	}}
	if c.Role != "api" {
		if err := tools.Check(ctx); err != nil {
			return nil, fmt.Errorf("the worker needs ffmpeg, ffprobe and espeak-ng (make run installs them): %w", err)
		}
		pace := c.SandboxPace
		if pace == 0 {
			pace = -1 // no minimum
		}
		m.engine, err = sandbox.New(sandbox.Config{Dir: filepath.Join(c.DataDir, "sandbox"), Tools: tools, Fetch: fetch, Pace: pace, Logger: m.log, OpenKey: m.openKey})
		if err != nil {
			return nil, fmt.Errorf("sandbox engine: %w", err)
		}
		upstreams := m.Upstreams
		if upstreams == nil {
			upstreams = map[string]video.Upstream{"sandbox": {Generator: m.engine, Enhancer: m.engine}}
			locals, err := m.localEngines(tools, fetch)
			if err != nil {
				return nil, err
			}
			for name, e := range locals {
				if acc, _ := m.cat().Upstream(name); acc.Kind == catalog.KindFFmpeg {
					upstreams[name] = video.Upstream{Enhancer: e}
				}
			}
			m.frames = frameFitter{tools: tools, fetch: fetch, blobs: m.blobs, linkTTL: c.LinkTTL}
			remotes, err := m.remoteUpstreams()
			if err != nil {
				return nil, err
			}
			for name, u := range remotes {
				upstreams[name] = u
			}
		}
		engines.video = upstreams
		pipeline := &video.Pipeline{
			Lookup: m.videoEngine, // the engines of the catalog in force (reload.go)
			Blobs:  blob.Traced(m.blobs, tr), Tools: tools, Fetch: fetch, LinkTTL: c.LinkTTL,
			PollMin: 200 * time.Millisecond, PollMax: 10 * time.Second,
			UpstreamErrors:  video.NewUpstreamErrors(reg),
			MaxInFlight:     func(name string) int { acc, _ := m.cat().Upstream(name); return acc.MaxInFlight },
			UpstreamWaits:   video.NewUpstreamWaits(reg),
			UpstreamCalls:   video.NewUpstreamCalls(reg),
			UpstreamCancels: video.NewUpstreamCancels(reg),
			AccountBroken:   video.NewAccountBroken(reg),
			Router:          router,
			Slots:           m.db.UpstreamSlots,
			Logger:          m.log,
			Tracer:          tr,
			ResultHosts: func(name string) func(string) bool {
				acc, _ := m.cat().Upstream(name)
				return acc.ResultHostAllowed()
			},
		}
		tasks = &video.Tasks{Store: m.db, Steps: pipeline, Logger: m.log, Metrics: video.NewTaskMetrics(reg), Overages: overages, Excess: excess,
			Accounts: m.catalogs.Upstream, Workers: c.Workers, Deadline: c.TaskDeadline, RetryMax: c.TaskRetryMax, Tracer: tr,
			Events: hooks}
		videos.Scheduled = func(string) { m.jobs.Notify(video.TaskKind) }
	}
	speechSvc, err := m.buildSpeech(ctx, tools, fetch, reg)
	if speechSvc != nil {
		speechSvc.Overages, speechSvc.Excess, speechSvc.Router = overages, excess, router
	}
	if err != nil {
		return nil, err
	}
	engines.speech = speechSvc.Engines
	speechSvc.Lookup = m.speechEngine
	speechSvc.Notify = m.jobs.Notify
	speechSvc.Events = hooks
	m.setEngines(engines)
	if err := m.registerJobs(m.jobs, assets, tasks, speechSvc, hooks); err != nil {
		return nil, err
	}
	if err := m.jobs.Start(bg); err != nil {
		return nil, err
	}
	api := httpapi.New(httpapi.Config{
		Store: m.db, Catalogs: m.catalogs, Logger: m.log, Registry: reg, Videos: videos,
		Links: video.BlobLinker{Blobs: m.blobs, TTL: c.LinkTTL}, Files: asset.Files{Assets: assetBlobs, Results: m.resultFiles()}, Assets: assets, OpsOnly: c.Role == "worker", MetricsElsewhere: c.MetricsListen != "",
		KeyCacheTTL: c.KeyCacheTTL,
		Speech:      speechSvc,
		Uploads:     m.blobs,
		Limiter:     limits.New(time.Now, c.LimitReplicas),
		Downloads:   limits.NewDownloads(time.Now, limits.DownloadLimits{Total: m.edge.Downloads}),
		Proxies:     c.proxies,
		Tracer:      tr,
		Webhooks:    hooks,
	})
	if c.Role != "worker" {
		// The tenant console is on the public listener, which browsers reach at --public-url:
		// a request addressed to its host came over https when that URL is https.
		common := m.consoleCommon()
		common.PublicURL = c.PublicURL
		tc, err := console.NewTenant(console.TenantConfig{
			Common: common, Store: m.db, Catalogs: m.catalogs, Videos: videos, Speech: speechSvc, Assets: assets,
			Links: video.BlobLinker{Blobs: m.blobs, TTL: c.LinkTTL}, Admit: api.Admit, Webhooks: hooks,
		})
		if err != nil {
			return nil, fmt.Errorf("tenant console: %w", err)
		}
		api.SetConsole(tc)
	}
	return api, nil
}

// consoleCommon is what both web consoles share: the session store, the clock, the proxies
// that name a client's address and scheme, and the origins results play from. Whether a
// request came over https (the cookie's Secure flag) is decided per request on the listener
// that serves it, never from --public-url alone: the admin listener is another address.
func (m *Main) consoleCommon() console.Common {
	return console.Common{Sessions: m.db, Now: time.Now, Logger: m.log, Proxies: m.Config.proxies,
		MediaOrigins: m.mediaOrigins, SessionTTL: m.Config.ConsoleSessionTTL}
}

// buildSpeech wires POST /v1/audio/speech. Speech is synchronous, so the process serving the
// API runs the generation job itself (registerJobs): an api-only process makes its own
// sandbox engine when the media tools are installed (without them it answers speech with 503).
func (m *Main) buildSpeech(ctx context.Context, tools ffmpeg.Tools, fetch *safefetch.Client, reg prometheus.Registerer) (*speech.Service, error) {
	c := &m.Config
	svc := &speech.Service{Store: m.db, Engines: map[string]provider.Synthesizer{}, Fetch: fetch, Blobs: blob.Traced(m.blobs, m.tracing.Tracer()),
		Probe: tools, Trim: tools, Logger: m.log, LinkTTL: c.LinkTTL, Wait: c.SpeechTimeout, Metrics: speech.NewMetrics(reg),
		Tracer: m.tracing.Tracer(), Media: m.media}
	if m.engine == nil && c.Role == "api" {
		if err := tools.Check(ctx); err != nil {
			m.log.Warn("speech is unavailable in this process: ffmpeg, ffprobe and espeak-ng are missing", "err", err)
		} else {
			e, err := sandbox.New(sandbox.Config{Dir: filepath.Join(c.DataDir, "sandbox"), Tools: tools, Fetch: fetch, Logger: m.log})
			if err != nil {
				return nil, fmt.Errorf("sandbox engine: %w", err)
			}
			m.engine = e
		}
	}
	svc.Accounts = m.catalogs.Upstream
	for _, acc := range m.cat().Accounts() {
		if !remoteSpeaks(acc.Kind) {
			continue
		}
		c, err := m.remoteClient(acc)
		if err != nil {
			return nil, err
		}
		if sp, ok := c.(provider.Synthesizer); ok {
			svc.Engines[acc.Name] = sp // an openai, elevenlabs or seedspeech account speaks without local tools
		}
	}
	if m.engine != nil {
		svc.Engines[string(catalog.UpstreamSandbox)] = m.engine
		if m.locals == nil {
			if _, err := m.localEngines(tools, fetch); err != nil {
				return nil, err
			}
		}
		for name, e := range m.locals {
			if acc, _ := m.cat().Upstream(name); acc.Kind == catalog.KindEspeak {
				svc.Engines[name] = e // the same espeak-ng path as the sandbox: EspeakBound holds
			}
		}
	}
	return svc, nil
}

// signingKey is --signing-key, or a key kept in the data directory (created on first use).
func (m *Main) signingKey() ([]byte, error) {
	if m.Config.SigningKey != "" {
		k, err := blob.ParseKey(m.Config.SigningKey)
		if err != nil {
			return nil, fmt.Errorf("--signing-key: %w", err)
		}
		return k, nil
	}
	k, err := blob.LoadOrCreateKey(filepath.Join(m.Config.DataDir, "signing.key"))
	if err != nil {
		return nil, fmt.Errorf("signing key: %w", err)
	}
	return k, nil
}

// openBlobs opens the store of results and speech audio: this machine's disk, or the S3
// bucket of --blob, shared by every replica.
func (m *Main) openBlobs(ctx context.Context, key []byte) error {
	c := &m.Config
	if strings.HasPrefix(c.Blob, "s3://") {
		cfg, err := blob.ParseS3URL(c.Blob, m.getenv)
		if err != nil {
			return err
		}
		s3, err := m.openS3Waiting(ctx, cfg)
		if err != nil {
			return fmt.Errorf("result storage: %w", err)
		}
		m.blobs = s3
		origin, scheme := cfg.PublicEndpoint, "http://"
		if origin == "" {
			origin = cfg.Endpoint
		}
		if cfg.PublicSecure {
			scheme = "https://"
		}
		m.mediaOrigins = []string{scheme + origin} // the console plays results from there
		return nil
	}
	if c.Blob != "" {
		return fmt.Errorf("--blob %q: want empty (the data directory) or an s3:// URL", c.Blob)
	}
	fs, err := blob.NewFS(filepath.Join(c.DataDir, "blobs"), key, c.PublicURL)
	if err != nil {
		return fmt.Errorf("result storage: %w", err)
	}
	m.blobs, m.blobFS = fs, fs
	return nil
}

// resultFiles serves the file links of results: the disk store's own, or none (an object
// store's links are presigned at the store).
func (m *Main) resultFiles() asset.FileServer {
	if m.blobFS != nil {
		return m.blobFS
	}
	return blob.NoFiles{}
}

// openKey reads an object of the result store: local engines read a production task's
// intermediate video with it when the store is not this machine's disk.
func (m *Main) openKey(ctx context.Context, key string) (io.ReadCloser, error) {
	return m.blobs.Open(ctx, key)
}
