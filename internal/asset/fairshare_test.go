package asset

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// The probe, on the asset ingestion workers: key A creates ten assets from a slow
// source and another tenant (or another key of A's tenant) creates one from a fast source
// after them. With one ingestion worker busy on A's first, the next fetch the worker starts
// is the other side's, not A's second: it was still Processing after 1,168 s when each free
// worker took A's next-oldest job.
func TestWaitingSideIngestsAtTheNextFreeWorker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, tenant, key string }{
		{"another tenant", "rival", "key_r"},
		{"another key of the tenant", "acme", "key_a2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			png := pngBytes(t, 8, 6)
			var mu sync.Mutex
			var fetched []string // source paths, in the order the workers asked for them
			release := make(chan struct{})
			src := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				fetched = append(fetched, r.URL.Path)
				mu.Unlock()
				if strings.HasPrefix(r.URL.Path, "/slow/") {
					select { // a slow source: answers once the test lets it
					case <-release:
					case <-r.Context().Done():
						return
					}
				}
				w.Header().Set("Content-Type", "image/png")
				_, _ = w.Write(png)
			}))
			t.Cleanup(src.Close)
			order := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return append([]string(nil), fetched...)
			}
			e := newEnv(t, envOpts{mutate: func(c *Config) { c.Concurrency = 1 }})
			a, other := caller(testCatalog, "acme", "key_a"), caller(testCatalog, tc.tenant, tc.key)
			ga := e.virtualGroup(a)
			var ids []string
			for i := range 10 {
				ids = append(ids, e.createAsset(a, ga, fmt.Sprintf("%s/slow/%d.png", src.URL, i), "Image"))
			}
			testkit.WaitFor(t, 20*time.Second, "the worker never started A's first ingestion", func() bool { return len(order()) > 0 })
			fast := e.createAsset(other, e.virtualGroup(other), src.URL+"/fast.png", "Image")
			release <- struct{}{} // A's first source answers: the worker frees
			if m := e.wait(other, fast); m["Status"] != store.AssetActive {
				t.Fatalf("the other side's asset ended %v", m)
			}
			if got := order(); len(got) < 2 || got[1] != "/fast.png" {
				t.Fatalf("sources fetched in order %v; want /fast.png second, at the first free worker", got)
			}
			close(release)
			for _, id := range ids {
				e.wait(a, id)
			}
		})
	}
}
