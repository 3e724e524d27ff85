// Command chaos runs mediagen the way a cluster fails and checks that no money or work was
// lost (`make chaos`; bench/README.md has the figures of a full run).
//
// In the cluster mode it starts a PostgreSQL and a MinIO of its own on loopback, a fake Ark
// upstream (arkfake, which counts the paid jobs it makes per task and fails a share of its
// answers) and three `mediagen serve` replicas on them (two `all`, one `api`). It drives an
// open-loop mix of every video route (native on the fake Ark and on the sandbox, production,
// standalone enhancement, native with an asset first frame), speech, asset creation, polling
// and identical replays against random replicas, retrying a failed call on another replica
// with the same client_request_id. Meanwhile it SIGKILLs a random replica -kills times
// (restarting it each time), crashes PostgreSQL once and kills MinIO once for a few seconds.
// The SQLite mode runs the same workload on one process with SQLite and the filesystem store,
// killed the same number of times.
//
// Then it waits for every accepted task to end and prints the figures: accepted tasks lost,
// tasks not terminal, settlements per ended task and speech record, the ledger check, results
// that changed after completion, replays that answered something else, objects in the store
// that no record owns, and upstream jobs per task. It exits 1 when one is not what it must be.
// Every loop is bounded: the workload runs -duration, the drain at most -drain.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/png"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"mediagen/bench/internal/miniosrv"
	"mediagen/bench/internal/proc"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider/ark/arkfake"
)

type options struct {
	modes           []string
	duration, drain time.Duration
	kills           int
	rate, pollRate  float64
	minio, mediagen string
	faults          int
	keep            bool
	jsonOut         string
	seed            uint64
}

func main() {
	var o options
	modes := flag.String("modes", "cluster,sqlite", "modes to run: cluster (PostgreSQL, MinIO, 3 replicas), sqlite (one process)")
	flag.DurationVar(&o.duration, "duration", 4*time.Minute, "how long the workload and the kills run, per mode")
	flag.DurationVar(&o.drain, "drain", 5*time.Minute, "the most to wait afterwards for every accepted task to end")
	flag.IntVar(&o.kills, "kills", 100, "SIGKILLs of a replica during the workload, per mode")
	flag.Float64Var(&o.rate, "rate", 1.5, "operations started per second (open loop)")
	flag.Float64Var(&o.pollRate, "poll-rate", 5, "task polls per second")
	flag.StringVar(&o.minio, "minio", os.Getenv("MEDIAGEN_TEST_MINIO"), "MinIO binary (scripts/ensure-minio.sh prints it)")
	flag.StringVar(&o.mediagen, "mediagen", "", "mediagen binary (default: built from this checkout)")
	flag.IntVar(&o.faults, "faults", 10, "percent of the fake Ark's answers that fail")
	flag.BoolVar(&o.keep, "keep", false, "keep the temporary directory (logs, data)")
	flag.StringVar(&o.jsonOut, "json", "", "write the figures as JSON to this file")
	flag.Uint64Var(&o.seed, "seed", uint64(time.Now().UnixNano()), "random seed")
	flag.Parse()
	o.modes = strings.Split(*modes, ",")

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var all []*figures
	failed := false
	for _, mode := range o.modes {
		f, err := run(ctx, o, strings.TrimSpace(mode))
		if err != nil {
			fmt.Fprintf(os.Stderr, "chaos %s: %v\n", mode, err)
			os.Exit(2)
		}
		report(os.Stdout, f)
		all = append(all, f)
		failed = failed || len(f.Failures) > 0
	}
	if o.jsonOut != "" {
		b, _ := json.MarshalIndent(all, "", "  ")
		if err := os.WriteFile(o.jsonOut, b, 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	if failed {
		os.Exit(1)
	}
}

// harness holds one mode's run.
type harness struct {
	o        options
	mode     string
	tmp      string
	bin      string
	cleanups []func()
	logf     func(format string, args ...any)
}

func (h *harness) onCleanup(f func()) { h.cleanups = append(h.cleanups, f) }

func run(ctx context.Context, o options, mode string) (f *figures, err error) {
	if mode != "cluster" && mode != "sqlite" {
		return nil, fmt.Errorf("unknown mode %q (cluster, sqlite)", mode)
	}
	h := &harness{o: o, mode: mode}
	start := time.Now()
	h.logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "[%s %6.1fs] %s\n", mode, time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
	if h.tmp, err = os.MkdirTemp("", "mediagen-chaos-"+mode+"-"); err != nil {
		return nil, err
	}
	defer func() {
		for i := len(h.cleanups) - 1; i >= 0; i-- {
			h.cleanups[i]()
		}
		if o.keep {
			h.logf("kept %s", h.tmp)
		} else {
			os.RemoveAll(h.tmp)
		}
	}()
	return h.run(ctx)
}

func (h *harness) run(ctx context.Context) (*figures, error) {
	if err := h.build(ctx); err != nil {
		return nil, err
	}
	fx, fake, err := h.fixtures(ctx)
	if err != nil {
		return nil, err
	}
	cat := filepath.Join(h.tmp, "catalog.yaml")
	if err := chaosCatalog(cat, fake.Base()); err != nil {
		return nil, err
	}
	const arkKey = "chaos-ark-key"
	env := append(proc.ChildEnv(), "SSL_CERT_FILE="+fx.caFile, "CHAOS_ARK_KEY="+arkKey)

	var pg *postgres
	var mn *miniosrv.Server
	dbURL := "sqlite:" + filepath.Join(h.tmp, "r1", "mediagen.db")
	var extra []string
	if h.mode == "cluster" {
		if pg, err = startPostgres(ctx, h.tmp); err != nil {
			return nil, fmt.Errorf("postgres: %w", err)
		}
		h.onCleanup(func() { pg.p.Stop(10 * time.Second) })
		if mn, err = miniosrv.Start(ctx, h.o.minio, h.tmp); err != nil {
			return nil, fmt.Errorf("minio: %w", err)
		}
		h.onCleanup(func() { mn.P.Stop(5 * time.Second) })
		dbURL = pg.url()
		extra = []string{"--blob", mn.BlobURL("cluster")}
		env = append(env, "AWS_ACCESS_KEY_ID="+mn.Access, "AWS_SECRET_ACCESS_KEY="+mn.Secret)
		h.logf("PostgreSQL on 127.0.0.1:%s, MinIO on %s", pg.port, mn.Addr)
	}
	roles := map[string]string{"r1": "all"}
	names := []string{"r1"}
	if h.mode == "cluster" {
		roles["r2"], roles["r3"] = "all", "api"
		names = append(names, "r2", "r3")
	}
	signing := randHex(32)
	var replicas []*replica
	for _, name := range names {
		addr, err := proc.FreeAddr()
		if err != nil {
			return nil, err
		}
		r := &replica{name: name, role: roles[name], addr: addr, bin: h.bin, logDir: h.tmp, env: env,
			args: append([]string{"serve", "--listen", addr, "--data-dir", filepath.Join(h.tmp, name), "--db", dbURL,
				"--catalog", cat, "--role", roles[name], "--signing-key", signing, "--fetch-allow", "loopback",
				"--public-url", "http://" + addr, "--sandbox-pace", "500ms", "--job-lease", "10s", "--log-level", "warn"}, extra...)}
		if err := r.start(ctx); err != nil {
			return nil, err
		}
		h.onCleanup(r.stop)
		replicas = append(replicas, r)
	}
	h.logf("%d replicas up", len(replicas))
	out, err := proc.Run(ctx, time.Minute, h.tmp, h.bin, "admin", "key", "create", "--tenant", "demo", "--unlimited", "--name", "chaos",
		"--data-dir", filepath.Join(h.tmp, "r1"), "--db", dbURL, "--catalog", cat)
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	key := ""
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "secret:"); ok {
			key = strings.TrimSpace(v)
		}
	}
	if key == "" {
		return nil, fmt.Errorf("create key: no secret in:\n%s", out)
	}
	w := &workload{replicas: replicas, key: key, fx: fx, client: httpClient(), rng: rand.New(rand.NewPCG(h.o.seed, 1)),
		tasks: map[string]*taskRec{}, ops: map[string]int{}, refused: map[string]int{}}
	status, b, err := w.send(ctx, call{"/v1/vidgen/virtual/asset-groups/create", `{"Name":"chaos"}`}, 30*time.Second)
	var g struct {
		ID string `json:"Id"`
	}
	if err != nil || status != 200 || json.Unmarshal(b, &g) != nil {
		return nil, fmt.Errorf("asset group: %d %s %v", status, b, err)
	}
	w.group = g.ID

	f := &figures{Mode: h.mode, ReplicaRestarts: map[string]int{}}
	h.chaos(ctx, w, replicas, pg, mn, f)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err := h.drain(ctx, w, f, dbURL); err != nil {
		return nil, err
	}
	h.checkResults(ctx, w, f)
	for _, r := range replicas {
		r.stop()
		f.ReplicaRestarts[r.name] = r.restarts
	}
	ledger, raw, closeDB, err := openDB(ctx, dbURL)
	if err != nil {
		return nil, fmt.Errorf("open the database for the checks: %w", err)
	}
	defer closeDB()
	if err := settlements(ctx, raw, f); err != nil {
		return nil, err
	}
	if err := ledger(ctx); err != nil {
		f.LedgerErr = err.Error()
	} else {
		f.LedgerOK = true
	}
	ids, err := owners(ctx, raw)
	if err != nil {
		return nil, err
	}
	if mn != nil {
		err = orphansS3(ctx, mn.Client, mn.Bucket, "cluster", ids, f)
	} else {
		err = orphansFS(filepath.Join(h.tmp, "r1"), ids, f)
	}
	if err != nil {
		return nil, fmt.Errorf("list the store: %w", err)
	}
	upstreamJobs(w, fake.JobsFor, f)
	f.ArkLostAnswers, f.ArkViolations = fake.LostAnswers(), len(fake.Violations())
	f.CheckedAt = time.Now().UTC()
	f.verdict(h.o.kills)
	return f, nil
}

// build compiles mediagen from this checkout (unless -mediagen names a binary).
func (h *harness) build(ctx context.Context) error {
	if h.o.mediagen != "" {
		h.bin = h.o.mediagen
		return nil
	}
	root, err := proc.ModuleRoot()
	if err != nil {
		return err
	}
	h.bin = filepath.Join(h.tmp, "mediagen")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", h.bin, "./cmd/mediagen")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %w\n%s", err, out)
	}
	return nil
}

// fixtures renders the media: a clip and an image served over HTTPS, and the fake Ark's result.
func (h *harness) fixtures(ctx context.Context) (*fixtures, *arkfake.Server, error) {
	dir := filepath.Join(h.tmp, "media")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	tools := ffmpeg.Tools{}
	if err := tools.Render(ctx, ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 2.5, Container: "mp4", Audio: true, Text: "chaos"}, filepath.Join(dir, "clip.mp4")); err != nil {
		return nil, nil, fmt.Errorf("render the clip (make tools installs ffmpeg): %w", err)
	}
	result := filepath.Join(h.tmp, "ark-result.mp4")
	if err := tools.Render(ctx, ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "ark"}, result); err != nil {
		return nil, nil, err
	}
	img := image.NewNRGBA(image.Rect(0, 0, 96, 64))
	for i := range img.Pix {
		img.Pix[i] = uint8(i*7 + i/5)
	}
	pf, err := os.Create(filepath.Join(dir, "frame.png"))
	if err != nil {
		return nil, nil, err
	}
	if err := png.Encode(pf, img); err != nil {
		pf.Close()
		return nil, nil, err
	}
	pf.Close()
	media := httptest.NewTLSServer(http.FileServer(http.Dir(dir)))
	h.onCleanup(media.Close)
	fake := arkfake.Start(arkfake.Config{Key: "chaos-ark-key", Clip: result, Tokens: 160, Polls: 2, FaultPercent: h.o.faults, Seed: h.o.seed})
	h.onCleanup(fake.Close)
	fx := &fixtures{media: media, caFile: filepath.Join(h.tmp, "ca.pem")}
	if err := writeCABundle(fx.caFile, media.Certificate(), fake.Certificate()); err != nil {
		return nil, nil, err
	}
	return fx, fake, nil
}

// chaos runs the workload for the duration while killing replicas and, in the cluster mode,
// crashing PostgreSQL and MinIO once each.
func (h *harness) chaos(ctx context.Context, w *workload, replicas []*replica, pg *postgres, mn *miniosrv.Server, f *figures) {
	wctx, cancel := context.WithTimeout(ctx, h.o.duration)
	defer cancel()
	began := time.Now()
	var wg sync.WaitGroup
	var outageMu sync.Mutex
	pollCtx, stopPolls := context.WithCancel(ctx)
	defer stopPolls()
	go w.poller(pollCtx, h.o.pollRate)

	// The killer: -kills SIGKILLs at planned times spread over the duration, each replica
	// restarted at once. A restart takes time, so the kills may run late: the workload goes
	// on until the last one (at most twice the duration).
	killerDone := make(chan struct{})
	go func() {
		defer close(killerDone)
		every := h.o.duration / time.Duration(h.o.kills+1)
		hard := time.After(2 * h.o.duration)
		for f.Kills < h.o.kills {
			due := began.Add(time.Duration(f.Kills+1)*every + time.Duration(w.intn(int(every/2)+1)))
			select {
			case <-ctx.Done():
				return
			case <-hard:
				return
			case <-time.After(time.Until(due)):
			}
			r := replicas[w.intn(len(replicas))]
			r.kill()
			f.Kills++
			if err := r.restart(ctx, 2*time.Minute); err != nil {
				h.logf("restart %s: %v", r.name, err)
			}
			if f.Kills%10 == 0 {
				h.logf("%d kills, %d tasks accepted", f.Kills, w.accepted())
			}
		}
	}()
	// Outages of the shared services: each down for 5 s once, at a share of the duration.
	outageAt := func(percent int64, what string, down func(), up func(context.Context) error) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-wctx.Done():
				return
			case <-time.After(h.o.duration * time.Duration(percent) / 100):
			}
			h.logf("%s for 5 s", what)
			down()
			time.Sleep(5 * time.Second)
			if err := up(ctx); err != nil {
				h.logf("%s: did not come back: %v", what, err)
			}
			outageMu.Lock()
			f.Outages = append(f.Outages, what+" for 5 s")
			outageMu.Unlock()
		}()
	}
	if pg != nil {
		outageAt(35, "PostgreSQL crashed (immediate shutdown)", pg.crash, pg.start)
	}
	if mn != nil {
		outageAt(65, "MinIO killed", func() { mn.P.Stop(0) }, mn.Restart)
	}
	// The open-loop workload: an operation is started every 1/rate s, whatever the earlier
	// ones are doing (at most 64 at once).
	sem := make(chan struct{}, 64)
	tick := time.NewTicker(time.Duration(float64(time.Second) / h.o.rate))
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
		}
		if wctx.Err() != nil {
			select {
			case <-killerDone: // the duration and the kills are both over
				break loop
			default:
			}
		}
		select {
		case sem <- struct{}{}:
		default:
			continue // 64 in flight: this one is dropped
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			w.op(ctx)
		}()
	}
	f.Seconds = time.Since(began).Seconds()
	<-killerDone
	wg.Wait()
	h.logf("workload over: %d kills, %d tasks accepted, %d creates of unknown outcome", f.Kills, w.accepted(), len(w.unknown))
}

func (w *workload) accepted() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.tasks)
}

// drain settles creates of unknown outcome by replaying them, then waits (at most -drain) for
// every accepted task and speech record to end.
func (h *harness) drain(ctx context.Context, w *workload, f *figures, dbURL string) error {
	f.Unknown = len(w.unknown)
	for _, u := range w.unknown {
		status, b, err := w.send(ctx, call{"/v1/videos", u.body}, time.Minute)
		var v struct {
			ID string `json:"id"`
		}
		if err == nil && (status == 200 || status == 202) && json.Unmarshal(b, &v) == nil && v.ID != "" {
			t := u
			t.id = v.ID
			w.accept(&t)
			f.UnknownAccepted++
		}
	}
	start := time.Now()
	deadline := start.Add(h.o.drain)
	for {
		pending := 0
		for _, t := range w.snapshot() {
			v, found, err := w.get(ctx, t.id)
			if err != nil || !found || (v.Status != "completed" && v.Status != "failed") {
				pending++
				continue
			}
			w.observe(ctx, t)
		}
		if pending == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		h.logf("waiting for %d tasks to end", pending)
		time.Sleep(2 * time.Second)
	}
	f.DrainSeconds = time.Since(start).Seconds()
	// Speech records a killed replica left pending are failed and refunded by the sweep.
	raw, closeDB, err := openRaw(dbURL)
	if err != nil {
		return err
	}
	defer closeDB()
	for {
		var n int
		if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM speeches WHERE status = 'pending'").Scan(&n); err != nil {
			return fmt.Errorf("pending speeches: %w", err)
		}
		if n == 0 || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		h.logf("waiting for %d speech records to end", n)
		time.Sleep(2 * time.Second)
	}
	return nil
}

func (w *workload) snapshot() []*taskRec {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := make([]*taskRec, 0, len(w.order))
	for _, id := range w.order {
		out = append(out, w.tasks[id])
	}
	return out
}

// checkResults reads every accepted task once more: found, ended, and, when completed, the
// same result as when first seen; and replays speech requests, which must answer the
// original audio.
func (h *harness) checkResults(ctx context.Context, w *workload, f *figures) {
	f.ByStatus = map[string]int{}
	f.Ops, f.Refused = w.ops, w.refused
	f.Retries, f.Replays, f.ReplayChanged = w.retries.Load(), w.replays.Load(), w.replayChanged.Load()
	for _, t := range w.snapshot() {
		f.Accepted++
		v, found, err := w.get(ctx, t.id)
		switch {
		case err != nil:
			f.NotTerminal++
			continue
		case !found:
			f.Lost++
			continue
		}
		f.ByStatus[v.Status]++
		if v.Status != "completed" && v.Status != "failed" {
			f.NotTerminal++
			if len(f.NotTerminalIDs) < 10 {
				f.NotTerminalIDs = append(f.NotTerminalIDs, t.id+" ("+t.kind+", "+v.Status+")")
			}
		}
		if v.Status == "completed" && t.hash == "" {
			w.observe(ctx, t) // completed after the drain's last look
		}
		if v.Status == "completed" && t.hash == "" {
			f.Unreadable++
			f.UnreadableErr = w.downloadErr
		}
		if v.Status == "completed" && t.hash != "" {
			f.Completed++
			got := w.download(ctx, v.resultURL())
			switch {
			case !got.ok():
				f.Unreadable++
				f.seen("result %s (%s) read again: %s", t.id, t.kind, got)
			case got.hash != t.hash || string(v.Usage) != t.usage:
				f.Changed++
				f.seen("result %s (%s) changed: %s, usage %s; first seen sha256 %s, usage %s", t.id, t.kind, got, v.Usage, short(t.hash), t.usage)
			}
		}
	}
	for _, s := range w.speeches {
		f.Speeches++
		status, b, err := w.send(ctx, call{"/v1/audio/speech", s.body}, 30*time.Second)
		var v struct {
			ID  string `json:"id"`
			URL string `json:"url"`
		}
		if err != nil {
			f.SpeechUnanswered++
			f.seen("speech %s replay: no answer: %v", s.id, err)
			continue
		}
		if status != 200 || json.Unmarshal(b, &v) != nil || v.ID != s.id {
			f.SpeechChanged++
			f.seen("speech %s replay answered %d %s", s.id, status, firstLine(b))
			continue
		}
		got := w.download(ctx, v.URL)
		switch {
		case !got.ok():
			f.SpeechUnreadable++
			f.seen("speech %s replay's audio: %s", s.id, got)
		case s.hash == "":
			f.SpeechUnseen++ // its first download failed during the workload: nothing to compare
			f.seen("speech %s: first download failed, replay's audio %s", s.id, got)
		case got.hash != s.hash:
			f.SpeechChanged++
			f.seen("speech %s replay's audio: %s, first seen sha256 %s", s.id, got, short(s.hash))
		}
	}
	f.DownloadRefusals, f.APIRefusals, f.NoRetryAfter = w.downloadRefusals.Load(), w.apiRefusals.Load(), w.noRetryAfter.Load()
}

func report(out *os.File, f *figures) {
	b, _ := json.MarshalIndent(f, "", "  ")
	fmt.Fprintf(out, "chaos %s figures:\n%s\n", f.Mode, b)
	if len(f.Failures) == 0 {
		fmt.Fprintf(out, "chaos %s: every check holds\n", f.Mode)
	} else {
		fmt.Fprintf(out, "chaos %s: FAILED:\n  %s\n", f.Mode, strings.Join(f.Failures, "\n  "))
	}
}
