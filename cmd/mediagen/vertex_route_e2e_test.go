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
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/provider/vertex/vertexfake"
)

// One alias routed over [vertex-limited, vertex-full, ark-main] (priority; 12 tasks,
// MEDIAGEN_ROUTE_TASKS sets another number: `go run ./bench/routing -test
// TestRouteAcrossVertexAndArkFallsBackWithOnePaidJobPerTask -tasks 500`): the first Vertex AI
// account answers every create 429 RESOURCE_EXHAUSTED (no job made), the second has room for
// one job at a time, and Ark takes the rest. Every task completes with exactly one paid job
// over the three fakes; the rate-limited account made none; tasks spill over from the full
// Vertex AI account to Ark; each is charged the tokens of its stored video whichever kind ran
// it; a request one of the kinds cannot make (Veo's 5 s) runs on Ark alone; each Vertex AI
// account fetched one token for all its calls.
func TestRouteAcrossVertexAndArkFallsBackWithOnePaidJobPerTask(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "r"}, clip); err != nil {
		t.Fatal(err)
	}
	const tokens = 169 // 160×90×12×1/1024: what the stored clip implies; Ark reports it
	tasks := sizeFromEnv(t, "MEDIAGEN_ROUTE_TASKS", 12)
	limited := vertexfake.Start(vertexfake.Config{Clip: clip, RateLimit: true})
	full := vertexfake.Start(vertexfake.Config{Clip: clip, Polls: 3})
	arkf := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: tokens})
	roots := x509.NewCertPool()
	for _, c := range []interface{ Close() }{limited, full, arkf} {
		t.Cleanup(c.Close)
	}
	roots.AddCert(limited.Certificate())
	roots.AddCert(full.Certificate())
	roots.AddCert(arkf.Certificate())
	keys := t.TempDir()
	keyFile := func(f *vertexfake.Server, name string) string {
		p := filepath.Join(keys, name+".json")
		if err := os.WriteFile(p, f.KeyJSON(), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	accounts := vertexAccount("vertex-limited", limited.Base(), keyFile(limited, "limited"), "") +
		vertexAccount("vertex-full", full.Base(), keyFile(full, "full"), "    max_in_flight: 1\n") +
		fmt.Sprintf("  - name: ark-main\n    kind: ark\n    base_url: %s\n    api_key_env: ARK_TEST_KEY\n", arkf.Base())
	path := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{"demo-video-fast": "vertex-limited"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	routed := strings.NewReplacer("upstream: vertex-limited", "upstreams: [vertex-limited, vertex-full, ark-main]",
		"model: sandbox-video-fast-2.0", "model: veo-3.0-generate-001",
		// The demo key's limits would refuse a bench's hundreds of creates at once: raise them.
		"    requests_per_second: 100\n    burst: 200\n", "    requests_per_second: 1000\n    burst: 2000\n",
		"    video_tasks_in_flight: 200\n", "    video_tasks_in_flight: 1000\n").Replace(string(b))
	if err := os.WriteFile(path, []byte(routed), 0o644); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), io.Discard, &logs)
	m.FetchTLS = &tls.Config{RootCAs: roots}
	e := startRemote(t, m, dir, tools, 1000*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "4", "--catalog", path)

	// 5 s: Ark makes it, Veo 3 does not; such a request goes to Ark alone.
	arkOnly := e.create(`{"model":"demo-video-fast","prompt":"ark only","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`)
	start := time.Now()
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"mixed %d","metadata":{"duration":8,"resolution":"720p","ratio":"16:9"}}`, i))
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
			t.Errorf("task %d made %d jobs on vertex-limited, %d on vertex-full, %d on ark-main; want exactly one, none on the rate-limited account", i, l, f, a)
		}
		onFull += f
		onArk += a
	}
	t.Logf("ROUTING %d tasks in %s over [vertex-limited, vertex-full, ark-main]\n"+
		"  vertex-limited  paid jobs %4d  429s %d\n  vertex-full     paid jobs %4d\n  ark-main        paid jobs %4d",
		tasks, time.Since(start).Round(time.Millisecond), limited.Jobs(), limited.RateLimited(), onFull, onArk)
	if onFull == 0 || onArk == 0 || limited.RateLimited() == 0 {
		t.Errorf("the tasks did not fall back and spill over: %d on vertex-full, %d on ark-main, %d rate-limited", onFull, onArk, limited.RateLimited())
	}
	for _, f := range []*vertexfake.Server{limited, full} {
		for _, v := range f.Violations() {
			t.Errorf("wire format: %s", v)
		}
		if n := f.TokensIssued(); n != 1 {
			t.Errorf("%d tokens fetched by one account; want one kept for all its calls", n)
		}
	}
	if task := e.wait(arkOnly); task.Status != "completed" || limited.JobsFor("ark only")+full.JobsFor("ark only") != 0 ||
		arkf.JobsFor(ark.Tag(arkOnly+":gen")) != 1 {
		t.Errorf("the 5 s task Veo 3 cannot make ended %s %+v; want it completed on Ark alone, one job", task.Status, task.Error)
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
