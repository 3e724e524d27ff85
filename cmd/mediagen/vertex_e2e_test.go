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
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/vertex/vertexfake"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// vertexAccount is a catalog account of kind vertex on the fake, its service account's key in
// keyFile.
func vertexAccount(name, base, keyFile, extra string) string {
	return "  - name: " + name + "\n    kind: vertex\n    base_url: " + base + "\n    project: " + vertexfake.Project +
		"\n    location: " + vertexfake.Location + "\n    api_key_file: " + keyFile + "\n" + extra
}

// vertexCatalog is the demo catalog with demo-video-fast bound to a vertex account on the
// fake, its model set to Veo 3, the account's key file written from key.
func vertexCatalog(t *testing.T, dir string, fake *vertexfake.Server, key []byte) string {
	t.Helper()
	return vertexCatalogWith(t, dir, fake, key, "")
}

// vertexCatalogWith is vertexCatalog with more lines (extra) in the account.
func vertexCatalogWith(t *testing.T, dir string, fake *vertexfake.Server, key []byte, extra string) string {
	t.Helper()
	keyFile := filepath.Join(dir, "vertex-sa.json")
	if err := os.WriteFile(keyFile, key, 0o600); err != nil {
		t.Fatal(err)
	}
	path := demoCatalogWith(t, dir, vertexAccount("veo-vertex", fake.Base(), keyFile, extra), map[string]string{"demo-video-fast": "veo-vertex"})
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

// startVertex renders the fake's clip (8 s 320x180, Veo 3's length) when it has none and
// starts the service on a fake Vertex AI whose token endpoint the key file names. other: the
// key file is of a key the fake does not know.
func startVertex(t *testing.T, cfg vertexfake.Config, other bool, credit money.Micros, args ...string) (*e2e, *vertexfake.Server, *syncBuffer) {
	t.Helper()
	return startVertexWith(t, cfg, func(fake *vertexfake.Server) string {
		key := fake.KeyJSON()
		if other {
			key = fake.OtherKeyJSON()
		}
		return vertexCatalog(t, t.TempDir(), fake, key)
	}, credit, args...)
}

// startVertexWith is startVertex with the catalog written by catalogFor from the fake.
func startVertexWith(t *testing.T, cfg vertexfake.Config, catalogFor func(fake *vertexfake.Server) string, credit money.Micros, args ...string) (*e2e, *vertexfake.Server, *syncBuffer) {
	t.Helper()
	tools := requireTools(t)
	dir := t.TempDir()
	if cfg.Clip == "" {
		cfg.Clip = filepath.Join(dir, "out.mp4")
		if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 8, Container: "mp4", Text: "veo"}, cfg.Clip); err != nil {
			t.Fatal(err)
		}
	}
	fake := vertexfake.Start(cfg)
	t.Cleanup(fake.Close)
	var logs syncBuffer
	m := NewMain(env(nil), io.Discard, &logs)
	m.FetchTLS = fake.TLS()
	all := append([]string{"--fetch-allow", "loopback", "--log-level", "info", "--catalog", catalogFor(fake)}, args...)
	e := startRemote(t, m, dir, tools, credit, all...)
	return e, fake, &logs
}

// A native task on an alias bound to a vertex account runs through the token exchange,
// predictLongRunning and fetchPredictOperation on a fake the official SDK drives: the inline
// video is copied into our storage and measured, the charge is the tokens of the measured
// video, one upstream job per task, one token for every call, a first frame goes inline as
// base64, generate_audio false is sent to Veo 3, what Veo 3 cannot make is refused at
// submission with nothing charged, and the key and the tokens appear nowhere the service
// wrote.
func TestVertexAccountRunsNativeTasksAndChargesTheMeasuredVideo(t *testing.T) {
	t.Parallel()
	frame := pngOf(t, 64, 36)
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(frame)
	}))
	t.Cleanup(cdn.Close)
	e, fake, logs := startVertex(t, vertexfake.Config{Polls: 2}, false, 100*money.Scale)
	tenant, _ := e.m.cat().Tenant("demo")

	for _, tc := range []struct{ body, param string }{
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"1:1","duration":8}}`, "metadata.ratio"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"16:9","duration":5}}`, "metadata.duration"},
		{`{"model":"demo-video-fast","prompt":"x","metadata":{"ratio":"9:16","duration":8,"resolution":"1080p"}}`, "metadata.resolution"},
		{`{"model":"demo-video-fast","prompt":"x","seed":7,"metadata":{"ratio":"16:9","duration":8}}`, "seed"},
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
		t.Fatalf("native on vertex: %+v %+v", task, task.Error)
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
	if p["resolution"] != "720p" || p["aspectRatio"] != "16:9" || p["durationSeconds"] != float64(8) || p["sampleCount"] != float64(1) || p["generateAudio"] != true {
		t.Errorf("create parameters %v", p)
	}

	id2 := e.create(`{"model":"demo-video-fast","prompt":"from a frame","metadata":{"ratio":"adaptive","duration":8,"generate_audio":false,"content":[{"type":"image_url","role":"first_frame","image_url":{"url":"` + cdn.URL + `/frame.png"}}]}}`)
	if task := e.wait(id2); task.Status != "completed" {
		t.Fatalf("first frame on vertex: %+v %+v", task, task.Error)
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
	if p, _ := b["parameters"].(map[string]any); p["generateAudio"] != false {
		t.Errorf("generate_audio false sent as %v", p)
	}
	for _, p := range []string{"a red kite", "from a frame"} {
		if n := fake.JobsFor(p); n != 1 {
			t.Errorf("%q made %d upstream jobs", p, n)
		}
	}
	if n := fake.TokensIssued(); n != 1 {
		t.Errorf("%d tokens fetched; want one kept for every call", n)
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	if strings.Contains(logs.String(), "PRIVATE KEY") || strings.Contains(logs.String(), "ya29.") {
		t.Error("the key or a token is in the logs")
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}

// Each fault Vertex AI shows ends its task right: a key the token endpoint refuses, or a
// project the account may not use (403), makes the task wait for the operator, no job; a
// token revoked mid-task is replaced once and the task completes; a 429 (with or without
// Retry-After) is retried, never a lost create; the safety filter or a failed operation fails
// it refunded; a lost create answer ends it refunded with the possible job recorded as
// lost_create excess and never a second create; an operation that never ends, or answers
// garbage, expires at the deadline; a result longer than asked is billed at the request, the
// rest recorded as the operator's excess.
func TestVertexFaultsEndEachTaskRightWithAtMostOneJob(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	long := filepath.Join(t.TempDir(), "long.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 11, Container: "mp4", Text: "long"}, long); err != nil {
		t.Fatal(err)
	}
	end := func(e string) func(string) string { return func(string) string { return e } }
	for _, tc := range []struct {
		name   string
		cfg    vertexfake.Config
		other  bool // the key file is of a key the token endpoint does not know
		prompt string
		status string // the task's end
		jobs   int    // jobs the fake made for the task
		excess string // the upstream excess kind recorded ("" none)
		during func(fake *vertexfake.Server)
		check  func(t *testing.T, fake *vertexfake.Server)
	}{
		{name: "429 with Retry-After waits, then expires", cfg: vertexfake.Config{RateLimit: true, RetryAfterSecs: 1}, prompt: "limited", status: "expired"},
		{name: "429 without Retry-After is retried, then expires", cfg: vertexfake.Config{RateLimit: true}, prompt: "limited bare", status: "expired",
			check: func(t *testing.T, f *vertexfake.Server) {
				if f.RateLimited() < 2 {
					t.Errorf("%d creates rate-limited: a rate limit is retried, not a lost create", f.RateLimited())
				}
			}},
		{name: "a key the token endpoint refuses waits for the operator", other: true, prompt: "bad key", status: "queued"},
		{name: "a project the account may not use (403) waits for the operator", cfg: vertexfake.Config{Forbid: true}, prompt: "forbidden", status: "queued"},
		{name: "a token revoked mid-task is replaced once", cfg: vertexfake.Config{Polls: 3}, prompt: "revoked", status: "completed", jobs: 1,
			during: func(f *vertexfake.Server) { f.ExpireTokens() },
			check: func(t *testing.T, f *vertexfake.Server) {
				if f.TokensIssued() != 2 {
					t.Errorf("%d tokens fetched; want the revoked one replaced once", f.TokensIssued())
				}
			}},
		{name: "the safety filter fails it refunded", cfg: vertexfake.Config{End: end(vertexfake.EndRefuse)}, prompt: "filtered", status: "failed", jobs: 1},
		{name: "a failed operation fails it refunded", cfg: vertexfake.Config{End: end(vertexfake.EndFail)}, prompt: "failed op", status: "failed", jobs: 1},
		{name: "a lost create answer ends the task, never a second job", cfg: vertexfake.Config{LoseAnswers: true}, prompt: "lost", status: "failed", jobs: 1, excess: billing.ExcessLostCreate},
		{name: "an operation that never ends expires", cfg: vertexfake.Config{End: end(vertexfake.EndNever)}, prompt: "stuck", status: "expired", jobs: 1},
		{name: "garbage operation answers are retried until the deadline", cfg: vertexfake.Config{Garbage: true}, prompt: "garbage", status: "expired", jobs: 1},
		{name: "a longer result is cut and billed at the request", cfg: vertexfake.Config{Clip: long}, prompt: "long", status: "completed", jobs: 1, excess: billing.ExcessDuration},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e, fake, logs := startVertex(t, tc.cfg, tc.other, 100*money.Scale, "--task-deadline", "4s", "--task-retry-max", "1s")
			id := e.create(`{"model":"demo-video-fast","prompt":"` + tc.prompt + `","metadata":{"ratio":"16:9","duration":8,"resolution":"720p"}}`)
			if tc.during != nil {
				testkit.WaitEvery(t, 20*time.Millisecond, time.Minute, "no job was made", func() bool { return fake.JobsFor(tc.prompt) > 0 })
				tc.during(fake)
			}
			var task apiTask
			if tc.status == "queued" {
				task = e.waitRefusedAndBack(id, fake.Refused)
			} else {
				task = e.wait(id)
			}
			if task.Status != tc.status {
				t.Fatalf("task ended %s %+v, want %s", task.Status, task.Error, tc.status)
			}
			if task.Error != nil && (strings.Contains(task.Error.Message, "filtered") || strings.Contains(task.Error.Message, "vertex")) {
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
			ex, err := e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "veo-vertex", Limit: 10})
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
			if strings.Contains(logs.String(), "PRIVATE KEY") || strings.Contains(logs.String(), "ya29.") {
				t.Error("the key or a token is in the logs")
			}
			if err := e.m.db.CheckLedger(context.Background()); err != nil {
				t.Error(err)
			}
		})
	}
}

// `admin upstream check` proves a vertex account's key, token endpoint, project and base URL
// with a token and one free call (a read of an operation no job has: a 404 passes), and
// reports a refused key or project as a failure that quotes no key.
func TestAdminUpstreamCheckFetchesAVertexTokenAndReadsAnOperation(t *testing.T) {
	t.Parallel()
	fake := vertexfake.Start(vertexfake.Config{})
	t.Cleanup(fake.Close)
	forbid := vertexfake.Start(vertexfake.Config{Forbid: true})
	t.Cleanup(forbid.Close)
	for _, tc := range []struct {
		name  string
		cat   string
		want  string
		fails bool
	}{
		{"with its key", vertexCatalog(t, t.TempDir(), fake, fake.KeyJSON()), "veo-vertex (vertex): OK, fetched a token and read an operation of veo-3.0-generate-001", false},
		{"with a key the token endpoint refuses", vertexCatalog(t, t.TempDir(), fake, fake.OtherKeyJSON()), "veo-vertex (vertex): FAILED", true},
		{"with a project it may not use", vertexCatalog(t, t.TempDir(), forbid, forbid.KeyJSON()), "veo-vertex (vertex): FAILED", true},
		{"with a file that is not a key", vertexCatalog(t, t.TempDir(), fake, []byte(`{"api_key":"not-a-service-account"}`)), "not a service account's JSON key file", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			tlsConfig := fake.TLS()
			if strings.Contains(tc.name, "project") {
				tlsConfig = forbid.TLS()
			}
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", tc.cat, "veo-vertex"}, env(nil), &out, &errOut, tlsConfig)
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err != nil) != tc.fails || !strings.Contains(text, tc.want) {
				t.Errorf("check: %v\n%s; want %q", err, text, tc.want)
			}
			if strings.Contains(text, "PRIVATE KEY") || strings.Contains(text, "ya29.") || strings.Contains(text, "not-a-service-account") {
				t.Errorf("a key or token is in the output: %s", text)
			}
		})
	}
	for _, f := range []*vertexfake.Server{fake, forbid} {
		if v := f.Violations(); len(v) > 0 {
			t.Errorf("wire format: %v", v)
		}
		if f.Jobs() != 0 {
			t.Error("the check made a job")
		}
	}
}

// An account with a storage_uri has Veo write its videos to the bucket: the create names it,
// the operation names the object, and the service reads it from Cloud Storage's JSON API
// (storage_url, here the fake's) with the account's token, stores, measures and charges it.
func TestVertexAccountWithAStorageURIReadsItsVideosFromTheBucket(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 8, Container: "mp4", Text: "gcs"}, clip); err != nil {
		t.Fatal(err)
	}
	fake := vertexfake.Start(vertexfake.Config{Clip: clip})
	t.Cleanup(fake.Close)
	cat := vertexCatalogWith(t, t.TempDir(), fake, fake.KeyJSON(), "    storage_uri: gs://mediagen-veo/out/\n    storage_url: "+fake.Base()+"\n")
	m := NewMain(env(nil), io.Discard, io.Discard)
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--catalog", cat)
	task := e.wait(e.create(`{"model":"demo-video-fast","prompt":"to a bucket","metadata":{"ratio":"16:9","duration":8}}`))
	if task.Status != "completed" {
		t.Fatalf("task ended %s %+v", task.Status, task.Error)
	}
	if _, info := e.download(task.Metadata.URL, "gcs.mp4"); info.Width != 320 || task.Usage == nil || task.Usage.CompletionTokens != billing.NativeTokens(info.Width, info.Height, info.FPS, info.Duration) {
		t.Errorf("result %+v usage %+v", info, task.Usage)
	}
	if p, _ := fake.Body("to a bucket")["parameters"].(map[string]any); p["storageUri"] != "gs://mediagen-veo/out/" {
		t.Errorf("parameters %v", p)
	}
	if fake.ObjectReads() < 1 || fake.JobsFor("to a bucket") != 1 {
		t.Errorf("object reads %d, jobs %d", fake.ObjectReads(), fake.JobsFor("to a bucket"))
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}

// A reload refuses to move a vertex account to another project, location or storage_uri:
// the operations of its tasks in flight, and their videos, live at the old ones.
func TestReloadRefusesMovingAVertexAccount(t *testing.T) {
	t.Parallel()
	acc := catalog.UpstreamAccount{Name: "veo-vertex", Kind: catalog.KindVertex, BaseURL: "https://us-central1-aiplatform.googleapis.com",
		Project: "p-one", Location: "us-central1", StorageURI: "gs://b/x/"}
	old := &catalog.Catalog{Upstreams: []*catalog.UpstreamAccount{&acc}}
	for _, tc := range []struct {
		name string
		edit func(*catalog.UpstreamAccount)
		want bool
	}{
		{"a new project", func(a *catalog.UpstreamAccount) { a.Project = "p-two" }, true},
		{"a new location", func(a *catalog.UpstreamAccount) { a.Location = "europe-west4" }, true},
		{"a new storage_uri", func(a *catalog.UpstreamAccount) { a.StorageURI = "gs://b/y/" }, true},
		{"a new token_url", func(a *catalog.UpstreamAccount) { a.TokenURL = "https://oauth2.example.com/token" }, false},
	} {
		next := acc
		tc.edit(&next)
		got := accountChanges(old, &catalog.Catalog{Upstreams: []*catalog.UpstreamAccount{&next}})
		if (len(got) == 1 && strings.Contains(got[0], "project, location or storage_uri changes")) != tc.want || !tc.want && len(got) != 0 {
			t.Errorf("%s: %v", tc.name, got)
		}
	}
}
