package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/money"
	"mediagen/internal/provider/dashscope/dashscopefake"
	"mediagen/internal/store"
)

const dashscopeTestKey = "sk-dashscope-e2e-41d07a9e"

// dashscopeCatalog is the demo catalog with demo-video-fast on a dashscope account at base as
// Wan text-to-video (wan2.6-t2v) and demo-video-mini as Wan image-to-video (wan2.6-i2v): the
// models that make every resolution and duration the kind takes; extra lines (indented as the account's fields) are added to the account.
func dashscopeCatalog(t *testing.T, dir, base string, extra ...string) string {
	t.Helper()
	account := "  - name: wan-main\n    kind: dashscope\n    base_url: " + base + "\n    api_key_env: DASHSCOPE_TEST_KEY\n" +
		"    cost: {currency: USD, per_second: {480p: 0.02, 720p: 0.05}}\n" + strings.Join(extra, "")
	path := demoCatalogWith(t, dir, account, map[string]string{"demo-video-fast": "wan-main", "demo-video-mini": "wan-main"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.Replace(string(b), "model: sandbox-video-fast-2.0", "model: wan2.6-t2v", 1)
	s = strings.Replace(s, "model: sandbox-video-mini-2.0", "model: wan2.6-i2v", 1)
	if s == string(b) || !strings.Contains(s, "wan2.6-i2v") {
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

// dashscopeRig starts the service on a fake DashScope (cfg, with the test key and clip).
func dashscopeRig(t *testing.T, cfg dashscopefake.Config, args ...string) (*e2e, *dashscopefake.Server, *syncBuffer) {
	t.Helper()
	tools := requireTools(t)
	if cfg.Key == "" {
		cfg.Key = dashscopeTestKey // else: the only key the fake takes, so the account's is refused
	}
	fake := dashscopefake.Start(cfg)
	t.Cleanup(fake.Close)
	logs := &syncBuffer{}
	m := NewMain(env(map[string]string{"DASHSCOPE_TEST_KEY": dashscopeTestKey}), &syncBuffer{}, logs)
	m.FetchTLS = fake.TLS()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	args = append([]string{"--fetch-allow", "loopback", "--log-level", "debug", "--catalog", dashscopeCatalog(t, t.TempDir(), fake.Base())}, args...)
	return startRemote(t, m, t.TempDir(), tools, 100*money.Scale, args...), fake, logs
}

// Text-to-video and image-to-video tasks on a dashscope account run through the real server
// on the fake DashScope built from the published reference: the creates are in the documented
// format (the fake records any field out of it), the result is copied into this service's
// storage and measured, the tenant is charged the tokens of the measured video (DashScope
// reports seconds, not tokens), the operator's cost is the reported seconds × the account's
// per_second at the request's resolution, each task makes one upstream job, requests Wan
// cannot serve are refused at submission, and the key appears in no log, view or metric.
func TestDashScopeAccountRunsTextAndFirstFrameTasksAndChargesTheMeasuredVideo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// 4.5 s: DashScope reports the 5 s asked (usage.video_duration), which is what it bills.
	clip := colorClip(t, dir, "wan.mp4", 320, 180, 24, 4.5)
	frame := pngOf(t, 64, 36)
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(frame)
	}))
	t.Cleanup(cdn.Close)
	tools := requireTools(t)
	fake := dashscopefake.Start(dashscopefake.Config{Key: dashscopeTestKey, Clip: clip})
	t.Cleanup(fake.Close)
	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"DASHSCOPE_TEST_KEY": dashscopeTestKey}), &out, &logs)
	m.FetchTLS = fake.TLS()
	m.FetchTLS.RootCAs.AddCert(cdn.Certificate())
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "debug", "--catalog", dashscopeCatalog(t, t.TempDir(), fake.Base()))
	tenant, _ := m.cat().Tenant("demo")

	for _, tc := range []struct{ body, param string }{
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":8,"resolution":"480p"}}`, "metadata.duration"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"21:9","duration":5,"resolution":"480p"}}`, "metadata.ratio"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":5,"resolution":"480p","output_format":"mov"}}`, "metadata.output_format"},
	} {
		if status, b := e.call("POST", "/v1/videos", tc.body); status != 400 || !bytes.Contains(b, []byte(`"param":"`+tc.param+`"`)) {
			t.Errorf("%s: %d %s; want 400 on %s", tc.body, status, b, tc.param)
		}
	}
	if used := e.used(); used != 0 {
		t.Fatalf("refused requests charged %s", used)
	}

	id := e.create(`{"model":"demo-video-fast","prompt":"a red kite","metadata":{"ratio":"16:9","duration":5,"resolution":"480p"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("text-to-video on dashscope: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.URL, "wan.mp4")
	tokens := billing.NativeTokens(info.Width, info.Height, min(info.FPS, billing.NativeFPS), info.Billable())
	if info.Width != 320 || !near(info.Duration, 4.5, 0.1) || task.Usage == nil || task.Usage.CompletionTokens != tokens {
		t.Errorf("result %+v, usage %+v; want the 4.5 s clip billed its %d tokens", info, task.Usage, tokens)
	}
	want, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got := e.used(); got != want {
		t.Errorf("charged %s, want %s", got, want)
	}
	if strings.Contains(task.Metadata.URL, fake.Base()) {
		t.Errorf("the upstream's link reached the client: %s", task.Metadata.URL)
	}

	ref := cdn.URL + "/frame.png"
	id2 := e.create(`{"model":"demo-video-mini","prompt":"it moves","metadata":{"duration":5,"resolution":"720p","content":[{"type":"image_url","role":"first_frame","image_url":{"url":"` + ref + `"}}]}}`)
	task2 := e.wait(id2)
	if task2.Status != "completed" {
		t.Fatalf("image-to-video on dashscope: %+v %+v", task2, task2.Error)
	}
	for _, p := range []string{"a red kite", "it moves"} {
		if n := fake.JobsFor(p); n != 1 {
			t.Errorf("%q made %d upstream jobs", p, n)
		}
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}

	// The operator's cost: the seconds DashScope reported (5, the clip measures 4.5) at the
	// request's resolution.
	now := time.Now().UTC().Truncate(time.Hour)
	rows, err := m.db.UsageReport(context.Background(), store.UsageQuery{From: now.Add(-time.Hour), To: now.Add(2 * time.Hour),
		GroupBy: []string{store.UsageByUpstream, store.UsageByRoute}})
	if err != nil {
		t.Fatal(err)
	}
	c480, _ := billing.SecondsCost(20_000, billing.SecondsToMicros(5))
	c720, _ := billing.SecondsCost(50_000, billing.SecondsToMicros(5))
	if len(rows) != 1 || rows[0].Upstream != "wan-main" || rows[0].CostCurrency != "USD" || rows[0].Cost != c480+c720 {
		t.Errorf("cost rows %+v, want one native row on wan-main costing %s USD", rows, c480+c720)
	}

	_, view := e.call("GET", "/v1/videos/"+id, "")
	for what, text := range map[string]string{"stdout": out.String(), "the logs": logs.String(), "the task view": string(view), "the metrics": e.metrics()} {
		if strings.Contains(text, dashscopeTestKey) {
			t.Errorf("the API key appears in %s", what)
		}
	}
}

// A create whose answer is lost after DashScope made the job is never repeated: DashScope has
// no idempotency key, and its task list shows a task from the create's time that nothing
// explains, so the task fails, refunded, with one upstream job made (the operator's possible
// loss). A create dropped before any job is made is found absent from the list, and created
// again until the task's attempts run out (then failed, refunded, no job).
func TestDashScopeLostCreateAnswersNeverMakeASecondJob(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "wan.mp4", 160, 90, 12, 5)
	for _, tc := range []struct {
		name string
		cfg  dashscopefake.Config
		jobs int
	}{
		{"job made, answer lost", dashscopefake.Config{Clip: clip, LoseAnswers: true}, 1},
		{"dropped before any job", dashscopefake.Config{Clip: clip, DropBeforeJob: true}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, fake, _ := dashscopeRig(t, tc.cfg, "--task-retry-max", "1s")
			id := e.create(`{"model":"demo-video-fast","prompt":"lost","metadata":{"ratio":"16:9","duration":5,"resolution":"480p"}}`)
			task := e.wait(id)
			if task.Status != "failed" || task.Error == nil || task.Error.Code != "video_generation_failed" {
				t.Fatalf("task ended %s %+v, want failed", task.Status, task.Error)
			}
			if used := e.used(); used != 0 {
				t.Errorf("charged %s for a failed task", used)
			}
			if n := fake.JobsFor("lost"); n != tc.jobs {
				t.Errorf("%d upstream jobs, want %d", n, tc.jobs)
			}
			if fake.Lists() == 0 {
				t.Error("the account's task list was never asked")
			}
			if err := e.m.db.CheckLedger(context.Background()); err != nil {
				t.Error(err)
			}
			// The job the lost create may have made is the operator's possible loss, recorded
			// as upstream excess on the account; a create that made nothing leaves none.
			want := map[string]string{}
			if tc.jobs > 0 {
				want[billing.ExcessLostCreate] = "wan-main"
			}
			recs := e.expectExcess(id, want)
			for _, r := range recs {
				if rec := e.task(id); r.Amount != rec.Reserved || r.Charged != 0 {
					t.Errorf("lost create excess %+v, want the task's reservation %s as the possible loss", r, rec.Reserved)
				}
			}
		})
	}
}

// Refusals end the task refunded with a sanitized message; a refused key, a rate limit with or
// without Retry-After and a job that never ends hold the task (no attempt spent on the
// account's trouble) until its deadline expires it, refunded, with at most one job.
func TestDashScopeRefusalsAndStuckAccountsEndRefunded(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "wan.mp4", 160, 90, 12, 5)
	for _, tc := range []struct {
		name, prompt, status string
		cfg                  dashscopefake.Config
		jobs                 int
		key                  string
	}{
		{"moderation refuses the prompt", "[refuse-input] p", "failed", dashscopefake.Config{}, 0, ""},
		{"moderation refuses the output", "p", "failed", dashscopefake.Config{End: func(string) string { return dashscopefake.EndRefuse }}, 1, ""},
		{"the task is canceled upstream", "p", "failed", dashscopefake.Config{End: func(string) string { return dashscopefake.EndCancel }}, 1, ""},
		{"the job never ends", "p", "expired", dashscopefake.Config{End: func(string) string { return dashscopefake.EndNever }}, 1, ""},
		{"429 with Retry-After", "p", "expired", dashscopefake.Config{RateLimit: true, RetryAfter: 1}, 0, ""},
		{"429 without Retry-After", "p", "expired", dashscopefake.Config{RateLimit: true}, 0, ""},
		{"the key is refused", "p", "expired", dashscopefake.Config{}, 0, "sk-revoked"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.cfg.Clip, tc.cfg.Key = clip, tc.key
			e, fake, _ := dashscopeRig(t, tc.cfg, "--task-deadline", "4s")
			id := e.create(`{"model":"demo-video-fast","prompt":"` + tc.prompt + `","metadata":{"ratio":"16:9","duration":5,"resolution":"480p"}}`)
			task := e.wait(id)
			if task.Status != tc.status || task.Error == nil || strings.Contains(task.Error.Message, "raw upstream") {
				t.Fatalf("task ended %s %+v, want %s with a sanitized error", task.Status, task.Error, tc.status)
			}
			if strings.Contains(tc.name, "moderation") && task.Error.Message != "The upstream declined to generate this content." {
				t.Errorf("message %q", task.Error.Message)
			}
			if used := e.used(); used != 0 {
				t.Errorf("charged %s", used)
			}
			if n := fake.JobsFor(tc.prompt); n != tc.jobs {
				t.Errorf("%d upstream jobs, want %d", n, tc.jobs)
			}
			if tc.key != "" {
				if fake.Refused() == 0 || sumSeries(e.metrics(), "mediagen_upstream_account_broken", `upstream="wan-main"`) != 1 {
					t.Errorf("refused calls %d; the account is not marked broken", fake.Refused())
				}
			}
			if err := e.m.db.CheckLedger(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

// A result link that has expired (DashScope's are valid 24 hours) is read again from a fresh
// task read: the task completes with its one job, charged as any other.
func TestDashScopeExpiredResultLinkIsReadAgain(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "wan.mp4", 160, 90, 12, 5)
	e, fake, _ := dashscopeRig(t, dashscopefake.Config{Clip: clip, ExpireFirst: 2})
	id := e.create(`{"model":"demo-video-fast","prompt":"stale link","metadata":{"duration":5,"resolution":"480p","ratio":"16:9"}}`)
	task := e.wait(id)
	if task.Status != "completed" || fake.JobsFor("stale link") != 1 {
		t.Fatalf("task %s %+v with %d jobs; want completed with one", task.Status, task.Error, fake.JobsFor("stale link"))
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

// DashScope returns a 60 s video for a 5 s request and reports usage.video_duration 60: the
// stored result is cut to the request, the charge stays within the reservation, what the
// upstream did beyond the request is the operator's, recorded as upstream excess (duration,
// and usage_over for the reported seconds), and the operator's cost is the 60 s billed.
func TestDashScopeVideoLongerThanTheRequestIsCutAndRecordedAsExcess(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "long.mp4", 832, 480, 24, 60)
	e, _, _ := dashscopeRig(t, dashscopefake.Config{Clip: clip, Seconds: 60})
	id := e.create(`{"model":"demo-video-fast","prompt":"a kite","metadata":{"duration":5,"resolution":"480p","ratio":"16:9"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task = %+v %+v", task, task.Error)
	}
	rec := e.task(id)
	if rec.Charged > rec.Reserved {
		t.Errorf("charged %s against a reservation of %s", rec.Charged, rec.Reserved)
	}
	_, info := e.download(task.Metadata.URL, "result.mp4")
	if info.Length() > 5.25 {
		t.Errorf("the stored result measures %v s, want it cut to at most 5.25 s", info.Length())
	}
	// Cut from 60 s, and usage.video_duration reported for all 60 s.
	e.expectExcess(id, map[string]string{billing.ExcessDuration: "wan-main", billing.ExcessUsageOver: "wan-main"})
	// The operator's cost is what DashScope bills: the 60 reported seconds at 480p.
	now := time.Now().UTC().Truncate(time.Hour)
	rows, err := e.m.db.UsageReport(context.Background(), store.UsageQuery{From: now.Add(-time.Hour), To: now.Add(2 * time.Hour),
		GroupBy: []string{store.UsageByUpstream}})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := billing.SecondsCost(20_000, billing.SecondsToMicros(60)); len(rows) != 1 || rows[0].Cost != want {
		t.Errorf("cost rows %+v, want %s USD for 60 s", rows, want)
	}
}

// TestDashScopeFaultsEndEveryTaskWithAtMostOneJobAndTheRightMoney runs 40 tasks
// (MEDIAGEN_FAULT_TASKS sets another number) through a fake DashScope failing 20% of its
// answers: creates refused with 500 or 429 before any job, creates that make the job and lose
// the answer (500, dropped connection), creates dropped before any job, polls answering 500,
// 429 without Retry-After, cut or non-JSON bodies, lists failing, result links handed out
// already expired. Every task ends; no task makes more than one upstream job (a completed one
// exactly one); a completed task is charged the tokens its stored video implies, every other
// one is refunded; the ledger balances.
func TestDashScopeFaultsEndEveryTaskWithAtMostOneJobAndTheRightMoney(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through a faulty fake upstream")
	}
	clip := colorClip(t, t.TempDir(), "wan.mp4", 160, 90, 12, 5)
	tasks := sizeFromEnv(t, "MEDIAGEN_FAULT_TASKS", 40)
	e, fake, logs := dashscopeRig(t, dashscopefake.Config{Clip: clip, FaultPercent: 20, Seed: 3}, "--workers", "4", "--task-retry-max", "2s", "--log-level", "warn")
	var ids []string
	for i := 0; i < tasks; i++ {
		ids = append(ids, e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"task %d","metadata":{"duration":5,"resolution":"480p","ratio":"16:9"}}`, i)))
	}
	tokens := billing.NativeTokens(160, 90, 12, 5)
	completed, failed := 0, 0
	for i, id := range ids {
		task := e.wait(id)
		n := fake.JobsFor(fmt.Sprintf("task %d", i))
		switch {
		case task.Status == "completed" && task.Usage != nil && task.Usage.CompletionTokens == tokens && n == 1:
			completed++
		case task.Status == "failed" && n <= 1:
			failed++
			t.Logf("task %d failed with %d upstream jobs; the service logged:\n%s", i, n, linesWith(logs.String(), id))
		default:
			t.Errorf("task %d (%s) ended %s %+v with %d upstream jobs", i, id, task.Status, task.Error, n)
		}
	}
	t.Logf("%d completed, %d failed; the fake made %d jobs, lost %d create answers, answered %d lists",
		completed, failed, fake.Jobs(), fake.LostAnswers(), fake.Lists())
	if completed == 0 {
		t.Error("no task completed")
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	tenant, _ := e.m.cat().Tenant("demo")
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got, want := e.used(), one*money.Micros(completed); got != want {
		t.Errorf("charged %s, want %s (%d completed × %s; failed ones refunded)", got, want, completed, one)
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}

// `admin upstream check` of a dashscope account reads a task with the account's key (a task id
// that does not exist answers UNKNOWN to a working key): OK with the key, FAILED with a wrong
// one, and no key in the output.
func TestAdminUpstreamCheckCallsDashScope(t *testing.T) {
	t.Parallel()
	fake := dashscopefake.Start(dashscopefake.Config{Key: dashscopeTestKey})
	t.Cleanup(fake.Close)
	cat := dashscopeCatalog(t, t.TempDir(), fake.Base())
	for _, tc := range []struct {
		name, key, want string
		fails           bool
	}{
		{"with its key", dashscopeTestKey, "wan-main (dashscope): OK, read a task with the account's key at " + fake.Base(), false},
		{"with a wrong key", "sk-wrong-key-2", "wan-main (dashscope): FAILED", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", cat, "wan-main"},
				env(map[string]string{"DASHSCOPE_TEST_KEY": tc.key}), &out, &errOut, fake.TLS())
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
		})
	}
}
