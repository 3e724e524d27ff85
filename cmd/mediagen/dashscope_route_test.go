package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/money"
	"mediagen/internal/provider/ark"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/provider/dashscope/dashscopefake"
)

// TestRouteAcrossArkAndDashScopeFallsBackAndSpillsOver routes one alias across four accounts
// of two kinds, in priority order: an Ark account whose key is refused (401), a DashScope
// account that drops every create before making a job (its task list then answers that the
// task has no job there, so the task may move on), an Ark account with room for two jobs at
// once, and a DashScope account that works. Every task completes with exactly one paid job over
// the four, charged the tokens of its measured video; the full Ark account's overflow spills
// to DashScope; the ledger balances.
func TestRouteAcrossArkAndDashScopeFallsBackAndSpillsOver(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through four fake upstream accounts")
	}
	tasks := sizeFromEnv(t, "MEDIAGEN_ROUTE_TASKS", 24)
	tools := requireTools(t)
	dir := t.TempDir()
	clip := colorClip(t, dir, "out.mp4", 160, 90, 12, 5)
	tokens := billing.NativeTokens(160, 90, 12, 5) // what the stored clip implies; Ark reports it
	arkBroken := arkfake.Start(arkfake.Config{Key: "another-key", Clip: clip, Tokens: tokens})
	wanDropping := dashscopefake.Start(dashscopefake.Config{Key: dashscopeTestKey, Clip: clip, DropBeforeJob: true})
	arkFull := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: tokens, Polls: 3})
	wanMain := dashscopefake.Start(dashscopefake.Config{Key: dashscopeTestKey, Clip: clip})
	for _, c := range []interface{ Close() }{arkBroken, wanDropping, arkFull, wanMain} {
		t.Cleanup(c.Close)
	}
	roots := x509.NewCertPool()
	roots.AddCert(arkBroken.Certificate())
	roots.AddCert(arkFull.Certificate())
	roots.AddCert(wanDropping.Certificate())
	roots.AddCert(wanMain.Certificate())
	accounts := "" +
		"  - name: ark-broken\n    kind: ark\n    base_url: " + arkBroken.Base() + "\n    api_key_env: ARK_TEST_KEY\n" +
		"  - name: wan-dropping\n    kind: dashscope\n    base_url: " + wanDropping.Base() + "\n    api_key_env: DASHSCOPE_TEST_KEY\n    breaker: {failures: 2, cooldown: 30s}\n" +
		"  - name: ark-full\n    kind: ark\n    base_url: " + arkFull.Base() + "\n    api_key_env: ARK_TEST_KEY\n    max_in_flight: 2\n" +
		"  - name: wan-main\n    kind: dashscope\n    base_url: " + wanMain.Base() + "\n    api_key_env: DASHSCOPE_TEST_KEY\n"
	path := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{"demo-video-fast": "ark-broken"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	routed := strings.Replace(string(b), "upstream: ark-broken", "upstreams: [ark-broken, wan-dropping, ark-full, wan-main]", 1)
	// The demo key's limits would refuse a bench's 500 creates at once: raise them.
	routed = strings.NewReplacer("    requests_per_second: 100\n    burst: 200\n", "    requests_per_second: 1000\n    burst: 2000\n",
		"    video_tasks_in_flight: 200\n", "    video_tasks_in_flight: 1000\n").Replace(routed)
	if err := os.WriteFile(path, []byte(routed), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Load(path); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey, "DASHSCOPE_TEST_KEY": dashscopeTestKey}), io.Discard, &logs)
	m.FetchTLS = &tls.Config{RootCAs: roots}
	e := startRemote(t, m, dir, tools, 1000*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "8", "--catalog", path)

	// A request some of the alias's accounts cannot serve goes to those that can: 4 s is
	// Ark's, not Wan's, so it runs on Ark alone.
	arkOnly := e.create(`{"model":"demo-video-fast","prompt":"ark only","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`)
	start := time.Now()
	ids := make([]string, tasks)
	for i := range ids {
		ids[i] = e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"routed %d","metadata":{"duration":5,"resolution":"480p","ratio":"16:9"}}`, i))
	}
	var wg sync.WaitGroup
	ended := make([]apiTask, tasks)
	sem := make(chan struct{}, 8)
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
	elapsed := time.Since(start)
	perAccount := map[string]int{}
	completed := 0
	for i, id := range ids {
		task := ended[i]
		if task.Status == "completed" {
			completed++
		}
		if task.Status != "completed" || task.Usage == nil || task.Usage.CompletionTokens != tokens {
			t.Errorf("task %d (%s) ended %s %+v\n%s", i, id, task.Status, task.Error, linesWith(logs.String(), id))
		}
		jobs := map[string]int{
			"ark-broken": arkBroken.JobsFor(ark.Tag(id + ":gen")), "ark-full": arkFull.JobsFor(ark.Tag(id + ":gen")),
			"wan-dropping": wanDropping.JobsFor(fmt.Sprintf("routed %d", i)), "wan-main": wanMain.JobsFor(fmt.Sprintf("routed %d", i)),
		}
		n := 0
		for acct, k := range jobs {
			n += k
			perAccount[acct] += k
		}
		if n != 1 {
			t.Errorf("task %d made %d paid jobs over the four accounts (%v), want exactly 1", i, n, jobs)
		}
	}
	fallbacks, waits := routeMetrics(t, m)
	t.Logf("ROUTING %d tasks in %s: %d completed, %d failed\n  paid jobs: ark-broken %d, wan-dropping %d, ark-full %d, wan-main %d\n"+
		"  ark-broken 401s %d; wan-dropping creates dropped before a job, found absent in %d task-list reads\n  fallbacks by reason: %v\n  slot waits: %v",
		tasks, elapsed.Round(time.Millisecond), completed, tasks-completed, perAccount["ark-broken"], perAccount["wan-dropping"], perAccount["ark-full"],
		perAccount["wan-main"], arkBroken.Refused(), wanDropping.Lists(), fallbacks, waits)
	if perAccount["ark-full"] == 0 || perAccount["wan-main"] == 0 {
		t.Errorf("jobs per account %v: the full Ark account's overflow should spill to DashScope", perAccount)
	}
	if wanDropping.Lists() == 0 {
		t.Error("a dropped create on DashScope moved on without asking the account's task list")
	}
	for _, f := range []*dashscopefake.Server{wanDropping, wanMain} {
		for _, v := range f.Violations() {
			t.Errorf("wire format: %s", v)
		}
	}
	if task := e.wait(arkOnly); task.Status != "completed" || wanDropping.JobsFor("ark only")+wanMain.JobsFor("ark only") != 0 ||
		arkBroken.JobsFor(ark.Tag(arkOnly+":gen"))+arkFull.JobsFor(ark.Tag(arkOnly+":gen")) != 1 {
		t.Errorf("the 4 s task Wan cannot make ended %s %+v; want it completed on Ark alone, one job", task.Status, task.Error)
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
