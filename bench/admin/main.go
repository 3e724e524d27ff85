// Command admin measures the admin API's writes end to end on a loopback listener: credits
// (auth, role, strict decode, the ledger posting, its audit entry and its idempotent answer in
// one transaction), their replays, and a key listing, on SQLite and on PostgreSQL. It prints
// figures and never fails on a number.
//
//	go run ./bench/admin [-n 2000] [-c 8] [-pg-url URL]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"mediagen/bench/internal/pgschema"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/adminapi"
	"mediagen/internal/catalog"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/sqlite"
)

func main() {
	n := flag.Int("n", 2000, "requests per measurement")
	c := flag.Int("c", 8, "concurrent clients")
	pgURL := flag.String("pg-url", envOr("MEDIAGEN_TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL for the second run (a schema of its own is made and dropped)")
	flag.Parse()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-admin")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(ctx, filepath.Join(dir, "bench.db"))
	if err != nil {
		fail(err)
	}
	run("sqlite", db, *n, *c)
	_ = db.Close()

	url, drop, err := pgschema.Fresh(ctx, *pgURL, fmt.Sprintf("bench_admin_%d", time.Now().UnixNano()))
	if err != nil {
		fmt.Printf("postgres: skipped (%v)\n", err)
		return
	}
	defer drop()
	pg, err := postgres.Open(ctx, url)
	if err != nil {
		fmt.Printf("postgres: skipped (%v)\n", err)
		return
	}
	run("postgres", pg, *n, *c)
	_ = pg.Close()
}

func run(name string, st store.Store, n, c int) {
	ctx := context.Background()
	cat := catalog.Demo()
	svc := admin.New(admin.Config{Store: st, Catalog: func() *catalog.Catalog { return cat }})
	srv := adminapi.New(adminapi.Config{Service: svc})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fail(err)
	}
	hs := &http.Server{Handler: srv.Handler()}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	base := "http://" + ln.Addr().String()
	tok, err := svc.CreateToken(ctx, admin.CLIActor("bench"), admin.TokenInput{Name: "bench", Role: "owner"})
	if err != nil {
		fail(err)
	}
	key, err := svc.CreateKey(ctx, admin.CLIActor("bench"), admin.KeyInput{Tenant: "demo", Name: "bench"})
	if err != nil {
		fail(err)
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: c}}
	do := func(method, path, idem, body string) int {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok.Secret)
		if idem != "" {
			req.Header.Set("Idempotency-Key", idem)
		}
		res, err := client.Do(req)
		if err != nil {
			fail(err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res.StatusCode
	}
	measure := func(what string, call func(i int) int, want int) {
		lat := make([]time.Duration, n)
		var wg sync.WaitGroup
		next := make(chan int, n)
		for i := range n {
			next <- i
		}
		close(next)
		bad := 0
		var mu sync.Mutex
		start := time.Now()
		for range c {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					t0 := time.Now()
					status := call(i)
					lat[i] = time.Since(t0)
					if status != want {
						mu.Lock()
						bad++
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		took := time.Since(start)
		sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
		fmt.Printf("%-8s %-28s %6d req  %8.0f req/s  p50 %7.2f ms  p99 %7.2f ms  unexpected %d\n", name, what, n,
			float64(n)/took.Seconds(), ms(lat[n/2]), ms(lat[n*99/100]), bad)
	}
	credit := "/admin/v1/keys/" + key.ID + "/credits"
	measure("credit (new Idempotency-Key)", func(i int) int { return do("POST", credit, fmt.Sprintf("c-%d", i), `{"amount":0.01}`) }, 201)
	measure("credit replay", func(i int) int { return do("POST", credit, fmt.Sprintf("c-%d", i), `{"amount":0.01}`) }, 201)
	measure("GET key", func(int) int { return do("GET", "/admin/v1/keys/"+key.ID, "", "") }, 200)
	measure("GET audit (100 newest)", func(int) int { return do("GET", "/admin/v1/audit", "", "") }, 200)
	if err := st.CheckLedger(ctx); err != nil {
		fmt.Printf("%s: ledger: %v\n", name, err)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench/admin:", err)
	os.Exit(1)
}
