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
	"sync"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/provider/kling"
	"mediagen/internal/provider/kling/klingfake"
)

// One alias routed across kinds, [ark-broken, ark-full, kling-main]: an Ark account whose key
// is refused, an Ark account with room for two jobs, and a Kling account that loses every
// create's answer (its tasks are found again by their external_task_id). 24 tasks
// (MEDIAGEN_ROUTE_TASKS sets another number: `go run ./bench/routing -test
// TestRouteAcrossArkAndKlingFallsBackAndSpillsOver`) each
// complete with exactly one paid upstream job over the three fakes, both kinds run some,
// every charge is the tokens the stored video implies, and the ledger balances.
func TestRouteAcrossArkAndKlingFallsBackAndSpillsOver(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through three fake upstream accounts")
	}
	tasks := sizeFromEnv(t, "MEDIAGEN_ROUTE_TASKS", 24)
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 5, Container: "mp4", Text: "r"}, clip); err != nil {
		t.Fatal(err)
	}
	tokens := billing.NativeTokens(160, 90, 12, 5)
	broken := arkfake.Start(arkfake.Config{Key: "another-key", Clip: clip, Tokens: tokens})
	full := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: tokens, Polls: 3})
	kf := klingfake.Start(klingfake.Config{AccessKey: klingTestAccess, SecretKey: klingTestSecret, Clip: clip, LoseAnswers: true})
	roots := x509.NewCertPool()
	for _, c := range []*x509.Certificate{broken.Certificate(), full.Certificate(), kf.Certificate()} {
		roots.AddCert(c)
	}
	t.Cleanup(broken.Close)
	t.Cleanup(full.Close)
	t.Cleanup(kf.Close)
	accounts := "  - name: ark-broken\n    kind: ark\n    base_url: " + broken.Base() + "\n    api_key_env: ARK_TEST_KEY\n" +
		"  - name: ark-full\n    kind: ark\n    base_url: " + full.Base() + "\n    api_key_env: ARK_TEST_KEY\n    max_in_flight: 2\n" +
		"  - name: kling-main\n    kind: kling\n    base_url: " + kf.Base() + "\n    access_key_env: KLING_TEST_ACCESS\n    secret_key_env: KLING_TEST_SECRET\n" +
		"    breaker: {failures: 3, cooldown: 2s}\n"
	path := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{"demo-video-fast": "ark-broken"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// One model name for every account of the alias (an alias names one): Kling's, which the
	// Ark fake takes as any other.
	routed := strings.NewReplacer("upstream: ark-broken", "upstreams: [ark-broken, ark-full, kling-main]",
		"model: sandbox-video-fast-2.0", "model: kling-v2-1",
		// The demo key's limits would refuse a bench's hundreds of creates at once: raise them.
		"    requests_per_second: 100\n    burst: 200\n", "    requests_per_second: 1000\n    burst: 2000\n",
		"    video_tasks_in_flight: 200\n", "    video_tasks_in_flight: 1000\n").Replace(string(b))
	if err := os.WriteFile(path, []byte(routed), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Load(path); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey, "KLING_TEST_ACCESS": klingTestAccess, "KLING_TEST_SECRET": klingTestSecret}), io.Discard, &logs)
	m.FetchTLS = &tls.Config{RootCAs: roots}
	e := startRemote(t, m, dir, tools, 1000*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "8", "--catalog", path)

	// A request one of the alias's accounts cannot serve (Kling makes 5 or 10 s) is given only
	// the accounts that can: it runs on Ark, never on Kling.
	arkOnly := e.create(`{"model":"demo-video-fast","prompt":"x","metadata":{"duration":4,"resolution":"720p"}}`)
	start := time.Now()
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"routed %d","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`, i))
	}
	ended := make([]apiTask, tasks)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4) // pollers within the demo key's request rate
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ended[i] = e.wait(id)
		}()
	}
	wg.Wait()
	perAccount := map[string]int{}
	for i, id := range ids {
		if task := ended[i]; task.Status != "completed" || task.Usage == nil || task.Usage.CompletionTokens != tokens {
			t.Errorf("task %d ended %s %+v\n%s", i, task.Status, task.Error, linesWith(logs.String(), id))
		}
		jobs := map[string]int{"ark-broken": broken.JobsFor(ark.Tag(id + ":gen")), "ark-full": full.JobsFor(ark.Tag(id + ":gen")),
			"kling-main": kf.JobsFor(kling.ExternalID(id + ":gen"))}
		n := 0
		for name, k := range jobs {
			n += k
			perAccount[name] += k
		}
		if n != 1 {
			t.Errorf("task %d made %d paid upstream jobs (%v), want exactly 1", i, n, jobs)
		}
	}
	t.Logf("ROUTING %d tasks in %s over [ark-broken, ark-full, kling-main]\n"+
		"  ark-broken  paid jobs %4d  401s %d\n  ark-full    paid jobs %4d  peak running %d\n  kling-main  paid tasks %4d  peak running %d  lost create answers %d",
		tasks, time.Since(start).Round(time.Millisecond), perAccount["ark-broken"], broken.Refused(), perAccount["ark-full"], full.Peak(),
		perAccount["kling-main"], kf.Peak(), kf.LostAnswers())
	if perAccount["ark-broken"] != 0 || perAccount["ark-full"] == 0 || perAccount["kling-main"] == 0 {
		t.Errorf("tasks per account %v: want none on the refused key and some on each kind", perAccount)
	}
	for _, v := range append(full.Violations(), kf.Violations()...) {
		t.Errorf("wire format: %s", v)
	}
	if task := e.wait(arkOnly); task.Status != "completed" || kf.JobsFor(kling.ExternalID(arkOnly+":gen")) != 0 ||
		broken.JobsFor(ark.Tag(arkOnly+":gen"))+full.JobsFor(ark.Tag(arkOnly+":gen")) != 1 {
		t.Errorf("the 4 s task Kling cannot make ended %s %+v, Kling jobs %d (want it on Ark alone, one job)", task.Status, task.Error,
			kf.JobsFor(kling.ExternalID(arkOnly+":gen")))
	}
	tenant, _ := m.cat().Tenant("demo")
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got, want := e.used(), one*money.Micros(tasks+1); got != want {
		t.Errorf("charged %s, want %s", got, want)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
