package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apidoc"
	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/testkit"
)

// e2e is a running service (sandbox engine, SQLite) plus an HTTPS media server on loopback.
type e2e struct {
	t     *testing.T
	m     *Main  // the in-process service, when there is one
	base  string // the service's URL when it runs in another process
	key   string
	media *httptest.Server
	input string // URL of a 2.5 s input MP4
	tools ffmpeg.Tools
	cat   *catalog.Catalog
}

func requireTools(t *testing.T) ffmpeg.Tools {
	t.Helper()
	tools := ffmpeg.Tools{Preset: testDefaults["MEDIAGEN_ENCODE_PRESET"]}
	if err := checkToolsOnce(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("media tools required under CI=true: %v", err)
		}
		t.Skip(err)
	}
	return tools
}

// checkToolsOnce checks the media tools once for the whole package: they do not come and go
// while it runs, and each check starts three processes.
var checkToolsOnce = sync.OnceValue(func() error { return ffmpeg.Tools{}.Check(context.Background()) })

func startE2E(t *testing.T, extra ...string) *e2e {
	t.Helper()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "input.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 30, Duration: 2.5, Container: "mp4", Audio: true, Text: "input clip"}, clip); err != nil {
		t.Fatal(err)
	}
	media := httptest.NewTLSServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(media.Close)
	var out bytes.Buffer
	var logs syncBuffer
	m := NewMain(env(nil), &out, &logs)
	// A failed test shows what the server logged (warn and above): a 500's cause is only there.
	t.Cleanup(func() {
		if t.Failed() {
			l := logs.String()
			t.Logf("server log (last 8 KiB):\n%s", l[max(0, len(l)-8<<10):])
		}
	})
	m.FetchTLS = &tls.Config{RootCAs: media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	args := append([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--sandbox-pace", "200ms",
		"--fetch-allow", "loopback", "--log-level", "warn"}, extra...)
	seedSQLite(t, filepath.Join(dir, "data"), args)
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return &e2e{t: t, m: m, key: m.DemoKey, media: media, input: media.URL + "/input.mp4", tools: tools, cat: catalog.Demo()}
}

type apiTask struct {
	ID       string `json:"id"`
	Status   string `json:"status"`
	Progress int    `json:"progress"`
	Model    string `json:"model"`
	Metadata struct {
		URL             string   `json:"url"`
		LastFrameURL    string   `json:"last_frame_url"`
		VideoURL        string   `json:"video_url"`
		Duration        *float64 `json:"duration"`
		FPS             *float64 `json:"fps"`
		Resolution      string   `json:"resolution"`
		ToolVersion     string   `json:"tool_version"`
		ClientRequestID string   `json:"client_request_id"`
	} `json:"metadata"`
	Usage *struct {
		CompletionTokens int64 `json:"completion_tokens"`
		TotalTokens      int64 `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (e *e2e) call(method, path, body string) (int, []byte) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.baseURL()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	checkAgainstOpenAPI(e.t, apidoc.Exchange{Method: method, Path: path, ReqHeader: req.Header, ReqBody: []byte(body),
		Status: res.StatusCode, RespHeader: res.Header, RespBody: b})
	return res.StatusCode, b
}

var (
	openAPIOnce sync.Once
	openAPIDoc  *apidoc.Doc
	openAPIErr  error
)

// checkAgainstOpenAPI validates one exchange of the end-to-end tests against
// docs/openapi.yaml. These are the only tests that see tasks finish, fail and expire, so they
// check the parts of the document the handler-level test cannot reach.
func checkAgainstOpenAPI(t *testing.T, ex apidoc.Exchange) {
	t.Helper()
	openAPIOnce.Do(func() { openAPIDoc, openAPIErr = apidoc.Load("../../docs/openapi.yaml") })
	if openAPIErr != nil {
		t.Fatal(openAPIErr)
	}
	if err := openAPIDoc.CheckExchange(ex); err != nil {
		t.Errorf("docs/openapi.yaml: %v", err)
	}
}

func (e *e2e) baseURL() string {
	if e.base != "" {
		return e.base
	}
	return e.m.URL()
}

func (e *e2e) create(body string) string {
	e.t.Helper()
	status, b := e.call("POST", "/v1/videos", body)
	if status != 202 {
		e.t.Fatalf("create: %d %s", status, b)
	}
	var task apiTask
	if err := json.Unmarshal(b, &task); err != nil {
		e.t.Fatal(err)
	}
	return task.ID
}

// wait polls the task until it is terminal, checking that progress never goes back.
func (e *e2e) wait(id string) apiTask {
	e.t.Helper()
	return e.waitWithin(id, 3*time.Minute)
}

// waitRefusedAndBack waits until refused reports the account refused a call (its fake
// counted it), then until the task is past the step that made the call — the fake counts a
// refusal before the service has read the answer and put the task back to wait — and
// returns the task as it then is.
func (e *e2e) waitRefusedAndBack(id string, refused func() int) apiTask {
	e.t.Helper()
	testkit.WaitEvery(e.t, 50*time.Millisecond, time.Minute, "no call was refused", func() bool { return refused() > 0 })
	var task apiTask
	testkit.WaitEvery(e.t, 50*time.Millisecond, 30*time.Second, "the task never went back to wait", func() bool {
		_, b := e.call("GET", "/v1/videos/"+id, "")
		task = apiTask{}
		if err := json.Unmarshal(b, &task); err != nil {
			e.t.Fatal(err)
		}
		return task.Status != "in_progress"
	})
	return task
}

// waitWithin is wait with another bound: a bench's hundreds of tasks created at once end long
// after the first.
func (e *e2e) waitWithin(id string, bound time.Duration) apiTask {
	e.t.Helper()
	last := -1
	var task apiTask
	testkit.WaitEvery(e.t, 100*time.Millisecond, bound, fmt.Sprintf("task %s not terminal in time", id), func() bool {
		status, b := e.call("GET", "/v1/videos/"+id, "")
		if status != 200 {
			e.t.Fatalf("poll: %d %s", status, b)
		}
		if bytes.Contains(b, []byte(":null")) { // a JSON null value (an id may contain the letters)
			e.t.Fatalf("null in task: %s", b)
		}
		task = apiTask{}
		if err := json.Unmarshal(b, &task); err != nil {
			e.t.Fatal(err)
		}
		if task.Progress < last {
			e.t.Fatalf("progress went back from %d to %d", last, task.Progress)
		}
		last = task.Progress
		switch task.Status {
		case "completed", "failed", "expired":
			return true
		}
		return false
	})
	return task
}

// download fetches a result link into a file and measures it.
func (e *e2e) download(url, name string) (string, ffmpeg.Info) {
	e.t.Helper()
	res, err := http.Get(url)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		b, _ := io.ReadAll(res.Body)
		e.t.Fatalf("download %s: %d %s", url, res.StatusCode, b)
	}
	path := filepath.Join(e.t.TempDir(), name)
	f, _ := os.Create(path)
	if _, err := io.Copy(f, res.Body); err != nil {
		e.t.Fatal(err)
	}
	_ = f.Close()
	info, err := e.tools.Probe(context.Background(), path)
	if err != nil {
		e.t.Fatalf("probe %s: %v", name, err)
	}
	return path, info
}

func (e *e2e) balance() (available, used string) {
	e.t.Helper()
	_, b := e.call("GET", "/v1/billing/balance", "")
	// The amounts are read as the literal JSON numbers, to compare them exactly.
	s := string(b)
	i := strings.Index(s, `"available":`) + len(`"available":`)
	j := strings.IndexAny(s[i:], ",}")
	k := strings.Index(s, `"used":`) + len(`"used":`)
	l := strings.IndexAny(s[k:], ",}")
	return s[i : i+j], s[k : k+l]
}

// rate unwraps a rate-card lookup; the demo catalog has every rate, so a miss is a bug here.
func rate(m money.Micros, ok bool) money.Micros {
	if !ok {
		panic("demo catalog lacks a rate")
	}
	return m
}

func near(a, b, tol float64) bool { return a-b <= tol && b-a <= tol }

func TestEndToEndEveryRouteCompletesAndChargesMeasuredValues(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	demo, _ := e.cat.Tenant("demo")
	rates := demo.Rates
	ids := map[string]string{
		"native-mp4": e.create(`{"model":"demo-video-fast","prompt":"a red kite over the sea","metadata":{"duration":4,"resolution":"480p","ratio":"16:9","generate_audio":true}}`),
		"native-mov": e.create(`{"model":"demo-video-2.5","prompt":"a quiet street","metadata":{"duration":4,"resolution":"480p","ratio":"1:1","output_format":"mov","generate_audio":false,"return_last_frame":true}}`),
		"enhance":    e.create(`{"model":"demo-enhance-lite","prompt":"ignored","metadata":{"video_url":"` + e.input + `","duration":2.5,"resolution_limit":240,"fps":48,"client_request_id":"enh-1"}}`),
		"production": e.create(`{"model":"demo-production-lite","prompt":"extend @Video1","metadata":{"resolution":"1080p","duration":4,"return_last_frame":true,"omni_reference_task_type":"extend","content":[{"type":"video_url","role":"reference_video","video_url":{"url":"` + e.input + `"}}]}}`),
	}
	var total money.Micros
	// Right after acceptance the tasks are queued or running, and the gauge counts them.
	if m := e.metrics(); sumSeries(m, "mediagen_tasks_active", `route="native"`) < 1 {
		t.Errorf("mediagen_tasks_active shows no native task while two run:\n%s", grepLines(m, "mediagen_tasks_active"))
	}

	// Native MP4 with audio.
	task := e.wait(ids["native-mp4"])
	if task.Status != "completed" || task.Progress != 100 || task.Usage == nil || task.Metadata.URL == "" {
		t.Fatalf("native mp4: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.URL, "native.mp4")
	if info.Width != 854 && info.Width != 852 || info.Height != 480 || !near(info.Duration, 4, 0.05) || !near(info.FPS, 24, 0.01) || !info.HasAudio || info.Container != "mp4" {
		t.Errorf("native mp4 measured %+v", info)
	}
	if want := billing.NativeTokens(info.Width, info.Height, info.FPS, info.Duration); task.Usage.CompletionTokens != want || task.Usage.TotalTokens != want {
		t.Errorf("usage %+v, want %d from the real output", task.Usage, want)
	}
	c, _ := billing.TokenCost(rate(rates.NativeRate("demo-video-fast")), task.Usage.CompletionTokens)
	total += c

	// Native MOV without audio, with a last frame.
	task = e.wait(ids["native-mov"])
	if task.Status != "completed" || task.Metadata.LastFrameURL == "" || !strings.Contains(task.Metadata.URL, ".mov") {
		t.Fatalf("native mov: %+v", task)
	}
	_, info = e.download(task.Metadata.URL, "native.mov")
	if info.Width != 480 || info.Height != 480 || !near(info.Duration, 4, 0.05) || !near(info.FPS, 24, 0.01) || info.HasAudio || info.Container != "mov" {
		t.Errorf("native mov measured %+v", info)
	}
	c, _ = billing.TokenCost(rate(rates.NativeRate("demo-video-2.5")), task.Usage.CompletionTokens)
	total += c

	// Standalone enhancement: short side 240, 48 fps, metadata measured from the output.
	task = e.wait(ids["enhance"])
	if task.Status != "completed" || task.Metadata.VideoURL == "" || task.Metadata.Duration == nil || task.Metadata.FPS == nil || task.Metadata.ClientRequestID != "enh-1" || task.Metadata.ToolVersion != "lite" {
		t.Fatalf("enhancement: %+v", task)
	}
	_, info = e.download(task.Metadata.VideoURL, "enhanced.mp4")
	input, err := e.tools.Probe(context.Background(), filepath.Join(e.mediaDir(), "input.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	// The enhanced file keeps the source's container, duration and audio track.
	if info.Height != 240 || info.Width != 426 && info.Width != 428 || !near(info.FPS, 48, 0.01) || !near(*task.Metadata.Duration, info.Duration, 0.001) ||
		!near(info.Duration, input.Duration, 0.05) || info.HasAudio != input.HasAudio || info.Container != "mp4" {
		t.Errorf("enhancement measured %+v, metadata %+v", info, task.Metadata)
	}
	if task.Metadata.Resolution != fmt.Sprintf("%dx%d", info.Width, info.Height) {
		t.Errorf("resolution %q vs %dx%d", task.Metadata.Resolution, info.Width, info.Height)
	}
	c, _ = billing.SettleAmount(billing.Quote{Route: "enhancement", Rate: rate(rates.EnhancementRate("lite", "720p"))},
		billing.Measured{OutputSeconds: info.Duration, OutputFPS: info.FPS})
	total += c

	// Production: final 1080p, last frame from the final video, input measured.
	task = e.wait(ids["production"])
	if task.Status != "completed" || task.Metadata.URL == "" || task.Metadata.LastFrameURL == "" || task.Usage != nil {
		t.Fatalf("production: %+v", task)
	}
	_, info = e.download(task.Metadata.URL, "production.mp4")
	// generate_audio was omitted, so the sandbox adds no audio track (docs/sandbox.md).
	if info.Width != 1920 || info.Height != 1080 || !near(info.Duration, 4, 0.05) || !near(info.FPS, 24, 0.01) || info.HasAudio || info.Container != "mp4" {
		t.Errorf("production measured %+v", info)
	}
	_, frame := e.download(task.Metadata.LastFrameURL, "last.jpg")
	if frame.Width != info.Width || frame.Height != info.Height {
		t.Errorf("last frame %dx%d, final video %dx%d", frame.Width, frame.Height, info.Width, info.Height)
	}
	clip, err := e.tools.Probe(context.Background(), filepath.Join(e.mediaDir(), "input.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	q := billing.Quote{Route: "production", Rate: rate(rates.ProductionRate("lite", "1080p", true)), InputMicros: []int64{billing.SecondsToMicros(clip.Duration)}}
	c, _ = billing.SettleAmount(q, billing.Measured{OutputSeconds: info.Duration})
	total += c

	available, used := e.balance()
	if want := (100*money.Scale - total); available != want.String() || used != total.String() {
		t.Fatalf("balance available %s used %s; want %s and %s", available, used, want, total)
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Links are minted fresh on every read, to the same stored file.
	_, b1 := e.call("GET", "/v1/videos/"+ids["native-mp4"], "")
	testkit.NextSecond() // links carry their expiry in whole seconds
	_, b2 := e.call("GET", "/v1/videos/"+ids["native-mp4"], "")
	if bytes.Equal(b1, b2) {
		t.Error("links were not minted fresh")
	}
}

func (e *e2e) mediaDir() string {
	// The media server serves the directory that holds input.mp4 (the test's temp dir).
	return e.m.Config.DataDir[:len(e.m.Config.DataDir)-len("/data")]
}

func TestEndToEndFailuresRefundInFull(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	cases := []struct {
		name, body, status, code string
	}{
		{"fail", `{"model":"demo-video-fast","prompt":"boom [sandbox:fail]","metadata":{"duration":4,"resolution":"480p"}}`, "failed", "video_generation_failed"},
		{"expire", `{"model":"demo-video-2.5","prompt":"slow [sandbox:expire]","metadata":{"resolution":"480p"}}`, "expired", "task_expired"},
		{"mismatch", `{"model":"demo-video-2.5","prompt":"x [sandbox:fail=InvalidParameter.TaskTypeMismatch]","metadata":{"resolution":"480p","omni_reference_task_type":"reference","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"https://cdn.example/a.png"}}]}}`, "failed", "InvalidParameter.TaskTypeMismatch"},
		{"production enhancement half fails", `{"model":"demo-production-lite","prompt":"x [sandbox:enhance=fail]","metadata":{"resolution":"1080p","duration":4}}`, "failed", "video_generation_failed"},
		{"production enhancement half fails with a code", `{"model":"demo-production-standard","prompt":"x [sandbox:enhance=fail:InvalidParameter]","metadata":{"resolution":"1080p","duration":4}}`, "failed", "InvalidParameter"},
		{"enhancement source fails", `{"model":"demo-enhance","metadata":{"video_url":"` + e.input + `?sandbox=fail","duration":2.5,"resolution":"1080p"}}`, "failed", "video_generation_failed"},
	}
	for _, tc := range cases {
		id := e.create(tc.body)
		task := e.wait(id)
		if task.Status != tc.status || task.Error == nil || task.Error.Code != tc.code || task.Error.Message == "" || task.Metadata.URL != "" {
			t.Errorf("%s: %+v", tc.name, task)
		}
	}
	available, used := e.balance()
	if available != "100" || used != "0" {
		t.Fatalf("failures were charged: available %s used %s", available, used)
	}
	// Every one of those failures came from upstream, and the metrics say so.
	m := e.metrics()
	var counted float64
	for _, kind := range []string{"rejected", "job_failed", "job_expired"} {
		counted += sumSeries(m, "mediagen_upstream_errors_total", `kind="`+kind+`"`)
	}
	if counted < float64(len(cases)) || sumSeries(m, "mediagen_upstream_errors_total", `kind="job_expired"`) < 1 {
		t.Errorf("upstream errors counted %v for %d upstream failures (one expiry):\n%s", counted, len(cases), grepLines(m, "mediagen_upstream_errors_total"))
	}
}

// metrics scrapes the service's /metrics.
func (e *e2e) metrics() string {
	e.t.Helper()
	res, err := http.Get(e.baseURL() + "/metrics")
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}

// sumSeries adds the values of the samples of name whose labels contain match.
func sumSeries(metrics, name, match string) float64 {
	var sum float64
	for _, line := range strings.Split(metrics, "\n") {
		if !strings.HasPrefix(line, name+"{") || !strings.Contains(line, match) {
			continue
		}
		var v float64
		if _, err := fmt.Sscan(line[strings.LastIndexByte(line, ' ')+1:], &v); err == nil {
			sum += v
		}
	}
	return sum
}

func grepLines(text, prefix string) string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, prefix) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}
