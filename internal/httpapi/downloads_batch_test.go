package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	mgclient "github.com/mediagen-dev/mediagen/client"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/limits"
	"mediagen/internal/testkit"
)

// TestABatchOfResultsFromOneAddressCompletesWithTheSDK: a tenant's backend behind one
// address copies a batch of results at once — more than the burst, so part of it meets the
// sustained rate — with the Go SDK at its defaults (32 downloads at once, the per-address
// bound; Retry-After honoured, 4 retries). Every download completes, with the default
// limits, and no person has to retry anything (issue 41 §7: the file rate refused such a
// batch for good).
func TestABatchOfResultsFromOneAddressCompletesWithTheSDK(t *testing.T) {
	t.Parallel()
	const results = limits.FileBurst + 200
	root := t.TempDir()
	fs, err := blob.NewFS(filepath.Join(root, "blobs"), bytes.Repeat([]byte("k"), 32), testPublicURL)
	if err != nil {
		t.Fatal(err)
	}
	s := New(Config{Store: testkit.SQLite(t), Catalog: catalog.Demo(), Files: fs,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Downloads: limits.NewDownloads(nil, limits.DownloadLimits{Total: 1024})})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	links := make([]string, results)
	for i := range links {
		key := fmt.Sprintf("speech/speech_%04d/audio.mp3", i)
		if _, err := fs.Put(context.Background(), key, strings.NewReader(fmt.Sprintf("audio %04d", i))); err != nil {
			t.Fatal(err)
		}
		link, _ := fs.SignedURL(key, time.Hour)
		links[i] = ts.URL + strings.TrimPrefix(link, testPublicURL)
	}
	c, err := mgclient.New(ts.URL, "mg_unused", mgclient.Options{HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: limits.DownloadsPerClient}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	work := make(chan int)
	var mu sync.Mutex
	var failed []string
	var wg sync.WaitGroup
	for range limits.DownloadsPerClient {
		wg.Go(func() {
			for i := range work {
				var buf bytes.Buffer
				_, err := c.Download(ctx, links[i], &buf, nil)
				if want := fmt.Sprintf("audio %04d", i); err != nil || buf.String() != want {
					mu.Lock()
					failed = append(failed, fmt.Sprintf("result %d: %q, %v", i, buf.String(), err))
					mu.Unlock()
				}
			}
		})
	}
	began := time.Now()
	for i := range links {
		work <- i
	}
	close(work)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d downloads failed after %v, e.g. %s", len(failed), results, time.Since(began).Round(time.Millisecond), failed[0])
	}
}

// TestEvery429CarriesRetryAfter: a rate-limit error answered by any route carries
// Retry-After, even one that no limit of internal/limits made (those set their own): a
// client that honours it must never be left guessing.
func TestEvery429CarriesRetryAfter(t *testing.T) {
	t.Parallel()
	e := newEdgeEnv(t, Config{})
	e.srv.handle("GET /test/limited", func(w http.ResponseWriter, r *http.Request) error {
		return apierr.New(apierr.KindRateLimit, "Slow down.")
	})
	res, err := http.Get(e.ts.URL + "/test/limited")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusTooManyRequests || res.Header.Get("Retry-After") == "" {
		t.Errorf("%d, Retry-After %q; want 429 with Retry-After", res.StatusCode, res.Header.Get("Retry-After"))
	}
}
