package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
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
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/store"
)

// TestArkFaultsEndEveryTaskWithOneJobAndTheRightMoney runs 80 tasks (MEDIAGEN_FAULT_TASKS
// sets another number; `make soak` runs 200), at most 25 upstream
// jobs at a time (the account's max_in_flight; the others wait, queued), through the fake Ark
// (arkfake) failing 30% of its answers: creates refused with 503 or 429 before any job is
// made, creates that make the job and then lose the answer (a 500, a dropped connection),
// polls answering 500, 429 with Retry-After or malformed JSON or stalling past the account's
// 1 s timeout, lists failing, result links
// handed out already expired or answering 404. One task in ten is refused by the upstream's
// content check. Every task must end with at most one upstream job — exactly one for a
// completed task, although lost answers made the service submit again — a completed task
// charged exactly the tokens its stored video implies (the upstream reports fewer: each such
// report is recorded as its usage_under excess), every other task refunded, and the ledger
// must balance.
func TestArkFaultsEndEveryTaskWithOneJobAndTheRightMoney(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through a faulty fake upstream")
	}
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "f"}, clip); err != nil {
		t.Fatal(err)
	}
	// The clip measures 160×90×12×1/1024 ≈ 169 tokens; the upstream reports 160, 5% less: the
	// floor (what the stored video implies) is billed, and the report recorded as usage_under.
	const reported, tokens, maxInFlight = 160, 169, 25
	tasks := sizeFromEnv(t, "MEDIAGEN_FAULT_TASKS", 80)
	fake := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: reported, FaultPercent: 30, Seed: 1, Stall: 1500 * time.Millisecond,
		End: func(prompt string) string {
			if strings.HasSuffix(prompt, "0") { // tasks 0, 10, 20, …
				return arkfake.EndRefuse
			}
			return arkfake.EndSucceed
		}})
	t.Cleanup(fake.Close)
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), io.Discard, &logs)
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 1000*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "8", "--task-retry-max", "2s", "--catalog", arkCatalog(t, t.TempDir(), fake.Base(), fmt.Sprintf("    max_in_flight: %d\n    timeout_seconds: 1\n", maxInFlight)))
	var ids []string
	for i := 0; i < tasks; i++ {
		ids = append(ids, e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"task %d","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`, i)))
	}
	// Every task ends: completed, charged the upstream's tokens; refused by the upstream's
	// content check; or, should one of its steps fail on every attempt (the faults are
	// random), failed. Both failures are refunded.
	deadline := time.Now().Add(4*time.Minute + time.Duration(tasks)*time.Second)
	completed, refused, gaveUp := 0, 0, 0
	done := make([]bool, len(ids))
	for i, id := range ids {
		task := e.wait(id)
		switch {
		case task.Status == "completed" && task.Usage != nil && task.Usage.CompletionTokens == tokens && i%10 != 0:
			completed++
			done[i] = true
		case task.Status == "failed" && i%10 == 0 && task.Error != nil && task.Error.Code == "video_generation_failed" &&
			!strings.Contains(task.Error.Message, "raw upstream"):
			refused++
		case task.Status == "failed":
			gaveUp++
			t.Logf("task %s failed after its attempts; the service logged:\n%s", id, linesWith(logs.String(), id))
		default:
			t.Errorf("task %d (%s) ended %s %+v", i, id, task.Status, task.Error)
		}
		if time.Now().After(deadline) {
			t.Fatal("the tasks did not finish in time")
		}
	}
	t.Logf("%d completed, %d refused by the upstream, %d gave up; the fake made %d jobs, lost %d create answers, stalled %d polls, peak %d running",
		completed, refused, gaveUp, fake.Jobs(), fake.LostAnswers(), fake.Stalls(), fake.Peak())
	if completed < tasks*9/10*9/10 {
		t.Errorf("%d of %d tasks completed; 30%% faults retried with backoff should complete nearly all", completed, tasks)
	}
	if fake.LostAnswers() == 0 || fake.Stalls() == 0 {
		t.Errorf("%d creates lost their answer, %d polls stalled: the faults were not exercised", fake.LostAnswers(), fake.Stalls())
	}
	if p := fake.Peak(); p > maxInFlight || p == 0 {
		t.Errorf("the upstream had %d jobs running at once; the account allows %d", p, maxInFlight)
	}
	for i, id := range ids {
		// A completed task made one upstream job; any other at most one (none when its
		// create was refused on every attempt).
		if n := fake.JobsFor(ark.Tag(id + ":gen")); n > 1 || (done[i] && n != 1) {
			t.Errorf("task %d made %d upstream jobs", i, n)
		}
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	tenant, _ := m.cat().Tenant("demo")
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got, want := e.used(), one*money.Micros(completed); got != want {
		t.Errorf("charged %s, want %s (%d completed tasks × %s; failed ones refunded)", got, want, completed, one)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
	under, err := m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "ark-main", Limit: tasks})
	if err != nil {
		t.Fatal(err)
	}
	if len(under) != completed {
		t.Errorf("%d upstream excess records for %d completed tasks that each reported %d of %d tokens", len(under), completed, reported, tokens)
	}
	for _, r := range under {
		if r.Kind != billing.ExcessUsageUnder {
			t.Errorf("excess %+v, want usage_under", r)
		}
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
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--log-level", "error", "--task-deadline", "3s", "--catalog", arkCatalog(t, t.TempDir(), fake.URL+"/api/v3", "    max_in_flight: 1\n"))
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
