package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"mediagen/bench/internal/proc"
	"mediagen/bench/load"
)

// phaseResult is what one phase measured.
type phaseResult struct {
	name            string
	healthz, video  load.Result
	admin           load.Result // the operator's calls on the admin listener
	rssPeak, rssEnd float64     // MiB, sampled every samplePeriod
	hwm             float64     // MiB: the server's VmHWM at the end of the phase (its peak so far)
	fdsPeak, fdsEnd int
	attack          *attackStats
	counters        []counter // the server's own figures over the phase (nil: it has none)
}

// samplePeriod is how often the server's memory and descriptors are read.
const samplePeriod = 200 * time.Millisecond

// measure runs the well-behaved client for d, with attack running meanwhile (nil: none),
// sampling the server; attack gets a context that ends with the phase and must return soon
// after it, having closed what it opened.
func (b *bench) measure(ctx context.Context, d time.Duration, attack func(context.Context)) *phaseResult {
	r := &phaseResult{}
	before := b.scrape(ctx)
	phase, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // the sampler
		defer wg.Done()
		tick := time.NewTicker(samplePeriod)
		defer tick.Stop()
		for {
			rss, fds := proc.RSSMiB(b.srv.PID()), openFiles(b.srv.PID())
			r.rssPeak, r.rssEnd = max(r.rssPeak, rss), rss
			r.fdsPeak, r.fdsEnd = max(r.fdsPeak, fds), fds
			select {
			case <-phase.Done():
				return
			case <-tick.C:
			}
		}
	}()
	if attack != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			attack(phase)
		}()
	}
	wg.Add(3)
	go func() { defer wg.Done(); r.healthz = b.poll(ctx, d, "/healthz", "") }()
	go func() { defer wg.Done(); r.video = b.poll(ctx, d, "/v1/videos/"+b.taskID, b.key) }()
	go func() { defer wg.Done(); r.admin = b.pollAdmin(ctx, d) }()
	wg.Wait()
	r.hwm = statusMiB(b.srv.PID(), "VmHWM:")
	if after := b.scrape(ctx); before != nil && after != nil {
		r.counters = deltas(before, after)
	}
	return r
}

// poll is the well-behaved client: an open-loop GET of path at -rate for d, from 127.0.0.1,
// on a few keep-alive connections. Anything but a 200 counts as refused.
func (b *bench) poll(ctx context.Context, d time.Duration, path, key string) load.Result {
	client := load.NewClient(4)
	defer client.CloseIdleConnections()
	res, err := load.Run(ctx, load.Config{
		Rate: b.o.rate, Duration: d, MaxInFlight: 64, Timeout: 5 * time.Second, Client: client,
		NewRequest: func(int) (*http.Request, error) {
			req, err := http.NewRequest(http.MethodGet, b.base+path, nil)
			if err == nil && key != "" {
				req.Header.Set("Authorization", "Bearer "+key)
			}
			return req, err
		},
		Expect: func(s int) bool { return s == http.StatusOK },
	})
	if err != nil {
		b.logf("poll %s: %v", path, err)
	}
	return res
}

// pollAdmin is the operator: GET /admin/v1/whoami on the admin listener at -admin-rate for
// d, from 127.0.0.1, a new connection each, as the CLI makes its calls.
func (b *bench) pollAdmin(ctx context.Context, d time.Duration) load.Result {
	client := load.NewClient(2)
	client.Transport.(*http.Transport).DisableKeepAlives = true
	res, err := load.Run(ctx, load.Config{
		Rate: b.o.adminRate, Duration: d, MaxInFlight: 64, Timeout: 5 * time.Second, Client: client,
		NewRequest: func(int) (*http.Request, error) {
			req, err := http.NewRequest(http.MethodGet, b.adminBase+"/admin/v1/whoami", nil)
			if err == nil {
				req.Header.Set("Authorization", "Bearer "+b.adminToken)
			}
			return req, err
		},
		Expect: func(s int) bool { return s == http.StatusOK },
	})
	if err != nil {
		b.logf("poll the admin listener: %v", err)
	}
	return res
}

func (b *bench) slowUploadPhase(ctx context.Context) *phaseResult {
	st := &attackStats{}
	r := b.measure(ctx, b.o.hold, func(phase context.Context) { b.attack(phase, "slow-uploads", st) })
	r.attack = st
	return r
}

func (b *bench) adminPhase(ctx context.Context) *phaseResult {
	st := &attackStats{}
	r := b.measure(ctx, b.o.hold, func(phase context.Context) { b.attack(phase, "admin", st) })
	r.attack = st
	return r
}

func (b *bench) baselinePhase(ctx context.Context) *phaseResult {
	return b.measure(ctx, b.o.baseline, nil)
}

func (b *bench) downloadPhase(ctx context.Context) *phaseResult {
	st := &attackStats{}
	r := b.measure(ctx, b.o.hold, func(phase context.Context) { b.attack(phase, "downloads", st) })
	r.attack = st
	return r
}

func (b *bench) headerPhase(ctx context.Context) *phaseResult {
	st := &attackStats{}
	r := b.measure(ctx, b.o.hold, func(phase context.Context) { b.attack(phase, "headers", st) })
	r.attack = st
	return r
}

// openFiles counts a process's open descriptors (0 when unknown).
func openFiles(pid int) int {
	d, err := os.Open("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		return 0
	}
	defer d.Close()
	n := 0
	for {
		names, err := d.Readdirnames(4096)
		n += len(names)
		if err != nil {
			return n
		}
	}
}

// statusMiB reads one "kB" field of /proc/PID/status, in MiB (0 when unknown).
func statusMiB(pid int, field string) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

// counter is one of the server's series, summed over the label values that match.
type counter struct {
	name  string
	value float64
	gauge bool // a level at the end of the phase, not a change over it
}

// watched are the server's series the report shows (absent from a server without the edge's
// bounds): name, the label text a series must contain, and whether it is a gauge.
var watched = []struct {
	name, match string
	gauge       bool
}{
	{"mediagen_http_connections_refused_total", `listener="api",reason="per_client"`, false},
	{"mediagen_http_connections_refused_total", `listener="api",reason="high_water"`, false},
	{"mediagen_http_connections_refused_total", `listener="api",reason="full"`, false},
	{"mediagen_http_idle_connections_closed_total", `listener="api"`, false},
	{"mediagen_rate_limited_total", `scope="client"`, false},
	{"mediagen_rate_limited_total", `scope="link"`, false},
	{"mediagen_rate_limited_total", `scope="server"`, false},
	{"mediagen_http_responses_stalled_total", "", false},
	{"mediagen_http_requests_total", `status="408"`, false},
	{"mediagen_http_connections_refused_total", `listener="admin",reason="per_client"`, false},
	{"mediagen_http_connections_refused_total", `listener="admin",reason="high_water"`, false},
	{"mediagen_http_connections_refused_total", `listener="admin",reason="full"`, false},
	{"mediagen_http_connections", `listener="api"`, true},
}

// scrape reads the server's /metrics (nil when it has none of the watched series).
func (b *bench) scrape(ctx context.Context) map[string]float64 {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/metrics", nil)
	res, err := b.client.Do(req)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	text, _ := io.ReadAll(io.LimitReader(res.Body, 16<<20))
	out := map[string]float64{}
	found := false
	for _, w := range watched {
		key := w.name + "{" + w.match + "}"
		for line := range strings.SplitSeq(string(text), "\n") {
			name, rest, _ := strings.Cut(line, "{")
			if name != w.name {
				if n, v, ok := strings.Cut(line, " "); ok && n == w.name && w.match == "" {
					f, _ := strconv.ParseFloat(v, 64)
					out[key] += f
					found = true
				}
				continue
			}
			labels, v, ok := strings.Cut(rest, "} ")
			if !ok || !strings.Contains(labels, w.match) {
				continue
			}
			f, _ := strconv.ParseFloat(v, 64)
			out[key] += f
			found = true
		}
	}
	if !found {
		return nil
	}
	return out
}

func deltas(before, after map[string]float64) []counter {
	var cs []counter
	for _, w := range watched {
		key := w.name + "{" + w.match + "}"
		if w.gauge {
			cs = append(cs, counter{name: key, value: after[key], gauge: true})
		} else {
			cs = append(cs, counter{name: key, value: after[key] - before[key]})
		}
	}
	return cs
}
