package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/provider/openai/openaifake"
	"mediagen/internal/store"
)

const openaiTestKey = "sk-openai-e2e-93b1f07c"

// openaiCatalog is the demo catalog with a native alias, the speech alias and a production
// alias bound to an openai account at base, the production's enhancement half on a local
// ffmpeg account.
func openaiCatalog(t *testing.T, dir, base string) string {
	t.Helper()
	accounts := "  - name: openai-main\n    kind: openai\n    base_url: " + base + "\n    api_key_env: OPENAI_TEST_KEY\n    voice: nova\n" +
		"    cost: {currency: USD, per_second: {720p: 0.1}, per_character: 0.000015}\n" +
		"  - name: local-enhance\n    kind: ffmpeg\n"
	return demoCatalogWith(t, dir, accounts, map[string]string{
		"demo-video-standard":      "openai-main",
		"demo-speech":              "openai-main",
		"demo-production-standard": "openai-main\n        enhance_upstream: local-enhance",
	})
}

// Every route and mode the openai kind supports runs through the real server on a fake
// OpenAI-compatible API: native text and first-frame videos, speech, and production
// (generated on openai, enhanced on ffmpeg). Results are copied, probed and billed from what
// was measured; requests the kind cannot serve are refused at submission with nothing
// charged; each task makes one upstream job; the key appears nowhere the service wrote.
func TestOpenAIAccountRunsEveryRouteItSupports(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	clip, voice := filepath.Join(dir, "out.mp4"), filepath.Join(dir, "speech.mp3")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 4, Container: "mp4", Audio: true, Text: "openai"}, clip); err != nil {
		t.Fatal(err)
	}
	if err := tools.Speak(context.Background(), "Hello from the fake", voice, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	fake := openaifake.Start(openaifake.Config{Key: openaiTestKey, Clip: clip, Speech: voice, Polls: 1})
	t.Cleanup(fake.Close)
	frame := pngOf(t, 64, 36)
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(frame)
	}))
	t.Cleanup(cdn.Close)

	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"OPENAI_TEST_KEY": openaiTestKey}), &out, &logs)
	m.FetchTLS = fake.TLS()
	m.FetchTLS.RootCAs.AddCert(cdn.Certificate())
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "debug", "--catalog", openaiCatalog(t, t.TempDir(), fake.Base()))
	tenant, _ := m.cat().Tenant("demo")

	// What the kind cannot do is refused at submission, naming the field; nothing is charged.
	for _, tc := range []struct{ body, param string }{
		{`{"model":"demo-video-standard","prompt":"x","metadata":{"ratio":"1:1","duration":4}}`, "metadata.ratio"},
		{`{"model":"demo-video-standard","prompt":"x","metadata":{"ratio":"16:9","duration":5}}`, "metadata.duration"},
		{`{"model":"demo-video-standard","prompt":"x","metadata":{"ratio":"16:9","duration":4,"resolution":"1080p"}}`, "metadata.resolution"},
		{`{"model":"demo-video-standard","prompt":"x","seed":7,"metadata":{"ratio":"16:9","duration":4}}`, "seed"},
		{`{"model":"demo-video-standard","prompt":"x","metadata":{"ratio":"16:9","duration":4,"generate_audio":false}}`, "metadata.generate_audio"},
	} {
		if status, b := e.call("POST", "/v1/videos", tc.body); status != 400 || !bytes.Contains(b, []byte(`"param":"`+tc.param+`"`)) {
			t.Errorf("%s: %d %s; want 400 on %s", tc.body, status, b, tc.param)
		}
	}
	e.speechError(`{"model":"demo-speech","input":"x","metadata":{"references":[{"type":"audio_url","url":"https://cdn.example.com/v.mp3"}]}}`, 400, "invalid_request_error")
	if used := e.used(); used != 0 {
		t.Fatalf("refused requests charged %s", used)
	}

	// Native, text mode: the result is the upstream's content, copied and measured; the
	// charge is the tokens of the measured video (the API reports no usage).
	id := e.create(`{"model":"demo-video-standard","prompt":"a red kite","metadata":{"ratio":"16:9","duration":4}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("native on openai: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.URL, "openai.mp4")
	tokens := billing.NativeTokens(info.Width, info.Height, info.FPS, info.Duration)
	if info.Width != 320 || task.Usage == nil || task.Usage.CompletionTokens != tokens {
		t.Errorf("native result %+v, usage %+v; want the measured tokens %d", info, task.Usage, tokens)
	}
	want, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-standard")), tokens)
	if got := e.used(); got != want {
		t.Errorf("charged %s, want %s", got, want)
	}

	// Native, first frame from the client's URL (ratio adaptive): the API takes a reference
	// only at the output size, so the 64x36 image is fitted to 1280x720 and uploaded.
	ref := cdn.URL + "/frame.png"
	id2 := e.create(`{"model":"demo-video-standard","prompt":"from a frame","metadata":{"duration":8,"content":[{"type":"image_url","role":"first_frame","image_url":{"url":"` + ref + `"}}]}}`)
	if task := e.wait(id2); task.Status != "completed" {
		t.Fatalf("first frame on openai: %+v %+v", task, task.Error)
	}
	var form map[string]string
	for _, f := range fake.Forms() {
		if f["prompt"] == "from a frame" {
			form = f
		}
	}
	if form["input_reference"] != "png 1280x720" || form["size"] != "1280x720" || form["seconds"] != "8" || form["model"] == "" {
		t.Errorf("create form %v", form)
	}

	// Speech: input, instructions and the account's voice; billed by the measured seconds.
	before := e.used()
	s := e.speech(`{"model":"demo-speech","input":"Hello there","instructions":"warmly"}`)
	if s.Duration <= 0 {
		t.Fatalf("speech on openai: %+v", s)
	}
	sp := fake.Speeches()
	if len(sp) != 1 || sp[0]["input"] != "Hello there" || sp[0]["instructions"] != "warmly" || sp[0]["voice"] != "nova" {
		t.Errorf("speech bodies %v", sp)
	}
	if want, _ := billing.SecondsCost(rate(tenant.Rates.SpeechRate()), billing.SecondsToMicros(s.Duration)); e.used()-before != want {
		t.Errorf("speech charged %s, want %s for %.3f s", e.used()-before, want, s.Duration)
	}

	// Production: generated on openai at the alias's 720p, enhanced to 1080p on ffmpeg.
	before = e.used()
	id3 := e.create(`{"model":"demo-production-standard","prompt":"a city at dusk","metadata":{"ratio":"16:9","duration":4,"resolution":"1080p"}}`)
	ptask := e.wait(id3)
	if ptask.Status != "completed" {
		t.Fatalf("production on openai + ffmpeg: %+v %+v", ptask, ptask.Error)
	}
	_, pinfo := e.download(ptask.Metadata.URL, "production.mp4")
	if pinfo.Height != 1080 || !near(pinfo.Duration, 4, 0.1) {
		t.Errorf("production result %+v, want 1080p of the 4 s generation", pinfo)
	}
	pq := billing.Quote{Route: "production", Rate: rate(tenant.Rates.ProductionRate("standard", "1080p", false))}
	if want, _ := billing.SettleAmount(pq, billing.Measured{OutputSeconds: pinfo.Duration}); e.used()-before != want {
		t.Errorf("production charged %s, want %s", e.used()-before, want)
	}

	// The operator's cost from the account's cost block: seconds at 720p (the API reports no
	// tokens) for the native tasks (the fake serves the same clip for both) and production's
	// generation half, characters for speech.
	now := time.Now().UTC().Truncate(time.Hour)
	rows, err := m.db.UsageReport(context.Background(), store.UsageQuery{From: now.Add(-time.Hour), To: now.Add(2 * time.Hour),
		GroupBy: []string{store.UsageByUpstream, store.UsageByRoute}})
	if err != nil {
		t.Fatal(err)
	}
	perSecond := func(secs float64) money.Micros {
		c, _ := billing.SecondsCost(100_000, billing.SecondsToMicros(secs))
		return c
	}
	for _, r := range rows {
		want := map[string]money.Micros{"native": 2 * perSecond(info.Duration), "production": perSecond(pinfo.Duration), "speech": money.Micros(15 * r.Characters)}[r.Route]
		if r.Upstream != "openai-main" || r.CostCurrency != "USD" || r.Cost != want || r.Count == 0 {
			t.Errorf("cost row %s/%s: %s %q over %d, want %s USD", r.Upstream, r.Route, r.Cost, r.CostCurrency, r.Count, want)
		}
	}
	if len(rows) != 3 {
		t.Errorf("cost rows %+v, want native, production and speech", rows)
	}

	for _, id := range []string{id, id2, id3} {
		if n := fake.JobsFor(id + ":gen"); n != 1 {
			t.Errorf("task %s made %d upstream jobs", id, n)
		}
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	_, view := e.call("GET", "/v1/videos/"+id, "")
	for what, text := range map[string]string{"stdout": out.String(), "the logs": logs.String(), "the task view": string(view), "the metrics": e.metrics()} {
		if strings.Contains(text, openaiTestKey) {
			t.Errorf("the API key appears in %s", what)
		}
		if strings.Contains(text, fake.Base()) && what == "the task view" {
			t.Errorf("the upstream's URL reached the client")
		}
	}
	_ = filepath.Walk(filepath.Join(dir, "data"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(openaiTestKey)) {
			t.Errorf("the API key is in %s", p)
		}
		return nil
	})
}

// `admin upstream check` proves a remote account's key and base URL with one authenticated
// call, and says so; a wrong key is reported as a failure that names neither key.
func TestAdminUpstreamCheckCallsRemoteAccounts(t *testing.T) {
	t.Parallel()
	ark := arkfake.Start(arkfake.Config{Key: arkTestKey})
	t.Cleanup(ark.Close)
	oa := openaifake.Start(openaifake.Config{Key: openaiTestKey})
	t.Cleanup(oa.Close)
	roots := ark.TLS()
	roots.RootCAs.AddCert(oa.Certificate())
	accounts := "  - name: ark-main\n    kind: ark\n    base_url: " + ark.Base() + "\n    api_key_env: ARK_TEST_KEY\n" +
		"  - name: openai-main\n    kind: openai\n    base_url: " + oa.Base() + "\n    api_key_env: OPENAI_TEST_KEY\n"
	cat := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{"demo-video-fast": "ark-main", "demo-speech": "openai-main"})
	for _, tc := range []struct {
		name, account string
		keys          map[string]string
		want          string
		fails         bool
	}{
		{"ark with its key", "ark-main", map[string]string{"ARK_TEST_KEY": arkTestKey}, "ark-main (ark): OK, listed tasks", false},
		{"openai with its key", "openai-main", map[string]string{"OPENAI_TEST_KEY": openaiTestKey}, "openai-main (openai): OK, listed models", false},
		{"ark with a wrong key", "ark-main", map[string]string{"ARK_TEST_KEY": "sk-wrong-key-1"}, "ark-main (ark): FAILED", true},
		{"openai without a key", "openai-main", nil, "OPENAI_TEST_KEY", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", cat, tc.account}, env(tc.keys), &out, &errOut, roots)
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err != nil) != tc.fails || !strings.Contains(text, tc.want) {
				t.Errorf("check %s: %v\n%s; want %q", tc.account, err, text, tc.want)
			}
			if strings.Contains(text, "sk-wrong-key-1") || strings.Contains(text, arkTestKey) || strings.Contains(text, openaiTestKey) {
				t.Errorf("a key is in the output: %s", text)
			}
		})
	}
}

// Under 30% faults on a server that honours Idempotency-Key (5xx and 429 on every call,
// malformed polls, failed downloads, creates whose answer is lost after the job was made),
// every task ends with exactly one upstream job and the right money. 60 tasks
// (MEDIAGEN_FAULT_TASKS sets another number; `make soak` runs 200).
func TestOpenAIFaultsEndEveryTaskWithOneJob(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through a faulty fake upstream")
	}
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 4, Container: "mp4", Text: "f"}, clip); err != nil {
		t.Fatal(err)
	}
	fake := openaifake.Start(openaifake.Config{Key: openaiTestKey, Clip: clip, Speech: clip, FaultPercent: 30, Seed: 5, HonorIdempotency: true})
	t.Cleanup(fake.Close)
	m := NewMain(env(map[string]string{"OPENAI_TEST_KEY": openaiTestKey}), io.Discard, io.Discard)
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "error", "--workers", "8", "--task-retry-max", "2s", "--catalog", openaiCatalog(t, t.TempDir(), fake.Base()))
	tasks := sizeFromEnv(t, "MEDIAGEN_FAULT_TASKS", 60)
	var ids []string
	for i := range tasks {
		ids = append(ids, e.create(fmt.Sprintf(`{"model":"demo-video-standard","prompt":"task %d","metadata":{"ratio":"16:9","duration":4}}`, i)))
	}
	completed := 0
	var want money.Micros
	tenant, _ := m.cat().Tenant("demo")
	for _, id := range ids {
		task := e.wait(id)
		switch task.Status {
		case "completed":
			completed++
			c, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-standard")), task.Usage.CompletionTokens)
			want += c
		case "failed":
			t.Logf("task %s failed after its attempts: %+v", id, task.Error)
		default:
			t.Errorf("task %s ended %s", id, task.Status)
		}
		if n := fake.JobsFor(id + ":gen"); n > 1 || (task.Status == "completed" && n != 1) {
			t.Errorf("task %s (%s) made %d upstream jobs", id, task.Status, n)
		}
	}
	t.Logf("%d of %d completed; %d create answers lost", completed, tasks, fake.LostAnswers())
	if completed < tasks*9/10 || fake.LostAnswers() == 0 {
		t.Errorf("%d of %d completed, %d lost answers", completed, tasks, fake.LostAnswers())
	}
	if got := e.used(); got != want {
		t.Errorf("charged %s, want %s", got, want)
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
