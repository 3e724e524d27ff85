package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/money"
	"mediagen/internal/provider/runway/runwayfake"
	"mediagen/internal/store"
)

const runwayTestKey = "key_runway_e2e_5c1f0e2b"

// runwayCatalog is the demo catalog with demo-video-fast on a runway account at base as
// gen4.5 (text or first frame); the cost is Runway's 12 credits per second at $0.01 a credit.
func runwayCatalog(t *testing.T, dir, base string) string {
	t.Helper()
	account := "  - name: runway-main\n    kind: runway\n    base_url: " + base + "\n    api_key_env: RUNWAY_TEST_KEY\n" +
		"    cost: {currency: USD, per_second: {720p: 0.12}}\n"
	path := demoCatalogWith(t, dir, account, map[string]string{"demo-video-fast": "runway-main"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "model: sandbox-video-fast-2.0", "model: gen4.5", 1)
	if s == string(b) {
		t.Fatal("demo catalog layout changed")
	}
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Load(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// runwayRig starts the service on a fake Runway (cfg, with the test key unless cfg has one).
func runwayRig(t *testing.T, cfg runwayfake.Config, args ...string) (*e2e, *runwayfake.Server) {
	t.Helper()
	tools := requireTools(t)
	if cfg.Key == "" {
		cfg.Key = runwayTestKey
	}
	fake := runwayfake.Start(cfg)
	t.Cleanup(fake.Close)
	logs := &syncBuffer{}
	m := NewMain(env(map[string]string{"RUNWAY_TEST_KEY": runwayTestKey}), &syncBuffer{}, logs)
	m.FetchTLS = fake.TLS()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	args = append([]string{"--fetch-allow", "loopback", "--log-level", "debug", "--catalog", runwayCatalog(t, t.TempDir(), fake.Base())}, args...)
	return startRemote(t, m, t.TempDir(), tools, 100*money.Scale, args...), fake
}

// A text-to-video task on a runway account runs through the real server on the fake Runway
// (the create in the SDK's format: the fake records any field out of it), is copied and
// measured, the tenant is charged the measured video's tokens, the operator's cost is the
// seconds Runway billed (cost.credits ÷ gen4.5's 12 credits a second) × per_second, one job
// is made, and requests Runway cannot serve are refused at submission.
func TestRunwayAccountRunsATaskAndChargesTheMeasuredVideo(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "runway.mp4", 320, 180, 24, 5)
	e, fake := runwayRig(t, runwayfake.Config{Clip: clip, Polls: 2})
	tenant, _ := e.m.cat().Tenant("demo")
	for _, tc := range []struct{ body, param string }{
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":8,"resolution":"720p"}}`, "metadata.duration"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"21:9","duration":5,"resolution":"720p"}}`, "metadata.ratio"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":5,"resolution":"720p","generate_audio":true}}`, "metadata.generate_audio"},
	} {
		if status, b := e.call("POST", "/v1/videos", tc.body); status != 400 || !strings.Contains(string(b), `"param":"`+tc.param+`"`) {
			t.Errorf("%s: %d %s; want 400 on %s", tc.body, status, b, tc.param)
		}
	}
	id := e.create(`{"model":"demo-video-fast","prompt":"a red kite","seed":7,"metadata":{"ratio":"16:9","duration":5,"resolution":"720p"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task on runway: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.URL, "runway.mp4")
	tokens := billing.NativeTokens(info.Width, info.Height, min(info.FPS, billing.NativeFPS), info.Billable())
	want, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got := e.used(); got != want || task.Usage == nil || task.Usage.CompletionTokens != tokens {
		t.Errorf("charged %s (usage %+v), want %s for %d tokens", got, task.Usage, want, tokens)
	}
	if n := fake.JobsFor("a red kite"); n != 1 {
		t.Errorf("%d upstream jobs", n)
	}
	body := fake.Body("a red kite")
	if body["ratio"] != "1280:720" || body["duration"] != float64(5) || body["seed"] != float64(7) || body["model"] != "gen4.5" {
		t.Errorf("create body %v", body)
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	now := time.Now().UTC().Truncate(time.Hour)
	rows, err := e.m.db.UsageReport(context.Background(), store.UsageQuery{From: now.Add(-time.Hour), To: now.Add(2 * time.Hour),
		GroupBy: []string{store.UsageByUpstream, store.UsageByRoute}})
	if err != nil {
		t.Fatal(err)
	}
	cost, _ := billing.SecondsCost(120_000, billing.SecondsToMicros(5))
	if len(rows) != 1 || rows[0].Upstream != "runway-main" || rows[0].Cost != cost {
		t.Errorf("cost rows %+v, want one row on runway-main costing %s USD", rows, cost)
	}
}

// Runway has no idempotency key and no task list: a create whose answer is lost after the job
// was made is never repeated; the task fails, refunded, with one job, recorded as the
// operator's lost_create excess. Refusals end refunded; a refused key, a rate limit with or
// without Retry-After and a job that never ends hold the task until its deadline; a job still
// running when its task is given up is cancelled (DELETE /v1/tasks/{id}), the others are not.
func TestRunwayFaultsEndRefundedWithNeverASecondJob(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "runway.mp4", 160, 90, 12, 5)
	for _, tc := range []struct {
		name, status string
		cfg          runwayfake.Config
		jobs         int
		excess       bool
		cancelled    int // jobs cancelled as the task was given up
	}{
		{"the create answer is lost", "failed", runwayfake.Config{LoseAnswers: true}, 1, true, 0},
		{"moderation refuses the output", "failed", runwayfake.Config{End: func(string) string { return runwayfake.EndRefuse }}, 1, false, 0},
		{"the job never ends", "expired", runwayfake.Config{End: func(string) string { return runwayfake.EndNever }}, 1, false, 1},
		{"429 with Retry-After", "expired", runwayfake.Config{RateLimit: 1}, 0, false, 0},
		{"429 without Retry-After", "expired", runwayfake.Config{RateLimit: -1}, 0, false, 0},
		{"the key is refused", "expired", runwayfake.Config{Key: "key_revoked"}, 0, false, 0},
		{"garbage task reads", "expired", runwayfake.Config{Garbage: true}, 1, false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Clip = clip
			e, fake := runwayRig(t, tc.cfg, "--task-deadline", "4s", "--task-retry-max", "1s")
			id := e.create(`{"model":"demo-video-fast","prompt":"p","metadata":{"ratio":"16:9","duration":5,"resolution":"720p"}}`)
			task := e.wait(id)
			if task.Status != tc.status || task.Error == nil {
				t.Fatalf("task ended %s %+v, want %s", task.Status, task.Error, tc.status)
			}
			if used := e.used(); used != 0 {
				t.Errorf("charged %s", used)
			}
			if n := fake.JobsFor("p"); n != tc.jobs {
				t.Errorf("%d upstream jobs, want %d", n, tc.jobs)
			}
			if n := fake.Cancelled(); n != tc.cancelled {
				t.Errorf("%d jobs cancelled upstream, want %d", n, tc.cancelled)
			}
			if tc.excess {
				e.expectExcess(id, map[string]string{billing.ExcessLostCreate: "runway-main"})
			}
			if err := e.m.db.CheckLedger(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

// An expired output link (Runway's last 24-48 h) is read again from a fresh task read: the
// task completes with its one job, charged as any other.
func TestRunwayExpiredOutputLinkIsReadAgain(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "runway.mp4", 160, 90, 12, 5)
	e, fake := runwayRig(t, runwayfake.Config{Clip: clip, ExpireFirst: 2})
	id := e.create(`{"model":"demo-video-fast","prompt":"stale","metadata":{"ratio":"9:16","duration":5,"resolution":"720p"}}`)
	task := e.wait(id)
	if task.Status != "completed" || fake.JobsFor("stale") != 1 {
		t.Fatalf("task %s %+v with %d jobs; want completed with one", task.Status, task.Error, fake.JobsFor("stale"))
	}
	if n := fake.ExpiredDownloads(); n != 2 {
		t.Errorf("%d downloads of an expired link, want the 2 handed out", n)
	}
	tenant, _ := e.m.cat().Tenant("demo")
	want, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), billing.NativeTokens(160, 90, 12, 5))
	if got := e.used(); got != want {
		t.Errorf("charged %s, want %s", got, want)
	}
}

// upstream check of a runway account reads a task no create makes: OK with its key (the 404),
// FAILED with a wrong one (401), the key never printed.
func TestAdminUpstreamCheckCallsRunway(t *testing.T) {
	t.Parallel()
	fake := runwayfake.Start(runwayfake.Config{Key: runwayTestKey})
	t.Cleanup(fake.Close)
	cat := runwayCatalog(t, t.TempDir(), fake.Base())
	for _, tc := range []struct {
		name, key, want string
		fails           bool
	}{
		{"with its key", runwayTestKey, "runway-main (runway): OK, read a task with the account's key at " + fake.Base(), false},
		{"with a wrong key", "key_wrong_runway_2", "runway-main (runway): FAILED", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", cat, "runway-main"},
				env(map[string]string{"RUNWAY_TEST_KEY": tc.key}), &out, &errOut, fake.TLS())
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err != nil) != tc.fails || !strings.Contains(text, tc.want) {
				t.Errorf("check: %v\n%s; want %q", err, text, tc.want)
			}
			if strings.Contains(text, tc.key) {
				t.Errorf("the key is in the output: %s", text)
			}
			if v := fake.Violations(); len(v) > 0 {
				t.Errorf("wire format: %v", v)
			}
		})
	}
}
