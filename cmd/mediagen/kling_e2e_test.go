package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
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
	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/kling"
	"mediagen/internal/provider/kling/klingfake"
)

const (
	klingTestAccess = "ak-kling-e2e-3b8d1f"
	klingTestSecret = "sk-kling-e2e-9c2e7a4d60"
)

// klingEnv is the environment a kling account's keys are read from.
func klingEnv() func(string) string {
	return env(map[string]string{"KLING_TEST_ACCESS": klingTestAccess, "KLING_TEST_SECRET": klingTestSecret})
}

// klingCatalog is the demo catalog with demo-video-fast bound to a kling account at base (its
// model kling-v2-1); extra lines (indented as the account's fields) are added to the account.
func klingCatalog(t *testing.T, dir, base string, extra ...string) string {
	t.Helper()
	account := "  - name: kling-main\n    kind: kling\n    base_url: " + base +
		"\n    access_key_env: KLING_TEST_ACCESS\n    secret_key_env: KLING_TEST_SECRET\n" + strings.Join(extra, "")
	path := demoCatalogWith(t, dir, account, map[string]string{"demo-video-fast": "kling-main"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("model: sandbox-video-fast-2.0"), []byte("model: kling-v2-1"), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Load(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// trustBoth is a TLS configuration that trusts two test servers.
func trustBoth(a, b *x509.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	pool.AddCert(a)
	pool.AddCert(b)
	return &tls.Config{RootCAs: pool}
}

// A text task and a first/last-frame task on an alias bound to a Kling account run through
// the fake Kling (klingfake: JWT and fields checked against the reference): each result is
// copied and measured, the charge is the tokens the stored video implies × the rate (Kling
// reports no usage), one upstream task each, keyed by the task's external_task_id, a request
// Kling cannot serve is refused at submission, and neither key appears anywhere the service
// wrote.
func TestKlingAccountRunsTasksAndChargesTheMeasuredVideo(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 12, Duration: 5, Container: "mp4", Text: "kling"}, clip); err != nil {
		t.Fatal(err)
	}
	fake := klingfake.Start(klingfake.Config{AccessKey: klingTestAccess, SecretKey: klingTestSecret, Clip: clip})
	t.Cleanup(fake.Close)
	frame := pngOf(t, 64, 36)
	cdn := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png") // a client's frame image, on its own CDN
		_, _ = w.Write(frame)
	}))
	t.Cleanup(cdn.Close)

	// Without the secret key, serve does not start, and says which account and variable.
	m0 := NewMain(env(map[string]string{"KLING_TEST_ACCESS": klingTestAccess}), io.Discard, io.Discard)
	catPath := klingCatalog(t, t.TempDir(), fake.Base())
	if err := m0.ParseFlags([]string{"--listen", "127.0.0.1:0", "--public-url", "https://mediagen.example.com", "--data-dir", t.TempDir(), "--catalog", catPath}); err != nil {
		t.Fatal(err)
	}
	err := m0.Run(context.Background())
	_ = m0.Close()
	if err == nil || !strings.Contains(err.Error(), "kling-main") || !strings.Contains(err.Error(), "KLING_TEST_SECRET") {
		t.Fatalf("serve without the secret key: %v; want it refused naming the account and the variable", err)
	}

	var out, logs bytes.Buffer
	m := NewMain(klingEnv(), &out, &logs)
	m.FetchTLS = trustBoth(fake.Certificate(), cdn.Certificate())
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "debug", "--catalog", catPath)

	for body, param := range map[string]string{
		`{"model":"demo-video-fast","prompt":"x","metadata":{"duration":8,"resolution":"720p"}}`:   "metadata.duration",
		`{"model":"demo-video-fast","prompt":"x","metadata":{"duration":5,"resolution":"480p"}}`:   "metadata.resolution",
		`{"model":"demo-video-fast","prompt":"x","metadata":{"duration":5,"output_format":"mov"}}`: "metadata.output_format",
	} {
		if status, b := e.call("POST", "/v1/videos", body); status != 400 || !bytes.Contains(b, []byte(`"param":"`+param+`"`)) {
			t.Errorf("%s: %d %s; want 400 on %s", body, status, b, param)
		}
	}
	tenant, _ := m.cat().Tenant("demo")
	measured := billing.NativeTokens(320, 180, 12, 5)
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), measured)
	ref := cdn.URL + "/frame.png"
	ids := []string{
		e.create(`{"model":"demo-video-fast","prompt":"a red kite","metadata":{"duration":5,"resolution":"720p","ratio":"9:16"}}`),
		e.create(`{"model":"demo-video-fast","prompt":"between two frames","metadata":{"duration":5,"resolution":"720p","content":[` +
			`{"type":"image_url","role":"first_frame","image_url":{"url":"` + ref + `"}},{"type":"image_url","role":"last_frame","image_url":{"url":"` + ref + `"}}]}}`),
	}
	for _, id := range ids {
		task := e.wait(id)
		if task.Status != "completed" || task.Usage == nil || task.Usage.CompletionTokens != measured {
			t.Fatalf("task %s on the kling account: %+v %+v", id, task, task.Error)
		}
		if strings.Contains(task.Metadata.URL, fake.Base()) {
			t.Errorf("the upstream's URL reached the client: %s", task.Metadata.URL)
		}
		_, info := e.download(task.Metadata.URL, id+".mp4")
		if info.Width != 320 || !near(info.Duration, 5, 0.1) {
			t.Errorf("the copied result measures %+v", info)
		}
		if n := fake.JobsFor(kling.ExternalID(id + ":gen")); n != 1 {
			t.Errorf("task %s made %d upstream tasks", id, n)
		}
	}
	if got, want := e.used(), 2*one; got != want {
		t.Errorf("charged %s, want %s (2 × the %d tokens the video implies)", got, want, measured)
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	_, view := e.call("GET", "/v1/videos/"+ids[0], "")
	for what, text := range map[string]string{"stdout": out.String(), "the logs": logs.String(), "the task view": string(view), "the metrics": e.metrics()} {
		if strings.Contains(text, klingTestSecret) {
			t.Errorf("the secret key appears in %s", what)
		}
	}
	_ = filepath.Walk(filepath.Join(dir, "data"), func(p string, fi os.FileInfo, err error) error {
		if err != nil || fi.IsDir() {
			return nil
		}
		if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(klingTestSecret)) {
			t.Errorf("the secret key is in %s", p)
		}
		return nil
	})
}

// TestKlingFaultsEndEveryTaskWithOneJobAndTheRightMoney runs 40 tasks (MEDIAGEN_FAULT_TASKS
// sets another number) through the fake Kling failing 30% of its answers: creates refused
// with 503, 429 with and without Retry-After before any task is made, creates that make the
// task and then lose the answer (a 500, a dropped connection), reads answering 500, 429, a
// cut body or an HTML page, result links handed out already expired or answering 404. One
// task in ten is refused by Kling's content check. Every task ends with at most one upstream
// task — exactly one for a completed task, although lost answers made the service look
// again (by external_task_id) — a completed task charged the tokens its stored video
// implies, every other refunded, and the ledger balances.
func TestKlingFaultsEndEveryTaskWithOneJobAndTheRightMoney(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through a faulty fake upstream")
	}
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 5, Container: "mp4", Text: "f"}, clip); err != nil {
		t.Fatal(err)
	}
	tasks := sizeFromEnv(t, "MEDIAGEN_FAULT_TASKS", 40)
	fake := klingfake.Start(klingfake.Config{AccessKey: klingTestAccess, SecretKey: klingTestSecret, Clip: clip, FaultPercent: 30, Seed: 3,
		End: func(prompt string) string {
			if strings.HasSuffix(prompt, "0") { // tasks 0, 10, 20, …
				return klingfake.EndRefuse
			}
			return klingfake.EndSucceed
		}})
	t.Cleanup(fake.Close)
	var logs syncBuffer
	m := NewMain(klingEnv(), io.Discard, &logs)
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 1000*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "8", "--task-retry-max", "2s",
		"--catalog", klingCatalog(t, t.TempDir(), fake.Base(), "    max_in_flight: 10\n    timeout_seconds: 2\n"))
	var ids []string
	for i := 0; i < tasks; i++ {
		ids = append(ids, e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"task %d","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`, i)))
	}
	measured := billing.NativeTokens(160, 90, 12, 5)
	deadline := time.Now().Add(4*time.Minute + time.Duration(tasks)*time.Second)
	completed, refused, gaveUp := 0, 0, 0
	done := make([]bool, len(ids))
	for i, id := range ids {
		task := e.wait(id)
		switch {
		case task.Status == "completed" && task.Usage != nil && task.Usage.CompletionTokens == measured && i%10 != 0:
			completed++
			done[i] = true
		case task.Status == "failed" && i%10 == 0 && task.Error != nil && task.Error.Code == "video_generation_failed" &&
			!strings.Contains(task.Error.Message, "risk control"):
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
	t.Logf("%d completed, %d refused by the upstream, %d gave up; the fake made %d tasks, lost %d create answers, peak %d running",
		completed, refused, gaveUp, fake.Jobs(), fake.LostAnswers(), fake.Peak())
	if completed < tasks*9/10*9/10 {
		t.Errorf("%d of %d tasks completed; 30%% faults retried with backoff should complete nearly all", completed, tasks)
	}
	if fake.LostAnswers() == 0 {
		t.Error("no create lost its answer: the fault was not exercised")
	}
	if p := fake.Peak(); p > 10 || p == 0 {
		t.Errorf("the upstream had %d tasks running at once; the account allows 10", p)
	}
	for i, id := range ids {
		if n := fake.JobsFor(kling.ExternalID(id + ":gen")); n > 1 || (done[i] && n != 1) {
			t.Errorf("task %d made %d upstream tasks", i, n)
		}
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	tenant, _ := m.cat().Tenant("demo")
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), measured)
	if got, want := e.used(), one*money.Micros(completed); got != want {
		t.Errorf("charged %s, want %s (%d completed tasks × %s; failed ones refunded)", got, want, completed, one)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
