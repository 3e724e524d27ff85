// Command conns measures what unauthenticated (and slow authenticated) clients can make a
// mediagen server hold, and what a well-behaved client sees meanwhile (issue 25, parts 3 and
// 4). It starts `mediagen serve` as a child process (sandbox engine, SQLite, its own data
// directory) on 127.0.0.1, stores one result, and runs three phases while a well-behaved
// client on 127.0.0.1 polls GET /healthz and GET /v1/videos/{id} at a steady rate:
//
//   - baseline: nothing else;
//   - downloads: -stalled sockets each GET the result's link with a 1 KiB receive buffer and
//     never read, and -uploads sockets each POST /v1/videos with a valid key and send the body
//     one byte a second; the attackers come from -attackers loopback addresses (127.0.0.2, …),
//     the uploads from the first -upload-attackers of them only, so that the per-address
//     bounds (of connections, of downloads) and the total ones are met;
//   - headers: -headers sockets each send GET /healthz with one header line of 1,040,000
//     bytes that never ends;
//   - slow uploads (issue 41): -paced-uploads input_reference uploads of -upload-bytes each
//     at -upload-rate (7 MB at 200 KB/s: 35 s, past the old 30 s body deadline), and
//     -stalled-uploads that stop after 64 KiB;
//   - admin slowloris (issue 41): -admin-slowloris connections to the admin listener with
//     unfinished headers from -admin-attackers addresses, reopened when dropped.
//
// In every phase an operator also calls GET /admin/v1/whoami on the admin listener at
// -admin-rate, a new connection each, as the CLI does.
//
// It prints, per phase, the well-behaved client's latency (p50, p99, max) and anything it
// was refused, the server's resident memory (VmRSS sampled, VmHWM) and open descriptors, and
// the server's own connection counters when it has them. It never fails on a number.
//
//	go run ./bench/conns                        # the sizes, about 2.5 minutes
//	go run ./bench/conns -quick                 # small sizes, a smoke test of the harness
//	go run ./bench/conns -mediagen OLD -headers 300   # an older binary (see bench/README.md)
//
// Every loop is bounded in count and time, the bench raises its own open-file limit (and
// says so when the hard limit is too low), and it stops the server and removes its files at
// the end, on error or on Ctrl-C.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"mediagen/bench/internal/proc"
)

type options struct {
	mediagen  string
	stalled   int
	uploads   int
	headers   int
	attackers int
	// uploadAttackers is how many of the attacker addresses the slow uploads come from.
	uploadAttackers int
	links           int
	hold            time.Duration // each attack phase
	baseline        time.Duration
	rate            float64 // well-behaved requests per second, per target
	ramp            float64 // attack sockets opened per second
	serveArgs       []string
	quick           bool
	attacker        string // set in the attacker process (attacker.go)
	// Issue 41's phases (slow.go).
	pacedUploads, stalledUploads int
	uploadBytes, uploadRate      int
	adminSlowloris               int
	adminAttackers               int
	adminRate                    float64
	phases                       map[string]bool
}

// allPhases are the phases in the order they run; -phases picks some.
var allPhases = []string{"baseline", "downloads", "headers", "slow-uploads", "admin-slowloris"}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("conns", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.mediagen, "mediagen", "", "mediagen binary (default: build ./cmd/mediagen into a temporary directory)")
	fs.IntVar(&o.stalled, "stalled", 10_000, "stalled downloads (sockets that GET the result link and never read)")
	fs.IntVar(&o.uploads, "uploads", 1_000, "slow uploads (POST /v1/videos with a valid key, one body byte a second)")
	fs.IntVar(&o.headers, "headers", 10_000, "sockets sending one unterminated 1,040,000-byte header line")
	fs.IntVar(&o.attackers, "attackers", 40, "loopback addresses the attackers come from (127.0.0.2 on); the well-behaved client is 127.0.0.1")
	fs.IntVar(&o.uploadAttackers, "upload-attackers", 4, "how many of the attacker addresses the slow uploads come from (the first ones): a few addresses holding many connections")
	fs.IntVar(&o.links, "links", 70, "stored results whose links the stalled downloads spread over")
	fs.DurationVar(&o.hold, "hold", 40*time.Second, "length of each attack phase (the attack sockets are held open for it)")
	fs.DurationVar(&o.baseline, "baseline", 5*time.Second, "length of the baseline phase")
	fs.Float64Var(&o.rate, "rate", 50, "well-behaved requests per second, to each of /healthz and /v1/videos/{id}")
	fs.Float64Var(&o.ramp, "ramp", 5000, "attack sockets opened per second")
	serveArgs := fs.String("serve-args", "", "extra arguments for mediagen serve, space separated")
	fs.StringVar(&o.attacker, "attacker", "", "internal: run as the attacker process with this JSON spec")
	fs.BoolVar(&o.quick, "quick", false, "smoke test: 500 stalled, 50 uploads, 500 header sockets, 5 s phases (explicit flags win)")
	fs.IntVar(&o.pacedUploads, "paced-uploads", 50, "slow-uploads phase: input_reference uploads sent at -upload-rate (from the first -upload-attackers addresses)")
	fs.IntVar(&o.stalledUploads, "stalled-uploads", 50, "slow-uploads phase: uploads that send their first 64 KiB at -upload-rate and then nothing")
	fs.IntVar(&o.uploadBytes, "upload-bytes", 7_000_000, "slow-uploads phase: the size of each upload's image (the issue's was 7.7 MB)")
	fs.IntVar(&o.uploadRate, "upload-rate", 200_000, "slow-uploads phase: each upload's rate in bytes a second (the issue's 200 KB/s)")
	fs.IntVar(&o.adminSlowloris, "admin-slowloris", 40, "admin-slowloris phase: connections to the admin listener with unfinished headers, reopened when dropped")
	fs.IntVar(&o.adminAttackers, "admin-attackers", 1, "admin-slowloris phase: how many addresses (127.0.0.2 on) they come from")
	fs.Float64Var(&o.adminRate, "admin-rate", 10, "operator calls (GET /admin/v1/whoami, a new connection each) per second in every phase")
	phases := fs.String("phases", strings.Join(allPhases, ","), "the phases to run, comma separated: "+strings.Join(allPhases, ", "))
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if o.quick {
		for name, p := range map[string]*int{"stalled": &o.stalled, "uploads": &o.uploads, "headers": &o.headers} {
			if !set[name] {
				*p = map[string]int{"stalled": 500, "uploads": 50, "headers": 500}[name]
			}
		}
		for name, p := range map[string]*int{"paced-uploads": &o.pacedUploads, "stalled-uploads": &o.stalledUploads, "upload-bytes": &o.uploadBytes} {
			if !set[name] {
				*p = map[string]int{"paced-uploads": 10, "stalled-uploads": 10, "upload-bytes": 600_000}[name]
			}
		}
		if !set["hold"] {
			o.hold = 5 * time.Second
		}
		if !set["baseline"] {
			o.baseline = 2 * time.Second
		}
	}
	o.serveArgs = strings.Fields(*serveArgs)
	o.phases = map[string]bool{}
	for _, p := range strings.Split(*phases, ",") {
		if p = strings.TrimSpace(p); p != "" {
			if !slices.Contains(allPhases, p) {
				return o, fmt.Errorf("-phases: unknown phase %q (%s)", p, strings.Join(allPhases, ", "))
			}
			o.phases[p] = true
		}
	}
	switch {
	case o.stalled < 0 || o.uploads < 0 || o.headers < 0:
		return o, errors.New("-stalled, -uploads and -headers must not be negative")
	case o.attackers < 1 || o.attackers > 250:
		return o, errors.New("-attackers must be from 1 to 250 (127.0.0.2 to 127.0.0.251)")
	case o.uploadAttackers < 1 || o.uploadAttackers > o.attackers:
		return o, errors.New("-upload-attackers must be from 1 to -attackers")
	case o.pacedUploads < 0 || o.stalledUploads < 0 || o.adminSlowloris < 0 || o.uploadBytes < 1 || o.uploadRate < 10 || o.adminRate <= 0:
		return o, errors.New("-paced-uploads, -stalled-uploads, -admin-slowloris must not be negative, -upload-bytes, -upload-rate (≥ 10) and -admin-rate must be positive")
	case o.adminAttackers < 1 || o.adminAttackers > o.attackers:
		return o, errors.New("-admin-attackers must be from 1 to -attackers")
	case o.links < 1:
		return o, errors.New("-links must be at least 1")
	case o.hold <= 0 || o.baseline <= 0 || o.rate <= 0 || o.ramp <= 0:
		return o, errors.New("-hold, -baseline, -rate and -ramp must be positive")
	}
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:], os.Stderr)
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "bench/conns:", err)
		}
		os.Exit(2)
	}
	if o.attacker != "" {
		os.Exit(runAttacker(o.attacker, os.Stdout, os.Stderr))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, o, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, o options, stdout, stderr io.Writer) int {
	b := &bench{o: o, out: stdout, log: stderr}
	defer b.cleanup()
	if err := b.raiseFileLimit(); err != nil {
		b.logf("%v", err)
		return 1
	}
	tmp, err := os.MkdirTemp("", "mediagen-bench-conns-")
	if err != nil {
		b.logf("%v", err)
		return 1
	}
	b.tmp = tmp
	b.onCleanup(func() { _ = os.RemoveAll(tmp) })
	if err := b.start(ctx); err != nil {
		b.logf("%v", err)
		return 1
	}
	for _, ph := range []struct {
		flag, name string
		run        func(context.Context) *phaseResult
	}{
		{"baseline", "baseline", b.baselinePhase},
		{"downloads", "downloads + uploads", b.downloadPhase},
		{"headers", "headers", b.headerPhase},
		{"slow-uploads", "slow uploads", b.slowUploadPhase},
		{"admin-slowloris", "admin slowloris", b.adminPhase},
	} {
		if ctx.Err() != nil {
			break
		}
		if !o.phases[ph.flag] {
			continue
		}
		b.logf("phase %s", ph.name)
		r := ph.run(ctx)
		r.name = ph.name
		b.results = append(b.results, r)
		if b.srv.Exited() {
			b.logf("the server exited during phase %s (%v):\n%s", ph.name, b.srv.WaitErr, b.srv.LogTail(20))
			break
		}
	}
	b.report()
	if ctx.Err() != nil {
		b.logf("interrupted; everything started was stopped")
		return 130
	}
	return 0
}

// build compiles ./cmd/mediagen unless -mediagen names a binary.
func (b *bench) build(ctx context.Context) (string, error) {
	if b.o.mediagen != "" {
		return filepath.Abs(b.o.mediagen)
	}
	root, err := proc.ModuleRoot()
	if err != nil {
		return "", err
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build the server (or pass -mediagen): %w", err)
	}
	out := filepath.Join(b.tmp, "mediagen")
	b.logf("building ./cmd/mediagen")
	if _, err := proc.Run(ctx, 5*time.Minute, root, gobin, "build", "-o", out, "./cmd/mediagen"); err != nil {
		return "", fmt.Errorf("build: %w", err)
	}
	return out, nil
}
