package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/minimax/minimaxfake"
	"mediagen/internal/store"
)

const minimaxTestKey = "mm-e2e-5f3a9c21d7"

// minimaxCatalog is the demo catalog with demo-video-fast bound to a minimax account at base
// (the extra lines added to the account) and its model set to Hailuo's.
func minimaxCatalog(t *testing.T, dir, base string, extra ...string) string {
	t.Helper()
	account := "  - name: minimax-main\n    kind: minimax\n    base_url: " + base + "\n    api_key_env: MINIMAX_TEST_KEY\n" + strings.Join(extra, "")
	path := demoCatalogWith(t, dir, account, map[string]string{"demo-video-fast": "minimax-main"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("model: sandbox-video-fast-2.0"), []byte("model: MiniMax-Hailuo-02"), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startMiniMax renders the fake's clip and starts the service on a fake MiniMax.
func startMiniMax(t *testing.T, cfg minimaxfake.Config, credit money.Micros, args ...string) (*e2e, *minimaxfake.Server, *syncBuffer) {
	t.Helper()
	tools := requireTools(t)
	dir := t.TempDir()
	cfg = renderedClip(t, tools, dir, cfg)
	fake := minimaxfake.Start(cfg)
	t.Cleanup(fake.Close)
	var logs syncBuffer
	m := NewMain(env(map[string]string{"MINIMAX_TEST_KEY": minimaxTestKey}), io.Discard, &logs)
	m.FetchTLS = fake.TLS()
	extra := ""
	for i := 0; i+1 < len(args); i++ {
		if args[i] == "--account-extra" {
			extra = args[i+1]
			args = append(args[:i:i], args[i+2:]...)
			break
		}
	}
	all := append([]string{"--fetch-allow", "loopback", "--log-level", "info", "--catalog", minimaxCatalog(t, t.TempDir(), fake.Base(), extra)}, args...)
	e := startRemote(t, m, dir, tools, credit, all...)
	return e, fake, &logs
}

// renderedClip gives cfg the test key when it has none, and a 6 s 320x180 clip rendered in
// dir when it has no clip.
func renderedClip(t *testing.T, tools ffmpeg.Tools, dir string, cfg minimaxfake.Config) minimaxfake.Config {
	t.Helper()
	if cfg.Clip == "" {
		cfg.Clip = filepath.Join(dir, "out.mp4")
		if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 6, Container: "mp4", Text: "hailuo"}, cfg.Clip); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.Key == "" {
		cfg.Key = minimaxTestKey
	}
	return cfg
}

// A native task on an alias bound to a minimax account runs through create, query and file
// retrieval on a fake that follows MiniMax's reference field by field: the result is copied
// into our storage and measured, the charge is the tokens of the measured video (MiniMax
// reports no usage), one upstream job per task, what Hailuo cannot make is refused at
// submission with nothing charged, and the key appears nowhere the service wrote.
func TestMiniMaxAccountRunsNativeTasksAndChargesTheMeasuredVideo(t *testing.T) {
	t.Parallel()
	frame := pngOf(t, 64, 36)
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(frame)
	}))
	t.Cleanup(cdn.Close)
	e, fake, logs := startMiniMax(t, minimaxfake.Config{Polls: 2}, 100*money.Scale)
	tenant, _ := e.m.cat().Tenant("demo")

	for _, tc := range []struct{ body, param string }{
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"1:1","duration":6}}`, "metadata.ratio"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":8}}`, "metadata.duration"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":6,"resolution":"480p"}}`, "metadata.resolution"},
		{`{"model":"demo-video-fast","prompt":"x","seed":7,"metadata":{"ratio":"16:9","duration":6}}`, "seed"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":6,"generate_audio":true}}`, "metadata.generate_audio"},
	} {
		if status, b := e.call("POST", "/v1/videos", tc.body); status != 400 || !bytes.Contains(b, []byte(`"param":"`+tc.param+`"`)) {
			t.Errorf("%s: %d %s; want 400 on %s", tc.body, status, b, tc.param)
		}
	}
	if used := e.used(); used != 0 {
		t.Fatalf("refused requests charged %s", used)
	}

	id := e.create(`{"model":"demo-video-fast","prompt":"a red kite","metadata":{"ratio":"16:9","duration":6,"resolution":"720p"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("native on minimax: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.URL, "hailuo.mp4")
	tokens := billing.NativeTokens(info.Width, info.Height, info.FPS, info.Duration)
	if info.Width != 320 || task.Usage == nil || task.Usage.CompletionTokens != tokens {
		t.Errorf("result %+v, usage %+v; want the measured tokens %d", info, task.Usage, tokens)
	}
	want, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got := e.used(); got != want {
		t.Errorf("charged %s, want %s", got, want)
	}
	if b := fake.Body("a red kite"); b["model"] != "MiniMax-Hailuo-02" || b["resolution"] != "768P" || b["duration"] != float64(6) {
		t.Errorf("create body %v", b)
	}

	ref := cdn.URL + "/frame.png"
	id2 := e.create(`{"model":"demo-video-fast","prompt":"from a frame","metadata":{"ratio":"adaptive","duration":10,"content":[{"type":"image_url","role":"first_frame","image_url":{"url":"` + ref + `"}}]}}`)
	if task := e.wait(id2); task.Status != "completed" {
		t.Fatalf("first frame on minimax: %+v %+v", task, task.Error)
	}
	if b := fake.Body("from a frame"); b["first_frame_image"] != ref || b["duration"] != float64(10) {
		t.Errorf("create body %v", b)
	}
	for _, p := range []string{"a red kite", "from a frame"} {
		if n := fake.JobsFor(p); n != 1 {
			t.Errorf("%q made %d upstream jobs", p, n)
		}
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	if strings.Contains(logs.String(), minimaxTestKey) {
		t.Error("the key is in the logs")
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}

// Each fault MiniMax shows ends its task right: refusals before any job (rate limit and
// balance on HTTP 200, a refused key) make the task wait, no job and nothing charged; a
// content refusal fails it refunded; a lost create answer ends it refunded with the possible
// job recorded as lost_create excess and never a second create; a job that never ends
// expires at the deadline; a result longer or larger (Hailuo's 768P for 720p) than asked is
// billed at the request, the rest recorded as the operator's excess.
func TestMiniMaxFaultsEndEachTaskRightWithAtMostOneJob(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	long := filepath.Join(t.TempDir(), "long.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 9, Container: "mp4", Text: "long"}, long); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "768p.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 1366, Height: 768, FPS: 24, Duration: 1, Container: "mp4", Text: "768P"}, big); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		cfg    minimaxfake.Config
		prompt string
		status string // the task's end
		jobs   int    // jobs the fake made for the task
		excess string // the upstream excess kind recorded ("" none)
		check  func(t *testing.T, fake *minimaxfake.Server)
	}{
		{name: "rate limit 1002 on HTTP 200 waits, then expires", cfg: minimaxfake.Config{RateLimit: true}, prompt: "limited", status: "expired",
			check: func(t *testing.T, f *minimaxfake.Server) {
				if f.RateLimited() < 2 {
					t.Errorf("%d creates rate-limited: a rate limit is retried, not a lost create", f.RateLimited())
				}
			}},
		{name: "HTTP 429 with Retry-After waits, then expires", cfg: minimaxfake.Config{RateLimitHTTP: 1}, prompt: "limited 429", status: "expired"},
		{name: "insufficient balance 1008 waits for the operator", cfg: minimaxfake.Config{Balance: true}, prompt: "no money", status: "queued"},
		{name: "a refused key (1004) waits for the operator", cfg: minimaxfake.Config{Key: "another-key"}, prompt: "bad key", status: "queued"},
		{name: "an input refusal (1026) fails refunded", prompt: "[sensitive-input] x", status: "failed"},
		{name: "an output refusal (1027) fails refunded", cfg: minimaxfake.Config{End: func(string) string { return minimaxfake.EndRefuse }}, prompt: "refused output", status: "failed", jobs: 1},
		{name: "a lost create answer ends the task, never a second job", cfg: minimaxfake.Config{LoseAnswers: true}, prompt: "lost", status: "failed", jobs: 1, excess: billing.ExcessLostCreate},
		{name: "a job that never ends expires", cfg: minimaxfake.Config{End: func(string) string { return minimaxfake.EndNever }}, prompt: "stuck", status: "expired", jobs: 1},
		{name: "garbage query answers are retried until the deadline", cfg: minimaxfake.Config{Garbage: true}, prompt: "garbage", status: "expired", jobs: 1},
		{name: "a longer result is cut and billed at the request", cfg: minimaxfake.Config{Clip: long}, prompt: "long", status: "completed", jobs: 1, excess: billing.ExcessDuration},
		{name: "Hailuo's 768P frame for a 720p request is billed at 720p", cfg: minimaxfake.Config{Clip: big}, prompt: "768P", status: "completed", jobs: 1, excess: billing.ExcessOverRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, fake, logs := startMiniMax(t, tc.cfg, 100*money.Scale, "--task-deadline", "4s", "--task-retry-max", "1s")
			id := e.create(`{"model":"demo-video-fast","prompt":"` + tc.prompt + `","metadata":{"ratio":"16:9","duration":6}}`)
			var task apiTask
			if tc.status == "queued" {
				// The account, not the task, is refused: the task waits for the operator (30 s
				// at a time, its attempts unspent) instead of failing or counting as lost.
				task = e.waitRefusedAndBack(id, fake.Refused)
			} else {
				task = e.wait(id)
			}
			if task.Status != tc.status {
				t.Fatalf("task ended %s %+v, want %s", task.Status, task.Error, tc.status)
			}
			if task.Error != nil && (strings.Contains(task.Error.Message, "sensitive") || strings.Contains(task.Error.Message, "minimax")) {
				t.Errorf("the upstream's text reaches the client: %+v", task.Error)
			}
			if n := fake.JobsFor(tc.prompt); n != tc.jobs {
				t.Errorf("%d upstream jobs, want %d", n, tc.jobs)
			}
			if tc.status != "completed" {
				if used := e.used(); used != 0 {
					t.Errorf("charged %s for a task that did not complete", used)
				}
			} else if _, info := e.download(task.Metadata.URL, "long.mp4"); info.Duration > 6.5 {
				t.Errorf("the stored result is %.2f s; want it cut to the request's 6 s", info.Duration)
			}
			ex, err := e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "minimax-main", Limit: 10})
			if err != nil {
				t.Fatal(err)
			}
			if tc.excess == "" && len(ex) != 0 || tc.excess != "" && (len(ex) != 1 || ex[0].Kind != tc.excess || ex[0].Ref != id) {
				t.Errorf("upstream excess %+v, want %q", ex, tc.excess)
			}
			if tc.excess == billing.ExcessLostCreate {
				if ex[0].Amount <= 0 || ex[0].Charged != 0 {
					t.Errorf("lost create excess %+v: the reservation is the operator's possible loss, the tenant pays nothing", ex[0])
				}
				if !strings.Contains(logs.String(), "cannot be asked") {
					t.Error("the lost create is not logged")
				}
			}
			if tc.check != nil {
				tc.check(t, fake)
			}
			for _, v := range fake.Violations() {
				t.Errorf("wire format: %s", v)
			}
			if err := e.m.db.CheckLedger(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

// `admin upstream check` proves a minimax account's key and base URL with one free call (a
// query of a task that does not exist: MiniMax answers a refused key with 1004, anything else
// proves the key), and reports a refused key as a failure that names no key.
func TestAdminUpstreamCheckQueriesAMiniMaxAccount(t *testing.T) {
	t.Parallel()
	fake := minimaxfake.Start(minimaxfake.Config{Key: minimaxTestKey})
	t.Cleanup(fake.Close)
	cat := minimaxCatalog(t, t.TempDir(), fake.Base())
	for _, tc := range []struct {
		name  string
		keys  map[string]string
		want  string
		fails bool
	}{
		{"with its key", map[string]string{"MINIMAX_TEST_KEY": minimaxTestKey}, "minimax-main (minimax): OK, queried a task", false},
		{"with a refused key", map[string]string{"MINIMAX_TEST_KEY": "mm-wrong-key-1"}, "minimax-main (minimax): FAILED", true},
		{"without a key", nil, "MINIMAX_TEST_KEY", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", cat, "minimax-main"}, env(tc.keys), &out, &errOut, fake.TLS())
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err != nil) != tc.fails || !strings.Contains(text, tc.want) {
				t.Errorf("check: %v\n%s; want %q", err, text, tc.want)
			}
			if strings.Contains(text, "mm-wrong-key-1") || strings.Contains(text, minimaxTestKey) {
				t.Errorf("a key is in the output: %s", text)
			}
		})
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("wire format: %v", v)
	}
}
