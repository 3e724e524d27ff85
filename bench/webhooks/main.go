// Command webhooks measures webhook delivery under a slow tenant: n completions (events
// written as a settlement writes them, each in its own transaction) shared between a tenant
// whose endpoint answers after -slow (2 s) and a tenant whose endpoint answers at once, at
// -rate completions a second, delivered by one process's job engine (16 delivery workers,
// at most 4 at once per endpoint, fair claims between tenants) through the SSRF-safe client
// to two loopback TLS receivers. It prints, per tenant, the deliveries received and the
// latency from the commit of the event to its receipt (p50, p99, max), the throughput, and
// the heap's peak; it never fails on a number.
//
//	go run ./bench/webhooks -n 10000 -rate 200
//
// Bounded: at most n events, and the run stops -max after the last event was written
// (the slow tenant's backlog, at 4 / 2 s, is reported as not yet delivered, not waited for).
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"mediagen/bench/internal/pgschema"
	"mediagen/internal/catalog"
	"mediagen/internal/jobs"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/sqlite"
	"mediagen/internal/webhook"
)

// benchCatalog has the two tenants, each allowed one endpoint.
const benchCatalog = `tenants:
  - id: slow
    name: Slow tenant
    currency: USD
    webhooks: {enabled: true, max_endpoints: 1}
  - id: fast
    name: Fast tenant
    currency: USD
    webhooks: {enabled: true, max_endpoints: 1}
`

func main() {
	n := flag.Int("n", 10000, "completions, shared equally between the slow and the fast tenant")
	rate := flag.Int("rate", 200, "completions written a second")
	slow := flag.Duration("slow", 2*time.Second, "how long the slow tenant's endpoint takes to answer")
	maxWait := flag.Duration("max", 60*time.Second, "how long the run goes on after the last completion")
	pg := flag.String("db", "", "a PostgreSQL server's URL, where the run makes a schema of its own (empty: SQLite in a temporary directory)")
	flag.Parse()
	if err := run(*n, *rate, *slow, *maxWait, *pg); err != nil {
		fmt.Fprintln(os.Stderr, "webhooks:", err)
		os.Exit(1)
	}
}

// receiver is one tenant's endpoint: it notes when each webhook-id arrived.
type receiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	seen map[string]time.Time
}

func newReceiver(delay time.Duration) *receiver {
	r := &receiver{seen: map[string]time.Time{}}
	r.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		_, _ = io.Copy(io.Discard, req.Body)
		at := time.Now()
		if delay > 0 {
			select {
			case <-time.After(delay):
			case <-req.Context().Done():
				return
			}
		}
		r.mu.Lock()
		if _, dup := r.seen[req.Header.Get("webhook-id")]; !dup {
			r.seen[req.Header.Get("webhook-id")] = at
		}
		r.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	return r
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.seen)
}

type benchStore interface {
	store.Store
	Close() error
}

func open(ctx context.Context, pg string) (benchStore, func(), error) {
	if pg != "" {
		// A schema of its own on the server, dropped at the end.
		u, drop, err := pgschema.Fresh(ctx, pg, fmt.Sprintf("bench_webhooks_%d", os.Getpid()))
		if err != nil {
			return nil, nil, err
		}
		db, err := postgres.Open(ctx, u)
		return db, drop, err
	}
	dir, err := os.MkdirTemp("", "bench-webhooks-*")
	if err != nil {
		return nil, nil, err
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"))
	return db, func() { os.RemoveAll(dir) }, err
}

func run(n, rate int, slowDelay, maxWait time.Duration, pg string) error {
	ctx := context.Background()
	db, cleanup, err := open(ctx, pg)
	if err != nil {
		return err
	}
	defer cleanup()
	defer db.Close()
	cat, err := catalog.Parse("bench", []byte(benchCatalog))
	if err != nil {
		return err
	}
	slowRc, fastRc := newReceiver(slowDelay), newReceiver(0)
	defer slowRc.srv.Close()
	defer fastRc.srv.Close()
	// httptest's TLS servers share one certificate: trusting one trusts both.
	roots := slowRc.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	svc := &webhook.Service{Store: db, Catalogs: catalog.Static(cat), Logger: quiet,
		Client: webhook.NewClient(safefetch.Options{AllowLoopback: true, TLSConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}})}
	svc.RegisterMetrics(nil)
	eng := jobs.New(jobs.Config{Store: db, Logger: quiet})
	for _, k := range svc.Kinds() {
		k.Poll = 100 * time.Millisecond
		if err := eng.Register(k); err != nil {
			return err
		}
	}
	svc.Notify = eng.Notify
	endpoint := map[string]string{}
	for tenant, rc := range map[string]*receiver{"slow": slowRc, "fast": fastRc} {
		ep, err := svc.Create(ctx, tenant, 1, []byte(`{"name":"bench","url":"`+rc.srv.URL+`/hook","event_types":["video.completed"]}`))
		if err != nil {
			return fmt.Errorf("endpoint of %s: %w", tenant, err)
		}
		endpoint[tenant] = ep.ID
	}
	if err := eng.Start(ctx); err != nil {
		return err
	}
	defer eng.Stop()

	var peakHeap atomic.Uint64
	stopMem := make(chan struct{})
	go func() {
		t := time.NewTicker(200 * time.Millisecond)
		defer t.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > peakHeap.Load() {
				peakHeap.Store(m.HeapInuse)
			}
			select {
			case <-t.C:
			case <-stopMem:
				return
			}
		}
	}()

	committed := map[string]map[string]time.Time{"slow": {}, "fast": {}}
	start := time.Now()
	tick := time.NewTicker(time.Second / time.Duration(max(rate, 1)))
	for i := range n {
		<-tick.C
		tenant := "fast"
		if i%2 == 0 {
			tenant = "slow"
		}
		var id string
		err := db.Transact(ctx, func(tx store.Tx) (err error) {
			id, err = svc.Announce(ctx, tx, webhook.Event{TenantID: tenant, Type: webhook.VideoCompleted,
				ObjectID: fmt.Sprintf("video_bench_%d", i), At: time.Now()})
			return err
		})
		if err != nil {
			return fmt.Errorf("completion %d: %w", i, err)
		}
		committed[tenant][id] = time.Now()
		svc.Wake()
	}
	tick.Stop()
	written := time.Since(start)
	deadline := time.Now().Add(maxWait)
	for time.Now().Before(deadline) && (fastRc.count() < len(committed["fast"]) || slowRc.count() < len(committed["slow"])) {
		time.Sleep(100 * time.Millisecond) // a bench's progress poll, not a test's synchronisation
	}
	elapsed := time.Since(start)
	close(stopMem)

	fmt.Printf("completions %d (%d slow, %d fast) written in %s (%.0f/s); store %s; slow endpoint answers after %s\n",
		n, len(committed["slow"]), len(committed["fast"]), written.Round(time.Millisecond), float64(n)/written.Seconds(), storeName(pg), slowDelay)
	for _, tenant := range []string{"fast", "slow"} {
		rc := map[string]*receiver{"slow": slowRc, "fast": fastRc}[tenant]
		var lat []time.Duration
		rc.mu.Lock()
		for id, c := range committed[tenant] {
			if at, ok := rc.seen[id]; ok {
				lat = append(lat, at.Sub(c))
			}
		}
		rc.mu.Unlock()
		slices.Sort(lat)
		fmt.Printf("%-4s tenant: delivered %d of %d in %s (%.1f/s)", tenant, len(lat), len(committed[tenant]), elapsed.Round(time.Millisecond),
			float64(len(lat))/elapsed.Seconds())
		if len(lat) > 0 {
			fmt.Printf("; commit→receipt p50 %s p99 %s max %s", pct(lat, 50), pct(lat, 99), lat[len(lat)-1].Round(time.Millisecond))
		}
		fmt.Println()
	}
	fmt.Printf("heap in use, peak: %.1f MiB\n", float64(peakHeap.Load())/(1<<20))
	return nil
}

func pct(d []time.Duration, p int) time.Duration {
	i := (len(d)*p + 99) / 100
	return d[min(max(i-1, 0), len(d)-1)].Round(time.Millisecond)
}

func storeName(pg string) string {
	if pg != "" {
		return "PostgreSQL"
	}
	return "SQLite"
}
