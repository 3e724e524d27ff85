// Command tracing measures what OpenTelemetry tracing costs the API (docs/tracing.md): the
// request rate of `mediagen serve --role api` on SQLite with tracing off (no OTEL_* variables:
// the noop provider, no middleware), on (OTEL_EXPORTER_OTLP_ENDPOINT pointing at an
// in-process OTLP/HTTP sink that reads and counts every export without decoding it, every
// trace sampled) and on-10% (the same, OTEL_TRACES_SAMPLER=parentbased_traceidratio with
// 0.1), one after the other in each round so all see the same machine. It prints each round and the medians, and never
// fails on a number.
//
//	go run ./bench/tracing                 # 3 rounds, 5 s per measurement (about 2 minutes)
//	go run ./bench/tracing -rounds 5 -duration 10s
//	go run ./bench/tracing -baseline /tmp/mediagen-before   # also a build without tracing
//
// Each measurement is closed-loop (bench/load.Saturate, -concurrency workers back to back) on
// one route: GET /v1/videos/{id} (a traced request is one server span) and POST /v1/videos
// (a server span, the create's store.tx span and the job's trace context written with it).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"mediagen/bench/internal/proc"
	"mediagen/bench/load"
	"mediagen/internal/catalog"
	"mediagen/internal/tracing/otlptest"
)

type options struct {
	rounds      int
	duration    time.Duration
	warmup      time.Duration
	concurrency int
	mediagen    string
	baseline    string
}

func main() {
	var o options
	fs := flag.NewFlagSet("tracing", flag.ExitOnError)
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each measures every mode once")
	fs.DurationVar(&o.duration, "duration", 5*time.Second, "measured time of each measurement")
	fs.DurationVar(&o.warmup, "warmup", time.Second, "warmup before each measurement")
	fs.IntVar(&o.concurrency, "concurrency", 16, "closed-loop workers")
	fs.StringVar(&o.mediagen, "mediagen", "", "mediagen binary (default: build ./cmd/mediagen)")
	fs.StringVar(&o.baseline, "baseline", "", "a mediagen binary built without tracing (an older commit), measured first in each round as \"before\"")
	_ = fs.Parse(os.Args[1:])
	if o.rounds < 1 || o.duration <= 0 || o.concurrency < 1 {
		fmt.Fprintln(os.Stderr, "bench/tracing: -rounds, -duration and -concurrency must be positive")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench/tracing:", err)
		os.Exit(1)
	}
}

// figure is one measurement.
type figure struct {
	rps      float64
	p50, p99 time.Duration
	errors   int64
}

var routes = []string{"GET /v1/videos/{id}", "POST /v1/videos"}

func run(ctx context.Context, o options, out io.Writer) error {
	tmp, err := os.MkdirTemp("", "bench-tracing-*")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin := o.mediagen
	if bin == "" {
		root, err := proc.ModuleRoot()
		if err != nil {
			return err
		}
		gobin, err := exec.LookPath("go")
		if err != nil {
			return fmt.Errorf("the go command builds mediagen (or pass -mediagen): %w", err)
		}
		bin = filepath.Join(tmp, "mediagen")
		if _, err := proc.Run(ctx, 5*time.Minute, root, gobin, "build", "-o", bin, "./cmd/mediagen"); err != nil {
			return fmt.Errorf("build: %w", err)
		}
	}
	cat, err := unlimitedCatalog(tmp)
	if err != nil {
		return err
	}
	sink := &otlptest.Receiver{Discard: true}
	srv := httptest.NewServer(sink)
	defer srv.Close()

	modes := []string{"off", "on", "on-10%"}
	if o.baseline != "" {
		modes = append([]string{"before"}, modes...)
	}
	got := map[string]map[string][]figure{}
	for _, m := range modes {
		got[m] = map[string][]figure{}
	}
	fmt.Fprintf(out, "bench/tracing: %d rounds, %s per measurement, %d workers, SQLite, --role api\n", o.rounds, o.duration, o.concurrency)
	fmt.Fprintf(out, "%-6s %-6s %-22s %10s %9s %9s %7s\n", "round", "mode", "route", "req/s", "p50", "p99", "errors")
	for r := 1; r <= o.rounds; r++ {
		for _, mode := range modes {
			var env []string
			switch mode {
			case "on":
				env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_SERVICE_NAME=bench"}
			case "on-10%":
				env = []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + srv.URL, "OTEL_SERVICE_NAME=bench",
					"OTEL_TRACES_SAMPLER=parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG=0.1"}
			}
			b := bin
			if mode == "before" {
				b = o.baseline
			}
			figs, err := measure(ctx, o, b, cat, filepath.Join(tmp, fmt.Sprintf("%s-%d", mode, r)), env)
			if err != nil {
				return fmt.Errorf("round %d, tracing %s: %w", r, mode, err)
			}
			for i, route := range routes {
				f := figs[i]
				got[mode][route] = append(got[mode][route], f)
				fmt.Fprintf(out, "%-6d %-6s %-22s %10.0f %9s %9s %7d\n", r, mode, route, f.rps, f.p50.Round(time.Microsecond), f.p99.Round(time.Microsecond), f.errors)
			}
		}
	}
	exports, size := sink.Exports()
	fmt.Fprintf(out, "\nmedians of %d rounds (the sink took %d exports, %.1f MiB of spans)\n", o.rounds, exports, float64(size)/(1<<20))
	fmt.Fprintf(out, "%-22s %-6s %10s %9s %9s %8s\n", "route", "mode", "req/s", "p50", "p99", "vs off")
	for _, route := range routes {
		off := median(got["off"][route])
		for _, mode := range modes {
			m := median(got[mode][route])
			fmt.Fprintf(out, "%-22s %-6s %10.0f %9s %9s %7.1f%%\n", route, mode, m.rps, m.p50.Round(time.Microsecond),
				m.p99.Round(time.Microsecond), 100*m.rps/off.rps)
		}
	}
	return nil
}

// median takes each figure's median on its own.
func median(fs []figure) figure {
	pick := func(get func(figure) float64) float64 {
		v := make([]float64, len(fs))
		for i, f := range fs {
			v[i] = get(f)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return figure{rps: pick(func(f figure) float64 { return f.rps }),
		p50: time.Duration(pick(func(f figure) float64 { return float64(f.p50) })),
		p99: time.Duration(pick(func(f figure) float64 { return float64(f.p99) }))}
}

var secretLine = regexp.MustCompile(`(?m)^secret:\s+(mg_[a-z2-7]{40})\s*$`)

// measure starts one server with a fresh database, makes a key and a task, and measures
// each route.
func measure(ctx context.Context, o options, bin, cat, dir string, env []string) ([]figure, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	db := "sqlite:" + filepath.Join(dir, "mediagen.db")
	addr, err := proc.FreeAddr()
	if err != nil {
		return nil, err
	}
	childEnv := append(withoutOTEL(proc.ChildEnv()), env...)
	p, err := proc.Start("mediagen", bin, filepath.Join(dir, "serve.log"), childEnv,
		"serve", "--listen", addr, "--data-dir", dir, "--db", db, "--catalog", cat, "--role", "api", "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	defer p.Stop(10 * time.Second)
	base := "http://" + addr
	if err := proc.WaitReady(ctx, p, base, "/readyz", 60*time.Second); err != nil {
		return nil, err
	}
	outText, err := proc.Run(ctx, time.Minute, dir, bin, "admin", "key", "create", "--tenant", "demo", "--unlimited", "--name", "bench",
		"--data-dir", dir, "--db", db, "--catalog", cat)
	if err != nil {
		return nil, fmt.Errorf("create key: %w", err)
	}
	m := secretLine.FindStringSubmatch(outText)
	if m == nil {
		return nil, errors.New("create key: no secret in the output")
	}
	key := m[1]
	client := load.NewClient(o.concurrency)
	id, err := createOne(ctx, client, base, key, "seed")
	if err != nil {
		return nil, err
	}
	var uniq atomic.Int64
	reqs := []func(int) (*http.Request, error){
		func(int) (*http.Request, error) {
			r, err := http.NewRequest(http.MethodGet, base+"/v1/videos/"+id, nil)
			if err == nil {
				r.Header.Set("Authorization", "Bearer "+key)
			}
			return r, err
		},
		func(int) (*http.Request, error) {
			return createRequest(base, key, strconv.FormatInt(uniq.Add(1), 10))
		},
	}
	var out []figure
	for _, nr := range reqs {
		res, err := load.Saturate(ctx, load.Config{Concurrency: o.concurrency, Duration: o.duration, Warmup: o.warmup,
			Client: client, NewRequest: nr})
		if err != nil {
			return nil, err
		}
		out = append(out, figure{rps: res.Throughput, p50: res.Latency.P50, p99: res.Latency.P99, errors: res.Errors})
	}
	return out, nil
}

func createRequest(base, key, uniq string) (*http.Request, error) {
	body := `{"model":"demo-video-fast","prompt":"a traced cat ` + uniq + `","metadata":{"duration":5,"resolution":"720p","client_request_id":"bench-` + uniq + `"}}`
	r, err := http.NewRequest(http.MethodPost, base+"/v1/videos", strings.NewReader(body))
	if err == nil {
		r.Header.Set("Authorization", "Bearer "+key)
		r.Header.Set("Content-Type", "application/json")
	}
	return r, err
}

func createOne(ctx context.Context, c *http.Client, base, key, uniq string) (string, error) {
	r, err := createRequest(base, key, uniq)
	if err != nil {
		return "", err
	}
	res, err := c.Do(r.WithContext(ctx))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("seed task: %d %s", res.StatusCode, b)
	}
	m := regexp.MustCompile(`"id":"(video_[a-z0-9]+)"`).FindSubmatch(b)
	if m == nil {
		return "", fmt.Errorf("seed task: no id in %s", b)
	}
	return string(m[1]), nil
}

// withoutOTEL drops OTEL_* variables of the shell, so "off" is off.
func withoutOTEL(env []string) []string {
	return slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "OTEL_") })
}

// unlimitedCatalog is the demo catalog with the demo tenant's limits lifted (as bench/api's),
// so the load is not refused with 429s.
func unlimitedCatalog(dir string) (string, error) {
	const at = "  - id: demo\n"
	const unlimited = `    limits:
      key: {requests_per_second: unlimited, concurrent_requests: unlimited, video_tasks_in_flight: unlimited, speech_in_flight: unlimited,
        asset_ingests_in_flight: unlimited}
      tenant: {requests_per_second: unlimited, video_tasks_in_flight: unlimited, speech_in_flight: unlimited,
        asset_ingests_in_flight: unlimited}
`
	demo := string(catalog.DemoYAML())
	if !strings.Contains(demo, at) {
		return "", errors.New("the demo catalog has no tenant demo")
	}
	text := strings.Replace(demo, at, at+unlimited, 1)
	path := filepath.Join(dir, "catalog.yaml")
	if _, err := catalog.Parse(path, []byte(text)); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, []byte(text), 0o644)
}
