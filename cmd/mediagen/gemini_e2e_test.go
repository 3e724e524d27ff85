package main

import (
	"bytes"
	"context"
	"encoding/base64"
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
	"mediagen/internal/provider/gemini/geminifake"
	"mediagen/internal/store"
)

const geminiTestKey = "gm-e2e-8c1f0b7a92"

// geminiCatalog is the demo catalog with demo-video-fast bound to a gemini account at base
// and its model set to Veo 3.
func geminiCatalog(t *testing.T, dir, base string) string {
	t.Helper()
	account := "  - name: veo-main\n    kind: gemini\n    base_url: " + base + "\n    api_key_env: GEMINI_TEST_KEY\n"
	path := demoCatalogWith(t, dir, account, map[string]string{"demo-video-fast": "veo-main"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("model: sandbox-video-fast-2.0"), []byte("model: veo-3.0-generate-001"), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// startGemini renders the fake's clip (8 s 320x180, Veo 3's length) when it has none and
// starts the service on a fake Gemini API.
func startGemini(t *testing.T, cfg geminifake.Config, credit money.Micros, args ...string) (*e2e, *geminifake.Server, *syncBuffer) {
	t.Helper()
	return startGeminiWith(t, cfg, credit, func(base string) string { return geminiCatalog(t, t.TempDir(), base) }, args...)
}

// startGeminiWith is startGemini with the catalog written by catalogFor from the fake's base.
func startGeminiWith(t *testing.T, cfg geminifake.Config, credit money.Micros, catalogFor func(base string) string, args ...string) (*e2e, *geminifake.Server, *syncBuffer) {
	t.Helper()
	tools := requireTools(t)
	dir := t.TempDir()
	if cfg.Clip == "" {
		cfg.Clip = filepath.Join(dir, "out.mp4")
		if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 8, Container: "mp4", Text: "veo"}, cfg.Clip); err != nil {
			t.Fatal(err)
		}
	}
	if cfg.Key == "" {
		cfg.Key = geminiTestKey
	}
	fake := geminifake.Start(cfg)
	t.Cleanup(fake.Close)
	var logs syncBuffer
	m := NewMain(env(map[string]string{"GEMINI_TEST_KEY": geminiTestKey}), io.Discard, &logs)
	m.FetchTLS = fake.TLS()
	all := append([]string{"--fetch-allow", "loopback", "--log-level", "info", "--catalog", catalogFor(fake.Base())}, args...)
	e := startRemote(t, m, dir, tools, credit, all...)
	return e, fake, &logs
}

// A native task on an alias bound to a gemini account runs through predictLongRunning, the
// operation's polling and the keyed download on a fake the official SDK drives: the result
// is copied into our storage and measured, the charge is the tokens of the measured video,
// one upstream job per task, a first frame goes inline as base64, what Veo 3 cannot make is
// refused at submission with nothing charged, and the key appears nowhere the service wrote.
func TestGeminiAccountRunsNativeTasksAndChargesTheMeasuredVideo(t *testing.T) {
	t.Parallel()
	frame := pngOf(t, 64, 36)
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(frame)
	}))
	t.Cleanup(cdn.Close)
	e, fake, logs := startGemini(t, geminifake.Config{Polls: 2}, 100*money.Scale)
	tenant, _ := e.m.cat().Tenant("demo")

	for _, tc := range []struct{ body, param string }{
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"1:1","duration":8}}`, "metadata.ratio"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":5}}`, "metadata.duration"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":8,"resolution":"480p"}}`, "metadata.resolution"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"9:16","duration":8,"resolution":"1080p"}}`, "metadata.resolution"},
		{`{"model":"demo-video-fast","prompt":"x","seed":7,"metadata":{"ratio":"16:9","duration":8}}`, "seed"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":8,"generate_audio":false}}`, "metadata.generate_audio"},
	} {
		if status, b := e.call("POST", "/v1/videos", tc.body); status != 400 || !bytes.Contains(b, []byte(`"param":"`+tc.param+`"`)) {
			t.Errorf("%s: %d %s; want 400 on %s", tc.body, status, b, tc.param)
		}
	}
	if used := e.used(); used != 0 {
		t.Fatalf("refused requests charged %s", used)
	}

	id := e.create(`{"model":"demo-video-fast","prompt":"a red kite","metadata":{"ratio":"16:9","duration":8,"resolution":"720p"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("native on gemini: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.URL, "veo.mp4")
	tokens := billing.NativeTokens(info.Width, info.Height, info.FPS, info.Duration)
	if info.Width != 320 || task.Usage == nil || task.Usage.CompletionTokens != tokens {
		t.Errorf("result %+v, usage %+v; want the measured tokens %d", info, task.Usage, tokens)
	}
	want, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got := e.used(); got != want {
		t.Errorf("charged %s, want %s", got, want)
	}
	p, _ := fake.Body("a red kite")["parameters"].(map[string]any)
	if p["resolution"] != "720p" || p["aspectRatio"] != "16:9" || p["durationSeconds"] != float64(8) || p["sampleCount"] != float64(1) {
		t.Errorf("create parameters %v", p)
	}

	id2 := e.create(`{"model":"demo-video-fast","prompt":"from a frame","metadata":{"ratio":"adaptive","duration":8,"content":[{"type":"image_url","role":"first_frame","image_url":{"url":"` + cdn.URL + `/frame.png"}}]}}`)
	if task := e.wait(id2); task.Status != "completed" {
		t.Fatalf("first frame on gemini: %+v %+v", task, task.Error)
	}
	b := fake.Body("from a frame")
	in, _ := b["instances"].([]any)
	if len(in) != 1 {
		t.Fatalf("create body %v", b)
	}
	img, _ := in[0].(map[string]any)["image"].(map[string]any)
	if img["bytesBase64Encoded"] != base64.StdEncoding.EncodeToString(frame) || img["mimeType"] != "image/png" {
		t.Errorf("first frame sent as %v", img)
	}
	for _, p := range []string{"a red kite", "from a frame"} {
		if n := fake.JobsFor(p); n != 1 {
			t.Errorf("%q made %d upstream jobs", p, n)
		}
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	if strings.Contains(logs.String(), geminiTestKey) {
		t.Error("the key is in the logs")
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}

// Each fault the Gemini API shows ends its task right: a refused key makes the task wait for
// the operator, no job; a 429 (with or without Retry-After) is retried, never a lost create;
// the safety filter or a failed operation fails it refunded; a lost create answer ends it
// refunded with the possible job recorded as lost_create excess and never a second create; an
// operation that never ends, or answers garbage, expires at the deadline; a result longer or
// larger than asked is billed at the request, the rest recorded as the operator's excess.
func TestGeminiFaultsEndEachTaskRightWithAtMostOneJob(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	long := filepath.Join(t.TempDir(), "long.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 11, Container: "mp4", Text: "long"}, long); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(t.TempDir(), "1080p.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 1920, Height: 1080, FPS: 24, Duration: 1, Container: "mp4", Text: "1080p"}, big); err != nil {
		t.Fatal(err)
	}
	end := func(e string) func(string) string { return func(string) string { return e } }
	for _, tc := range []struct {
		name   string
		cfg    geminifake.Config
		prompt string
		status string // the task's end
		jobs   int    // jobs the fake made for the task
		excess string // the upstream excess kind recorded ("" none)
		check  func(t *testing.T, fake *geminifake.Server)
	}{
		{name: "429 with Retry-After waits, then expires", cfg: geminifake.Config{RateLimit: true, RetryAfterSecs: 1}, prompt: "limited", status: "expired"},
		{name: "429 without Retry-After is retried, then expires", cfg: geminifake.Config{RateLimit: true}, prompt: "limited bare", status: "expired",
			check: func(t *testing.T, f *geminifake.Server) {
				if f.RateLimited() < 2 {
					t.Errorf("%d creates rate-limited: a rate limit is retried, not a lost create", f.RateLimited())
				}
			}},
		{name: "a refused key (403) waits for the operator", cfg: geminifake.Config{Key: "another-key"}, prompt: "bad key", status: "queued"},
		{name: "the safety filter fails it refunded", cfg: geminifake.Config{End: end(geminifake.EndRefuse)}, prompt: "filtered", status: "failed", jobs: 1},
		{name: "a failed operation fails it refunded", cfg: geminifake.Config{End: end(geminifake.EndFail)}, prompt: "failed op", status: "failed", jobs: 1},
		{name: "a lost create answer ends the task, never a second job", cfg: geminifake.Config{LoseAnswers: true}, prompt: "lost", status: "failed", jobs: 1, excess: billing.ExcessLostCreate},
		{name: "an operation that never ends expires", cfg: geminifake.Config{End: end(geminifake.EndNever)}, prompt: "stuck", status: "expired", jobs: 1},
		{name: "garbage operation answers are retried until the deadline", cfg: geminifake.Config{Garbage: true}, prompt: "garbage", status: "expired", jobs: 1},
		{name: "a video whose first download fails is read again", cfg: geminifake.Config{ExpireFirst: true}, prompt: "expired", status: "completed", jobs: 1},
		{name: "a longer result is cut and billed at the request", cfg: geminifake.Config{Clip: long}, prompt: "long", status: "completed", jobs: 1, excess: billing.ExcessDuration},
		{name: "a 1080p result for a 720p request is billed at 720p", cfg: geminifake.Config{Clip: big}, prompt: "big", status: "completed", jobs: 1, excess: billing.ExcessOverRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, fake, logs := startGemini(t, tc.cfg, 100*money.Scale, "--task-deadline", "4s", "--task-retry-max", "1s")
			id := e.create(`{"model":"demo-video-fast","prompt":"` + tc.prompt + `","metadata":{"ratio":"16:9","duration":8,"resolution":"720p"}}`)
			var task apiTask
			if tc.status == "queued" {
				task = e.waitRefusedAndBack(id, fake.Refused)
			} else {
				task = e.wait(id)
			}
			if task.Status != tc.status {
				t.Fatalf("task ended %s %+v, want %s", task.Status, task.Error, tc.status)
			}
			if task.Error != nil && (strings.Contains(task.Error.Message, "filtered") || strings.Contains(task.Error.Message, "gemini")) {
				t.Errorf("the upstream's text reaches the client: %+v", task.Error)
			}
			if n := fake.JobsFor(tc.prompt); n != tc.jobs {
				t.Errorf("%d upstream jobs, want %d", n, tc.jobs)
			}
			if tc.status != "completed" {
				if used := e.used(); used != 0 {
					t.Errorf("charged %s for a task that did not complete", used)
				}
			} else if _, info := e.download(task.Metadata.URL, "r.mp4"); info.Duration > 8.5 {
				t.Errorf("the stored result is %.2f s; want it cut to the request's 8 s", info.Duration)
			}
			ex, err := e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "veo-main", Limit: 10})
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

// `admin upstream check` proves a gemini account's key and base URL with one free call (a
// read of an operation no job has: a 404 proves the key, a 403 refuses it), and reports a
// refused key as a failure that names no key.
func TestAdminUpstreamCheckReadsAGeminiOperation(t *testing.T) {
	t.Parallel()
	fake := geminifake.Start(geminifake.Config{Key: geminiTestKey})
	t.Cleanup(fake.Close)
	cat := geminiCatalog(t, t.TempDir(), fake.Base())
	for _, tc := range []struct {
		name  string
		keys  map[string]string
		want  string
		fails bool
	}{
		{"with its key", map[string]string{"GEMINI_TEST_KEY": geminiTestKey}, "veo-main (gemini): OK, read an operation", false},
		{"with a refused key", map[string]string{"GEMINI_TEST_KEY": "gm-wrong-key-1"}, "veo-main (gemini): FAILED", true},
		{"without a key", nil, "GEMINI_TEST_KEY", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", cat, "veo-main"}, env(tc.keys), &out, &errOut, fake.TLS())
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err != nil) != tc.fails || !strings.Contains(text, tc.want) {
				t.Errorf("check: %v\n%s; want %q", err, text, tc.want)
			}
			if strings.Contains(text, "gm-wrong-key-1") || strings.Contains(text, geminiTestKey) {
				t.Errorf("a key is in the output: %s", text)
			}
		})
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("wire format: %v", v)
	}
	if fake.Jobs() != 0 {
		t.Error("the check made a job")
	}
}
