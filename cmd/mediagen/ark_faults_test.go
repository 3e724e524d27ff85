package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
)

// TestArkFaultsEndEveryTaskWithOneJobAndTheRightMoney runs 40 tasks, at most 3 upstream jobs
// at a time (the account's max_in_flight; the others wait, queued), through a fake Ark that
// fails about 30% of its answers: creates refused with 503 or 429 before any job is made,
// polls answering 500, 429 with Retry-After, or malformed JSON, and result downloads that
// fail once. Every task must end, each with exactly one upstream job, a completed one charged
// exactly the tokens the upstream reported and a failed one refunded, and the ledger must
// balance.
func TestArkFaultsEndEveryTaskWithOneJobAndTheRightMoney(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("40 tasks through a faulty fake upstream")
	}
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "f"}, clip); err != nil {
		t.Fatal(err)
	}
	const tasks, tokens = 40, 1000
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(n int) int { mu.Lock(); defer mu.Unlock(); return rng.IntN(n) }
	fault := func() bool { return pick(100) < 30 }
	const maxInFlight = 3
	running, peak := 0, 0          // upstream jobs made and not yet reported succeeded
	jobs := map[string]int{}       // prompt → jobs made for it
	polls := map[string]int{}      // job id → polls answered
	downloads := map[string]bool{} // job id → a download already failed once
	var srvURL string
	fake := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/files/") {
			id := strings.TrimPrefix(r.URL.Path, "/files/")
			mu.Lock()
			failed := downloads[id]
			downloads[id] = true
			mu.Unlock()
			if !failed && fault() {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			http.ServeFile(w, r, clip)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+arkTestKey {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == "POST":
			if fault() {
				if pick(2) == 0 {
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
				} else {
					w.WriteHeader(http.StatusServiceUnavailable)
				}
				return // refused: no job was made
			}
			var body struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			_ = json.NewDecoder(r.Body).Decode(&body)
			prompt := body.Content[0].Text
			mu.Lock()
			jobs[prompt]++
			running++
			peak = max(peak, running)
			id := fmt.Sprintf("cgt-%d", len(polls)+len(jobs))
			polls[id] = 0
			mu.Unlock()
			_, _ = io.WriteString(w, `{"id":"`+id+`"}`)
		case r.Method == "GET":
			id := strings.TrimPrefix(r.URL.Path, "/api/v3/contents/generations/tasks/")
			if fault() {
				switch pick(3) {
				case 0:
					w.WriteHeader(http.StatusInternalServerError)
				case 1:
					w.Header().Set("Retry-After", "1")
					w.WriteHeader(http.StatusTooManyRequests)
				default:
					_, _ = io.WriteString(w, `{"id":`)
				}
				return
			}
			mu.Lock()
			polls[id]++
			n := polls[id]
			if n == 2 {
				running--
			}
			mu.Unlock()
			if n == 1 {
				_, _ = io.WriteString(w, `{"id":"`+id+`","status":"running"}`)
				return
			}
			_, _ = fmt.Fprintf(w, `{"id":"%s","status":"succeeded","content":{"video_url":"%s/files/%s"},"usage":{"completion_tokens":%d}}`, id, srvURL, id, tokens)
		}
	}))
	t.Cleanup(fake.Close)
	srvURL = fake.URL
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), io.Discard, &logs)
	m.FetchTLS = &tls.Config{RootCAs: fake.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	addr := freeAddr(t) // remote upstreams need a public URL; here it is the loopback one
	if err := m.ParseFlags([]string{"--listen", addr, "--data-dir", filepath.Join(dir, "data"), "--fetch-allow", "loopback", "--public-url", "http://" + addr,
		"--log-level", "warn", "--workers", "8", "--catalog", arkCatalog(t, t.TempDir(), fake.URL+"/api/v3", fmt.Sprintf("    max_in_flight: %d\n", maxInFlight))}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	e := &e2e{t: t, m: m, tools: tools}
	e.key = (&assetE2E{e2e: e}).newKey("demo", 100*money.Scale)
	var ids []string
	for i := 0; i < tasks; i++ {
		ids = append(ids, e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"task %d","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`, i)))
	}
	// Every task ends: completed, charged the upstream's tokens; or, should one of its steps
	// fail on every attempt (the faults are random), failed with a full refund.
	deadline := time.Now().Add(3 * time.Minute)
	completed := 0
	done := make([]bool, len(ids))
	for i, id := range ids {
		task := e.wait(id)
		switch {
		case task.Status == "completed" && task.Usage != nil && task.Usage.CompletionTokens == tokens:
			completed++
			done[i] = true
		case task.Status == "failed":
			t.Logf("task %s failed after its attempts; the service logged:\n%s", id, linesWith(logs.String(), id))
		default:
			t.Errorf("task %s ended %s %+v", id, task.Status, task.Error)
		}
		if time.Now().After(deadline) {
			t.Fatal("the tasks did not finish in time")
		}
	}
	if completed < tasks*9/10 {
		t.Errorf("%d of %d tasks completed; 30%% faults retried with backoff should complete nearly all", completed, tasks)
	}
	mu.Lock()
	if peak > maxInFlight || peak == 0 {
		t.Errorf("the upstream had %d jobs running at once; the account allows %d", peak, maxInFlight)
	}
	for i := 0; i < tasks; i++ {
		// A completed task made one upstream job; a failed one at most one (none when its
		// create was refused on every attempt).
		if n := jobs[fmt.Sprintf("task %d", i)]; n > 1 || (done[i] && n != 1) {
			t.Errorf("task %d made %d upstream jobs", i, n)
		}
	}
	mu.Unlock()
	tenant, _ := m.catalog.Tenant("demo")
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got, want := e.used(), one*money.Micros(completed); got != want {
		t.Errorf("charged %s, want %s (%d completed tasks × %s; failed ones refunded)", got, want, completed, one)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}

// syncBuffer is a bytes.Buffer safe for the service's concurrent log writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// linesWith returns the lines of text that contain s.
func linesWith(text, s string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// An upstream job that never finishes does not hold its task forever: at the task deadline the
// task expires with a full refund, and the account's slot is freed.
func TestArkJobThatNeverFinishesExpiresAndRefunds(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	var creates atomic.Int64
	fake := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+arkTestKey {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		if r.Method == "POST" {
			creates.Add(1)
			_, _ = io.WriteString(w, `{"id":"cgt-stuck"}`)
			return
		}
		_, _ = io.WriteString(w, `{"id":"cgt-stuck","status":"running"}`)
	}))
	t.Cleanup(fake.Close)
	dir := t.TempDir()
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), io.Discard, io.Discard)
	m.FetchTLS = &tls.Config{RootCAs: fake.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	addr := freeAddr(t)
	if err := m.ParseFlags([]string{"--listen", addr, "--public-url", "http://" + addr, "--data-dir", filepath.Join(dir, "data"),
		"--log-level", "error", "--task-deadline", "3s",
		"--catalog", arkCatalog(t, t.TempDir(), fake.URL+"/api/v3", "    max_in_flight: 1\n")}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	e := &e2e{t: t, m: m, tools: tools}
	e.key = (&assetE2E{e2e: e}).newKey("demo", 100*money.Scale)
	id := e.create(`{"model":"demo-video-fast","prompt":"never done","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`)
	task := e.wait(id)
	if task.Status != "expired" || task.Error == nil || task.Error.Code != "task_expired" {
		t.Fatalf("stuck task ended %s %+v, want expired", task.Status, task.Error)
	}
	if used := e.used(); used != 0 {
		t.Errorf("charged %s for an expired task", used)
	}
	if n := creates.Load(); n != 1 {
		t.Errorf("%d upstream jobs", n)
	}
	slots, err := m.db.UpstreamSlots(context.Background())
	if err != nil || slots["ark-main"] != 0 {
		t.Errorf("the expired task's slot: %v %v, want released", slots, err)
	}
}
