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
//     bytes that never ends.
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
}

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
		if !set["hold"] {
			o.hold = 5 * time.Second
		}
		if !set["baseline"] {
			o.baseline = 2 * time.Second
		}
	}
	o.serveArgs = strings.Fields(*serveArgs)
	switch {
	case o.stalled < 0 || o.uploads < 0 || o.headers < 0:
		return o, errors.New("-stalled, -uploads and -headers must not be negative")
	case o.attackers < 1 || o.attackers > 250:
		return o, errors.New("-attackers must be from 1 to 250 (127.0.0.2 to 127.0.0.251)")
	case o.uploadAttackers < 1 || o.uploadAttackers > o.attackers:
		return o, errors.New("-upload-attackers must be from 1 to -attackers")
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
		name string
		run  func(context.Context) *phaseResult
	}{
		{"baseline", b.baselinePhase},
		{"downloads + uploads", b.downloadPhase},
		{"headers", b.headerPhase},
	} {
		if ctx.Err() != nil {
			break
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
