package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/mediakit"
	"mediagen/internal/provider/mediakit/mediakitfake"
)

const mediakitTestKey = "amk-e2e-key-7f3a91c4d2"

// mediakitEnv is the environment a mediakit account's key is read from.
func mediakitEnv() func(string) string {
	return env(map[string]string{"MEDIAKIT_TEST_KEY": mediakitTestKey})
}

// mediakitAccount is an account of kind mediakit at base named name; extra lines (indented
// as the account's fields) are added to it.
func mediakitAccount(name, base string, extra ...string) string {
	return "  - name: " + name + "\n    kind: mediakit\n    base_url: " + base + "\n    api_key_env: MEDIAKIT_TEST_KEY\n" + strings.Join(extra, "")
}

// mediakitCatalog is the demo catalog with both enhancement aliases on the mediakit account
// amk-main at base, and demo-production-standard's enhancement half on it too (its
// generation half stays on the sandbox). enh, when set, replaces the production alias's
// enhancement binding (enhance_upstreams for routing); accounts are added to the section.
func mediakitCatalog(t *testing.T, dir, base, enh string, accounts ...string) string {
	t.Helper()
	path := demoCatalogWith(t, dir, mediakitAccount("amk-main", base, "    max_in_flight: 10\n")+strings.Join(accounts, ""),
		map[string]string{"demo-enhance-lite": "amk-main", "demo-enhance": "amk-main"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if enh == "" {
		enh = "enhance_upstream: amk-main"
	}
	b = bytes.Replace(b, []byte("enhance_model: sandbox-enhance-standard"), []byte(enh+"\n        enhance_model: enhance-video"), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Load(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// mediakitSource renders the tenant's source (640x360, 12 fps, 2 s, within the tools' input
// bounds) and serves it from a CDN of its own.
func mediakitSource(t *testing.T, tools ffmpeg.Tools, dir string) *httptest.Server {
	t.Helper()
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 640, Height: 360, FPS: 12, Duration: 2, Container: "mp4", Audio: true, Text: "amk"}, filepath.Join(dir, "clip.mp4")); err != nil {
		t.Fatal(err)
	}
	cdn := httptest.NewTLSServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(cdn.Close)
	return cdn
}

// measuredCharge is what a completed task must be charged: its stored result, downloaded
// and measured, priced from its own quote (billing.Final), as the pipeline does for every
// kind. It checks the task's record says so and returns the amount.
func measuredCharge(t *testing.T, e *e2e, id, url string) money.Micros {
	t.Helper()
	_, info := e.download(url, id+".mp4")
	rec, err := e.m.db.TaskRun(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var q billing.Quote
	if err := json.Unmarshal(rec.Pricing, &q); err != nil {
		t.Fatal(err)
	}
	s, err := billing.Final(q, billing.Delivered{Micros: billing.SecondsToMicros(info.Billable()), FPS: info.FPS, Width: info.Width, Height: info.Height})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Charged != s.Charge {
		t.Errorf("task %s charged %s; its measured result (%dx%d, %.3f s, %.2f fps) implies %s", id, rec.Charged, info.Width, info.Height, info.Duration, info.FPS, s.Charge)
	}
	return rec.Charged
}

// Standalone enhancements on each tier (Lite, Standard, Professional) and a production task
// whose enhancement half runs on the mediakit account reach the fake AI MediaKit with the
// tier's tool (enhance-video-fast, enhance-video with tool_version standard or
// professional), every field mapped, the task's client_token, and a signed link to the
// service's own copy of the source (never the tenant's URL); each result is copied, measured
// and charged from the measurement; requests the tools cannot do are refused at submission;
// and the key appears nowhere the service wrote.
func TestMediaKitRunsEachTierAndAProductionsEnhancementHalf(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	cdn := mediakitSource(t, tools, t.TempDir())
	fake := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Tools: tools, Dir: t.TempDir()})
	t.Cleanup(fake.Close)

	var out, logs bytes.Buffer
	m := NewMain(mediakitEnv(), &out, &logs)
	m.FetchTLS = trustBoth(fake.Certificate(), cdn.Certificate())
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "debug",
		"--catalog", mediakitCatalog(t, t.TempDir(), fake.Base(), ""))
	src := cdn.URL + "/clip.mp4"

	for body, param := range map[string]string{
		`{"model":"demo-enhance-lite","metadata":{"video_url":"` + src + `","duration":2,"resolution":"1080p","bitrate":4000}}`:                          "metadata.bitrate",
		`{"model":"demo-enhance","metadata":{"video_url":"` + src + `","duration":2,"resolution":"1080p","enhance_style":"hd"}}`:                         "metadata.enhance_style",
		`{"model":"demo-enhance","metadata":{"video_url":"` + src + `","duration":2,"tool_version":"professional","resolution":"1080p","bit_depth":16}}`: "metadata.bit_depth",
		`{"model":"demo-production-standard","prompt":"x","metadata":{"duration":4,"resolution":"1080p","bitrate":900}}`:                                 "metadata.bitrate",
	} {
		if status, b := e.call("POST", "/v1/videos", body); status != 400 || !bytes.Contains(b, []byte(`"param":"`+param+`"`)) {
			t.Errorf("%s: %d %s; want 400 on %s", body, status, b, param)
		}
	}
	if fake.Jobs() != 0 {
		t.Fatalf("refused requests made %d jobs", fake.Jobs())
	}

	type want struct {
		path      string
		fields    map[string]any
		absent    []string
		shortSide int
	}
	cases := map[string]want{
		e.create(`{"model":"demo-enhance-lite","metadata":{"video_url":"` + src + `","duration":2,"resolution":"1080p","fps":24,"bitrate_level":"low"}}`): {
			mediakit.PathFast, map[string]any{"resolution": "1080p", "fps": 24.0, "bitrate_level": "low"}, []string{"tool_version", "scene", "bit_depth", "resolution_limit"}, 1080},
		e.create(`{"model":"demo-enhance","metadata":{"video_url":"` + src + `","duration":2,"resolution_limit":540,"scene":"aigc"}}`): {
			mediakit.PathEnhance, map[string]any{"tool_version": "standard", "resolution_limit": 540.0, "scene": "aigc"}, []string{"bit_depth", "resolution", "fps"}, 540},
		e.create(`{"model":"demo-enhance","metadata":{"video_url":"` + src + `","duration":2,"tool_version":"professional","resolution_limit":480,"bit_depth":10,"bitrate_level":"high"}}`): {
			mediakit.PathEnhance, map[string]any{"tool_version": "professional", "resolution_limit": 480.0, "bit_depth": 10.0, "bitrate_level": "high"}, []string{"scene"}, 480},
		e.create(`{"model":"demo-production-standard","prompt":"a kite over the sea","metadata":{"duration":4,"resolution":"1080p","scene":"aigc"}}`): {
			mediakit.PathEnhance, map[string]any{"tool_version": "standard", "resolution": "1080p", "scene": "aigc"}, []string{"bit_depth", "resolution_limit"}, 1080},
	}
	var charged money.Micros
	for id, w := range cases {
		task := e.wait(id)
		if task.Status != "completed" {
			t.Fatalf("task %s on the mediakit account: %+v %+v", id, task, task.Error)
		}
		url := task.Metadata.VideoURL
		if url == "" {
			url = task.Metadata.URL
		}
		if strings.Contains(url, fake.Base()) {
			t.Errorf("the upstream's URL reached the client: %s", url)
		}
		token := id + ":enh"
		body := fake.Body(token)
		if body == nil || fake.JobsFor(token) != 1 {
			t.Fatalf("task %s: no job with client_token %q (%d jobs in all)", id, token, fake.Jobs())
		}
		if body["path"] != w.path {
			t.Errorf("task %s ran on %v, want %s", id, body["path"], w.path)
		}
		for k, v := range w.fields {
			if body[k] != v {
				t.Errorf("task %s sent %s = %v, want %v", id, k, body[k], v)
			}
		}
		for _, k := range w.absent {
			if _, has := body[k]; has {
				t.Errorf("task %s sent %s = %v", id, k, body[k])
			}
		}
		if v, _ := body["video_url"].(string); !strings.HasPrefix(v, e.m.URL()) || strings.Contains(v, cdn.URL) {
			t.Errorf("task %s gave the vendor %q; want a signed link to the service's own copy", id, v)
		}
		_, info := e.download(url, id+"-check.mp4")
		if min(info.Width, info.Height) != w.shortSide {
			t.Errorf("task %s: the result measures %dx%d, want short side %d", id, info.Width, info.Height, w.shortSide)
		}
		charged += measuredCharge(t, e, id, url)
	}
	if got := e.used(); got != charged {
		t.Errorf("used %s, want %s (the tasks' measured charges)", got, charged)
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	for what, text := range map[string]string{"stdout": out.String(), "the logs": logs.String(), "the metrics": e.metrics()} {
		if strings.Contains(text, mediakitTestKey) {
			t.Errorf("the key appears in %s", what)
		}
	}
	_ = filepath.Walk(filepath.Join(dir, "data"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(mediakitTestKey)) {
			t.Errorf("the key is in %s", p)
		}
		return nil
	})
}

// A create whose answer is lost (the job made, a 502 back) twice is made again with the same
// client_token, which answers the job the first create made: the task completes with exactly
// one paid job, charged once.
func TestMediaKitLostCreateAnswersMakeExactlyOnePaidJob(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	cdn := mediakitSource(t, tools, t.TempDir())
	fake := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Tools: tools, Dir: t.TempDir(), LoseFirst: 2})
	t.Cleanup(fake.Close)
	m := NewMain(mediakitEnv(), io.Discard, io.Discard)
	m.FetchTLS = trustBoth(fake.Certificate(), cdn.Certificate())
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--task-retry-max", "1s",
		"--catalog", mediakitCatalog(t, t.TempDir(), fake.Base(), ""))
	id := e.create(`{"model":"demo-enhance-lite","metadata":{"video_url":"` + cdn.URL + `/clip.mp4","duration":2,"resolution_limit":360}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task %+v %+v", task, task.Error)
	}
	if fake.LostAnswers() != 2 || fake.CreatesFor(id+":enh") != 3 || fake.JobsFor(id+":enh") != 1 || fake.Jobs() != 1 {
		t.Errorf("%d creates (%d answers lost) made %d jobs; want 3 creates and exactly one job", fake.CreatesFor(id+":enh"), fake.LostAnswers(), fake.Jobs())
	}
	if got, want := e.used(), measuredCharge(t, e, id, task.Metadata.VideoURL); got != want {
		t.Errorf("used %s, want %s (one job, charged once)", got, want)
	}
}

// A production alias whose enhancement half is routed over two mediakit accounts
// (enhance_upstreams) leaves the account whose key is refused for the other: the task
// completes there with one job, and the refused account made none.
func TestMediaKitRoutesAProductionsEnhancementHalfAwayFromARefusedAccount(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	good := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Tools: tools, Dir: t.TempDir()})
	t.Cleanup(good.Close)
	down := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Tools: tools, Dir: t.TempDir(), Status: http.StatusUnauthorized})
	t.Cleanup(down.Close)
	m := NewMain(mediakitEnv(), io.Discard, io.Discard)
	m.FetchTLS = trustBoth(good.Certificate(), down.Certificate())
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn",
		"--catalog", mediakitCatalog(t, t.TempDir(), good.Base(), "enhance_upstreams: [amk-down, amk-main]", mediakitAccount("amk-down", down.Base())))
	id := e.create(`{"model":"demo-production-standard","prompt":"routed kite","metadata":{"duration":4,"resolution":"1080p"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task %+v %+v", task, task.Error)
	}
	if good.JobsFor(id+":enh") != 1 || down.Jobs() != 0 {
		t.Errorf("jobs: %d on amk-main, %d on amk-down (refused %d calls); want the half on amk-main alone", good.JobsFor(id+":enh"), down.Jobs(), down.Refused())
	}
	t.Logf("amk-down refused %d calls", down.Refused())
	if got, want := e.used(), measuredCharge(t, e, id, task.Metadata.URL); got != want {
		t.Errorf("used %s, want %s", got, want)
	}
}

// upstream check reads a task no create made (free: nothing is enhanced) with the account's
// key: OK with it, FAILED with a wrong one, the key never printed; upstream list counts the
// three aliases that run on the account (both enhancement aliases, a production's half).
func TestAdminUpstreamCheckAndListCoverMediaKit(t *testing.T) {
	t.Parallel()
	fake := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Dir: t.TempDir()})
	t.Cleanup(fake.Close)
	cat := mediakitCatalog(t, t.TempDir(), fake.Base(), "")
	for _, tc := range []struct {
		name string
		args []string
		key  string
		want string
		fail bool
	}{
		{"check with its key", []string{"upstream", "check", "--catalog", cat, "amk-main"}, mediakitTestKey,
			"amk-main (mediakit): OK, read a task with the account's key at " + fake.Base(), false},
		{"check with a wrong key", []string{"upstream", "check", "--catalog", cat, "amk-main"}, "amk-wrong-key-2", "amk-main (mediakit): FAILED", true},
		{"list", []string{"upstream", "list", "--catalog", cat}, mediakitTestKey, "amk-main             mediakit   3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), tc.args, env(map[string]string{"MEDIAKIT_TEST_KEY": tc.key}), &out, &errOut, fake.TLS())
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err != nil) != tc.fail || !strings.Contains(text, tc.want) {
				t.Errorf("%v: %v\n%s; want %q", tc.args, err, text, tc.want)
			}
			if strings.Contains(text, tc.key) {
				t.Errorf("the key is in the output: %s", text)
			}
		})
	}
	if fake.Jobs() != 0 || len(fake.Violations()) > 0 {
		t.Errorf("the check made %d jobs, violations %v", fake.Jobs(), fake.Violations())
	}
}

// A catalog reload that binds the enhancement alias to a mediakit account (defined before,
// unused) makes the next task run there: the rebuilt client is an enhancer with the source
// stage, and the task completes with one job and its measured charge.
func TestMediaKitAccountBoundByAReloadRunsTheNextTask(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	cdn := mediakitSource(t, tools, t.TempDir())
	fake := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Tools: tools, Dir: t.TempDir()})
	t.Cleanup(fake.Close)
	catDir := t.TempDir()
	catPath := demoCatalogWith(t, catDir, mediakitAccount("amk-main", fake.Base()), nil)
	m := NewMain(mediakitEnv(), io.Discard, io.Discard)
	m.FetchTLS = trustBoth(fake.Certificate(), cdn.Certificate())
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "error", "--catalog", catPath)
	body := `{"model":"demo-enhance-lite","metadata":{"video_url":"` + cdn.URL + `/clip.mp4","duration":2,"resolution_limit":360}}`
	if task := e.wait(e.create(body)); task.Status != "completed" || fake.Jobs() != 0 {
		t.Fatalf("before the reload (sandbox): %+v, %d mediakit jobs", task, fake.Jobs())
	}
	demoCatalogWith(t, catDir, mediakitAccount("amk-main", fake.Base()), map[string]string{"demo-enhance-lite": "amk-main"})
	if _, err := m.ReloadCatalog(context.Background(), triggerAPI); err != nil {
		t.Fatalf("reload: %v", err)
	}
	before := e.used()
	id := e.create(body)
	task := e.wait(id)
	if task.Status != "completed" || fake.JobsFor(id+":enh") != 1 {
		t.Fatalf("after the reload: %+v %+v, %d jobs", task, task.Error, fake.JobsFor(id+":enh"))
	}
	if got, want := e.used()-before, measuredCharge(t, e, id, task.Metadata.VideoURL); got != want {
		t.Errorf("charged %s, want %s", got, want)
	}
}
