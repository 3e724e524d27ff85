package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
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

const arkTestKey = "sk-ark-e2e-7f3c9a1d5b"

// arkCatalog is the demo catalog with demo-video-fast bound to an ark account at base; extra
// lines (indented as the account's fields) are added to the account.
func arkCatalog(t *testing.T, dir, base string, extra ...string) string {
	t.Helper()
	account := "  - name: ark-main\n    kind: ark\n    base_url: " + base + "\n    api_key_env: ARK_TEST_KEY\n" + strings.Join(extra, "")
	return demoCatalogWith(t, dir, account, map[string]string{"demo-video-fast": "ark-main"})
}

// A native task on an alias bound to an Ark account runs through the Ark API (a fake that
// checks the key and serves a real MP4 as the task's result): the result is copied into our
// storage and measured, the charge is the upstream's reported tokens × the rate, one
// upstream job is made, and the key appears nowhere the service wrote.
func TestArkAccountRunsANativeTaskAndTheKeyStaysSecret(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 2, Container: "mp4", Audio: true, Text: "ark"}, clip); err != nil {
		t.Fatal(err)
	}
	var creates, polls atomic.Int64
	var srvURL string
	var bodies sync.Map // prompt → create body
	frame := pngOf(t, 64, 36)
	fake := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/files/out.mp4" {
			http.ServeFile(w, r, clip) // the upstream's temporary result URL: no key needed
			return
		}
		if r.URL.Path == "/files/frame.png" { // a client's reference image, on its own CDN
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(frame)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+arkTestKey {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == "POST" && r.URL.Path == "/api/v3/contents/generations/tasks":
			creates.Add(1)
			b, _ := io.ReadAll(r.Body)
			if !bytes.Contains(b, []byte(`"model":"sandbox-video-fast-2.0"`)) {
				t.Errorf("create body %s", b)
			}
			var body struct {
				Content []struct {
					Text string `json:"text"`
				} `json:"content"`
			}
			_ = json.Unmarshal(b, &body)
			if len(body.Content) > 0 {
				bodies.Store(body.Content[0].Text, string(b))
			}
			_, _ = io.WriteString(w, `{"id":"cgt-e2e"}`)
		case r.Method == "GET" && r.URL.Path == "/api/v3/contents/generations/tasks/cgt-e2e":
			if polls.Add(1) == 1 {
				_, _ = io.WriteString(w, `{"id":"cgt-e2e","status":"running"}`)
				return
			}
			_, _ = io.WriteString(w, `{"id":"cgt-e2e","status":"succeeded","content":{"video_url":"`+srvURL+`/files/out.mp4"},"usage":{"completion_tokens":2690}}`)
		default:
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	t.Cleanup(fake.Close)
	srvURL = fake.URL
	roots := &tls.Config{RootCAs: fake.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	catPath := arkCatalog(t, t.TempDir(), fake.URL+"/api/v3")

	// Without --public-url, serve does not start: Ark could not reach asset links.
	mp := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), io.Discard, io.Discard)
	if err := mp.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--catalog", catPath}); err != nil {
		t.Fatal(err)
	}
	err := mp.Run(context.Background())
	_ = mp.Close()
	if err == nil || !strings.Contains(err.Error(), "--public-url") || !strings.Contains(err.Error(), "ark-main") {
		t.Fatalf("serve without --public-url: %v", err)
	}

	// Without the key, serve does not start, and says which account and variable.
	m0 := NewMain(env(nil), io.Discard, io.Discard)
	if err := m0.ParseFlags([]string{"--listen", "127.0.0.1:0", "--public-url", "https://mediagen.example.com", "--data-dir", t.TempDir(), "--catalog", catPath}); err != nil {
		t.Fatal(err)
	}
	err = m0.Run(context.Background())
	_ = m0.Close()
	if err == nil || !strings.Contains(err.Error(), "ark-main") || !strings.Contains(err.Error(), "ARK_TEST_KEY") {
		t.Fatalf("serve without the key: %v; want it refused naming the account and the variable", err)
	}

	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), &out, &logs)
	m.FetchTLS = roots
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "debug", "--catalog", catPath)

	// A request the contract allows but Ark cannot serve is refused at submission.
	if status, b := e.call("POST", "/v1/videos", `{"model":"demo-video-fast","prompt":"x","metadata":{"output_format":"mov"}}`); status != 400 ||
		!bytes.Contains(b, []byte(`"param":"metadata.output_format"`)) {
		t.Errorf("mov on ark: %d %s; want 400 on metadata.output_format", status, b)
	}
	id := e.create(`{"model":"demo-video-fast","prompt":"a red kite","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`)
	task := e.wait(id)
	// The upstream reports 2690 tokens, a little under the 2700 its 2 s 320x180 video implies:
	// the charge never falls below what the stored result implies (docs/billing.md), and a
	// shortfall within 1% is an honest count's rounding, not recorded as excess.
	const measured = 2700
	if task.Status != "completed" || task.Usage == nil || task.Usage.CompletionTokens != measured {
		t.Fatalf("task on the ark account: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.URL, "ark.mp4")
	if info.Width != 320 || info.Height != 180 || !near(info.Duration, 2, 0.05) {
		t.Errorf("the copied result measures %+v", info)
	}
	tenant, _ := m.cat().Tenant("demo")
	want, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), measured)
	if got := e.used(); got != want {
		t.Errorf("charged %s, want %s for the %d tokens the video implies", got, want, measured)
	}
	if n := creates.Load(); n != 1 {
		t.Errorf("%d upstream jobs for one task", n)
	}
	if b, _ := bodies.Load("a red kite"); !strings.Contains(b.(string), `"ratio":"16:9"`) || !strings.Contains(b.(string), `"duration":4`) {
		t.Errorf("create body %v", b)
	}

	// A client's reference URL goes to Ark as it is, with its role.
	ref := fake.URL + "/files/frame.png"
	polls.Store(0)
	id2 := e.create(`{"model":"demo-video-fast","prompt":"from a first frame","metadata":{"duration":4,"resolution":"480p","content":[{"type":"image_url","role":"first_frame","image_url":{"url":"` + ref + `"}}]}}`)
	if task := e.wait(id2); task.Status != "completed" {
		t.Fatalf("task with a reference: %+v %+v", task, task.Error)
	}
	b, _ := bodies.Load("from a first frame")
	if want := `{"image_url":{"url":"` + ref + `"},"role":"first_frame","type":"image_url"}`; b == nil || !strings.Contains(canonicalJSON(t, b.(string)), want) {
		t.Errorf("create body %v; want the item %s", b, want)
	}
	if strings.Contains(task.Metadata.URL, fake.URL) {
		t.Errorf("the upstream's URL reached the client: %s", task.Metadata.URL)
	}
	_, view := e.call("GET", "/v1/videos/"+id, "")
	for what, text := range map[string]string{"stdout": out.String(), "the logs": logs.String(), "the task view": string(view), "the metrics": e.metrics()} {
		if strings.Contains(text, arkTestKey) {
			t.Errorf("the API key appears in %s", what)
		}
	}
	// Nor in any file the service wrote: the database, its WAL, stored results, job files.
	_ = filepath.Walk(filepath.Join(dir, "data"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(arkTestKey)) {
			t.Errorf("the API key is in %s", p)
		}
		return nil
	})
}

// canonicalJSON re-encodes a JSON document with sorted object keys.
func canonicalJSON(t *testing.T, s string) string {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("%v: %s", err, s)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every route and mode the ark kind supports runs through the real server on the fake Ark
// (arkfake, which checks each create's fields and roles): native text, first and last frame,
// multimodal reference (image, video and audio, with omni_reference_task_type), and
// production generated on Ark and enhanced on a local ffmpeg account. Each result is copied
// and probed, each task makes one upstream job, and the charges follow the upstream's usage
// (native) and the measured output (production).
func TestArkAccountRunsEveryRouteAndModeItSupports(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	media := filepath.Join(dir, "media")
	if err := os.Mkdir(media, 0o755); err != nil {
		t.Fatal(err)
	}
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 5, Container: "mp4", Audio: true, Text: "ark"}, clip); err != nil {
		t.Fatal(err)
	}
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 3, Container: "mp4", Text: "ref"}, filepath.Join(media, "ref.mp4")); err != nil {
		t.Fatal(err)
	}
	if err := tools.Speak(context.Background(), "a reference voice", filepath.Join(media, "ref.mp3"), ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(media, "frame.png"), pngOf(t, 64, 36), 0o644); err != nil {
		t.Fatal(err)
	}
	// The clip measures 320×180×24×5/1024 = 6750 tokens; the upstream reports a little less
	// (billed the 6750 the stored video implies: the floor, docs/billing.md), except for one
	// task whose usage is ten times the video (a fault of its accounting).
	const reported, tokens, inflated = 6700, 6750, 67500
	fake := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: reported, TokensFor: func(prompt string) int64 {
		if prompt == "inflated usage" {
			return inflated
		}
		return 0
	}})
	t.Cleanup(fake.Close)
	cdn := httptest.NewTLSServer(http.FileServer(http.Dir(media)))
	t.Cleanup(cdn.Close)

	accounts := "  - name: ark-main\n    kind: ark\n    base_url: " + fake.Base() + "\n    api_key_env: ARK_TEST_KEY\n    result_hosts: [127.0.0.1]\n" +
		"    cost: {currency: USD, per_million_tokens: 0.5, per_second: {720p: 0.01}}\n" +
		"  - name: local-enhance\n    kind: ffmpeg\n"
	catPath := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{
		"demo-video-2.5":      "ark-main",
		"demo-production-pro": "ark-main\n        enhance_upstream: local-enhance",
	})
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), io.Discard, io.Discard)
	m.FetchTLS = fake.TLS()
	m.FetchTLS.RootCAs.AddCert(cdn.Certificate())
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--catalog", catPath)
	tenant, _ := m.cat().Tenant("demo")

	if status, b := e.call("POST", "/v1/videos", `{"model":"demo-video-2.5","prompt":"x","metadata":{"resolution":"4k","ratio":"16:9","duration":5}}`); status != 400 ||
		!bytes.Contains(b, []byte(`"param":"metadata.resolution"`)) {
		t.Errorf("4k on ark: %d %s; want 400 on metadata.resolution", status, b)
	}

	item := func(typ, role, name string) string {
		return `{"type":"` + typ + `","role":"` + role + `","` + typ + `":{"url":"` + cdn.URL + "/" + name + `"}}`
	}
	native := map[string]string{
		"text":             `{"model":"demo-video-2.5","prompt":"text mode","metadata":{"resolution":"720p","ratio":"16:9","duration":5}}`,
		"first_last_frame": `{"model":"demo-video-2.5","prompt":"frames","metadata":{"resolution":"720p","duration":5,"content":[` + item("image_url", "first_frame", "frame.png") + `,` + item("image_url", "last_frame", "frame.png") + `]}}`,
		"reference": `{"model":"demo-video-2.5","prompt":"@Image1 speaks over @Video1","metadata":{"resolution":"480p","ratio":"9:16","duration":5,"omni_reference_task_type":"reference","content":[` +
			item("image_url", "reference_image", "frame.png") + `,` + item("video_url", "reference_video", "ref.mp4") + `,` + item("audio_url", "reference_audio", "ref.mp3") + `]}}`,
	}
	ids := map[string]string{}
	for mode, body := range native {
		ids[mode] = e.create(body)
	}
	inflatedID := e.create(`{"model":"demo-video-2.5","prompt":"inflated usage","metadata":{"resolution":"720p","ratio":"16:9","duration":5}}`)
	production := e.create(`{"model":"demo-production-pro","prompt":"a harbour at dawn","metadata":{"ratio":"16:9","duration":5,"resolution":"1080p"}}`)
	perToken, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-2.5")), tokens)
	for mode, id := range ids {
		task := e.wait(id)
		if task.Status != "completed" || task.Usage == nil || task.Usage.CompletionTokens != tokens {
			t.Fatalf("%s on ark: %+v %+v", mode, task, task.Error)
		}
		if _, info := e.download(task.Metadata.URL, mode+".mp4"); info.Width != 320 || !near(info.Duration, 5, 0.05) {
			t.Errorf("%s result %+v", mode, info)
		}
	}
	// Usage beyond what the measured video implies is billed at the bound (125%).
	itask := e.wait(inflatedID)
	bound := billing.UsageLimit(billing.NativeTokens(320, 180, 24, 5))
	if itask.Status != "completed" || itask.Usage == nil || itask.Usage.CompletionTokens != bound {
		t.Errorf("inflated usage: %+v, want %d tokens billed", itask.Usage, bound)
	}
	boundCost, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-2.5")), bound)
	ptask := e.wait(production)
	if ptask.Status != "completed" {
		t.Fatalf("production on ark + ffmpeg: %+v %+v", ptask, ptask.Error)
	}
	_, pinfo := e.download(ptask.Metadata.URL, "production.mp4")
	if pinfo.Height != 1080 || !near(pinfo.Duration, 5, 0.1) {
		t.Errorf("production result %+v, want 1080p", pinfo)
	}
	pq := billing.Quote{Route: "production", Rate: rate(tenant.Rates.ProductionRate("pro", "1080p", false))}
	pcharge, _ := billing.SettleAmount(pq, billing.Measured{OutputSeconds: pinfo.Duration})
	if got, want := e.used(), perToken*money.Micros(len(ids))+boundCost+pcharge; got != want {
		t.Errorf("charged %s, want %s (3 native tasks at the video's %d tokens + one at the bound + production %s)", got, want, tokens, pcharge)
	}
	// The operator's cost: the tokens the upstream reported (not the tokens billed) × the
	// account's per_million_tokens, for the native tasks and production's generation half.
	rows, err := m.db.UsageReport(context.Background(), store.UsageQuery{From: time.Now().UTC().Truncate(time.Hour).Add(-time.Hour),
		To: time.Now().UTC().Truncate(time.Hour).Add(2 * time.Hour), GroupBy: []string{store.UsageByUpstream, store.UsageByRoute}})
	if err != nil {
		t.Fatal(err)
	}
	costOf := func(tokens int64) money.Micros { c, _ := billing.TokenCost(500_000, tokens); return c }
	wantCost := map[string]money.Micros{"native": 3*costOf(reported) + costOf(inflated), "production": costOf(reported)}
	for _, r := range rows {
		if r.Upstream != "ark-main" || r.CostCurrency != "USD" || r.Cost != wantCost[r.Route] {
			t.Errorf("cost row %s/%s: %s %q, want %s USD on ark-main", r.Upstream, r.Route, r.Cost, r.CostCurrency, wantCost[r.Route])
		}
	}
	if len(rows) != 2 {
		t.Errorf("cost rows %+v, want native and production", rows)
	}
	for _, id := range append(slices.Collect(maps.Values(ids)), production, inflatedID) {
		if n := fake.JobsFor(ark.Tag(id + ":gen")); n != 1 {
			t.Errorf("task %s made %d upstream jobs", id, n)
		}
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
}

// A result link on a host outside the account's result_hosts is never read: the task fails
// with a full refund (the upstream handed out a link this service must not fetch).
func TestArkResultOutsideTheResultHostsIsNotRead(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "h"}, clip); err != nil {
		t.Fatal(err)
	}
	fake := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: 160})
	t.Cleanup(fake.Close)
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), io.Discard, &logs)
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--catalog", arkCatalog(t, t.TempDir(), fake.Base(), "    result_hosts: [\"*.volces.com\"]\n"))
	id := e.create(`{"model":"demo-video-fast","prompt":"elsewhere","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`)
	task := e.wait(id)
	if task.Status != "failed" || task.Error == nil || task.Error.Code != "video_generation_failed" {
		t.Fatalf("task ended %s %+v, want failed", task.Status, task.Error)
	}
	if used := e.used(); used != 0 {
		t.Errorf("charged %s", used)
	}
	if !strings.Contains(logs.String(), "outside the account's result_hosts") {
		t.Errorf("no log line says why:\n%s", logs.String())
	}
}
