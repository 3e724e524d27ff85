package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/provider/runway/runwayfake"
)

// One alias routed over [runway-limited, runway-full, ark-main] (priority; 12 tasks,
// MEDIAGEN_ROUTE_TASKS sets another number): the first Runway account answers every
// create 429 (no job made), the second has room for one job at a time, and Ark takes the
// rest. Every task completes with exactly one paid job over the three fakes; the rate-limited
// account made none; tasks spill over from the full Runway account to Ark; each is charged the
// tokens of its stored video whichever kind ran it; a request one of the kinds cannot serve
// is refused at submission.
func TestRouteAcrossRunwayAndArkFallsBackWithOnePaidJobPerTask(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "r"}, clip); err != nil {
		t.Fatal(err)
	}
	const tokens = 169 // 160×90×12×1/1024: what the stored clip implies; Ark reports it
	tasks := sizeFromEnv(t, "MEDIAGEN_ROUTE_TASKS", 12)
	limited := runwayfake.Start(runwayfake.Config{Key: runwayTestKey, Clip: clip, RateLimit: 1})
	full := runwayfake.Start(runwayfake.Config{Key: runwayTestKey, Clip: clip, Polls: 3})
	arkf := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: tokens})
	roots := x509.NewCertPool()
	for _, c := range []interface{ Close() }{limited, full, arkf} {
		t.Cleanup(c.Close)
	}
	roots.AddCert(limited.Certificate())
	roots.AddCert(full.Certificate())
	roots.AddCert(arkf.Certificate())
	accounts := fmt.Sprintf("  - name: runway-limited\n    kind: runway\n    base_url: %s\n    api_key_env: RUNWAY_TEST_KEY\n"+
		"  - name: runway-full\n    kind: runway\n    base_url: %s\n    api_key_env: RUNWAY_TEST_KEY\n    max_in_flight: 1\n"+
		"  - name: ark-main\n    kind: ark\n    base_url: %s\n    api_key_env: ARK_TEST_KEY\n", limited.Base(), full.Base(), arkf.Base())
	path := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{"demo-video-fast": "runway-limited"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	routed := strings.NewReplacer("upstream: runway-limited", "upstreams: [runway-limited, runway-full, ark-main]",
		"model: sandbox-video-fast-2.0", "model: gen4.5",
		// The demo key's limits would refuse a bench's hundreds of creates at once: raise them.
		"    requests_per_second: 100\n    burst: 200\n", "    requests_per_second: 1000\n    burst: 2000\n",
		"    video_tasks_in_flight: 200\n", "    video_tasks_in_flight: 1000\n").Replace(string(b))
	if err := os.WriteFile(path, []byte(routed), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey, "RUNWAY_TEST_KEY": runwayTestKey}), io.Discard, &logs)
	m.FetchTLS = &tls.Config{RootCAs: roots}
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "4", "--catalog", path)

	// 480p: Ark makes it, Runway does not; such a request goes to Ark alone.
	arkOnly := e.create(`{"model":"demo-video-fast","prompt":"ark only","metadata":{"duration":5,"resolution":"480p","ratio":"16:9"}}`)
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"mixed %d","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`, i))
	}
	onFull, onArk := 0, 0
	for i, id := range ids {
		task := e.wait(id)
		if task.Status != "completed" || task.Usage == nil || task.Usage.CompletionTokens != tokens {
			t.Errorf("task %d ended %s %+v usage %+v\n%s", i, task.Status, task.Error, task.Usage, linesWith(logs.String(), id))
		}
		prompt := fmt.Sprintf("mixed %d", i)
		l, f, a := limited.JobsFor(prompt), full.JobsFor(prompt), arkf.JobsFor(ark.Tag(id+":gen"))
		if l+f+a != 1 || l != 0 {
			t.Errorf("task %d made %d jobs on runway-limited, %d on runway-full, %d on ark-main; want exactly one, none on the rate-limited account", i, l, f, a)
		}
		onFull += f
		onArk += a
	}
	t.Logf("%d tasks on runway-full, %d on ark-main; runway-limited refused %d creates", onFull, onArk, limited.RateLimited())
	if onFull == 0 || onArk == 0 || limited.RateLimited() == 0 {
		t.Errorf("the tasks did not fall back and spill over: %d on runway-full, %d on ark-main, %d rate-limited", onFull, onArk, limited.RateLimited())
	}
	for _, f := range []*runwayfake.Server{limited, full} {
		for _, v := range f.Violations() {
			t.Errorf("wire format: %s", v)
		}
	}
	if task := e.wait(arkOnly); task.Status != "completed" || limited.JobsFor("ark only")+full.JobsFor("ark only") != 0 ||
		arkf.JobsFor(ark.Tag(arkOnly+":gen")) != 1 {
		t.Errorf("the 480p task Runway cannot make ended %s %+v; want it completed on Ark alone, one job", task.Status, task.Error)
	}
	tenant, _ := m.cat().Tenant("demo")
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got, want := e.used(), one*money.Micros(tasks+1); got != want {
		t.Errorf("charged %s, want %s: the same measured tokens whichever kind ran a task", got, want)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
