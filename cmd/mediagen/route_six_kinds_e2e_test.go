package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
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
	"mediagen/internal/provider/dashscope/dashscopefake"
	"mediagen/internal/provider/gemini/geminifake"
	"mediagen/internal/provider/kling"
	"mediagen/internal/provider/kling/klingfake"
	"mediagen/internal/provider/minimax/minimaxfake"
	"mediagen/internal/provider/runway/runwayfake"
)

// sixKinds are the accounts of TestRouteAcrossSixKindsMakesOnePaidJobPerTask in the alias's
// priority order, each of another kind, each with its own model and its own cost:
//   - ark-refused: its key is refused (401): no job, the task moves on;
//   - minimax-limited: answers every create 429 with Retry-After 1 s before any job;
//   - wan-full: room for one job at a time (max_in_flight 1), so the rest spill over;
//   - kling-lossy: makes every job and loses every create's answer (a 500), so the task finds
//     its job by its external_task_id instead of making a second;
//   - veo-main, runway-main: working accounts.
var sixKinds = []struct {
	name, kind, model, cost string
	seconds                 []int // the durations of the test's tasks the account can make
	vendorSeconds           bool  // its cost counts the seconds the vendor billed, not the measured ones
}{
	{"ark-refused", "ark", "seedance-1-0-pro", "{currency: USD, per_million_tokens: 2}", []int{5, 10}, false},
	{"minimax-limited", "minimax", "MiniMax-Hailuo-02", "{currency: USD, per_second: {720p: 0.045}}", []int{10}, false},
	{"wan-full", "dashscope", "wan2.5-t2v-preview", "{currency: USD, per_second: {720p: 0.10}}", []int{5, 10}, true},
	{"kling-lossy", "kling", "kling-v2-1", "{currency: USD, per_second: {720p: 0.028}}", []int{5, 10}, false},
	{"veo-main", "gemini", "veo-2.0-generate-001", "{currency: USD, per_second: {720p: 0.35}}", []int{5}, false},
	{"runway-main", "runway", "gen4.5", "{currency: USD, per_second: {720p: 0.05}}", []int{5, 10}, true},
}

// TestRouteAcrossSixKindsMakesOnePaidJobPerTask routes tasks (MEDIAGEN_ROUTE_TASKS, 12 by
// default; `go run ./bench/routing -mix six-kinds` runs 500) through one alias over six
// accounts of six kinds (sixKinds). No duration is made by all six kinds, so the tasks
// alternate 5 s (not MiniMax) and 10 s (not Veo 2): each is given only the accounts that can
// make it. Every task completes with exactly one paid job over the six fakes, none on the
// refused and the rate-limited accounts; each is charged the tokens of its stored video
// whichever kind made it; the ledger balances; and the usage report, settled and rebuilt,
// gives each account its paid jobs, their charges and the operator's cost in its unit
// (tokens for Ark, measured seconds for Kling and Veo, the seconds the vendor billed for Wan
// and Runway) exactly.
func TestRouteAcrossSixKindsMakesOnePaidJobPerTask(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through six fake upstream accounts")
	}
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "r"}, clip); err != nil {
		t.Fatal(err)
	}
	const tokens = 169      // 160×90×12×1/1024: what the stored clip implies; Ark reports it
	const clipSeconds = 1.0 // its measured length: every fake serves it, whatever was asked
	tasks := sizeFromEnv(t, "MEDIAGEN_ROUTE_TASKS", 12)

	arkF := arkfake.Start(arkfake.Config{Key: "another-key", Clip: clip, Tokens: tokens})
	mmF := minimaxfake.Start(minimaxfake.Config{Key: minimaxTestKey, Clip: clip, RateLimitHTTP: 1})
	wanF := dashscopefake.Start(dashscopefake.Config{Key: dashscopeTestKey, Clip: clip, Polls: 3})
	klF := klingfake.Start(klingfake.Config{AccessKey: klingTestAccess, SecretKey: klingTestSecret, Clip: clip, LoseAnswers: true})
	veoF := geminifake.Start(geminifake.Config{Key: geminiTestKey, Clip: clip})
	rwF := runwayfake.Start(runwayfake.Config{Key: runwayTestKey, Clip: clip})
	fakes := []interface {
		Close()
		Base() string
		Certificate() *x509.Certificate
		Violations() []string
	}{arkF, mmF, wanF, klF, veoF, rwF}
	roots := x509.NewCertPool()
	var accounts strings.Builder
	for i, f := range fakes {
		t.Cleanup(f.Close)
		roots.AddCert(f.Certificate())
		a := sixKinds[i]
		fmt.Fprintf(&accounts, "  - name: %s\n    kind: %s\n    base_url: %s\n    cost: %s\n", a.name, a.kind, f.Base(), a.cost)
		switch a.kind {
		case "kling":
			accounts.WriteString("    access_key_env: KLING_TEST_ACCESS\n    secret_key_env: KLING_TEST_SECRET\n")
		default:
			fmt.Fprintf(&accounts, "    api_key_env: %s_TEST_KEY\n", strings.ToUpper(a.kind))
		}
		if a.name == "wan-full" {
			accounts.WriteString("    max_in_flight: 1\n")
		}
	}
	path := demoCatalogWith(t, t.TempDir(), accounts.String(), map[string]string{"demo-video-fast": "ark-refused"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for _, a := range sixKinds {
		list = append(list, "{name: "+a.name+", model: "+a.model+"}")
	}
	routed := strings.NewReplacer("upstream: ark-refused", "upstreams: ["+strings.Join(list, ", ")+"]",
		// The demo key's limits would refuse a bench's hundreds of creates at once: raise them.
		"    requests_per_second: 100\n    burst: 200\n", "    requests_per_second: 1000\n    burst: 2000\n",
		"    video_tasks_in_flight: 200\n", "    video_tasks_in_flight: 1000\n").Replace(string(b))
	if routed == string(b) {
		t.Fatal("demo catalog layout changed")
	}
	if err := os.WriteFile(path, []byte(routed), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey, "MINIMAX_TEST_KEY": minimaxTestKey, "DASHSCOPE_TEST_KEY": dashscopeTestKey,
		"KLING_TEST_ACCESS": klingTestAccess, "KLING_TEST_SECRET": klingTestSecret, "GEMINI_TEST_KEY": geminiTestKey,
		"RUNWAY_TEST_KEY": runwayTestKey}), io.Discard, &logs)
	m.FetchTLS = &tls.Config{RootCAs: roots}
	e := startRemote(t, m, dir, tools, 1000*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "8", "--catalog", path)

	start := time.Now()
	ids := make([]string, tasks)
	secs := make([]int, tasks)
	for i := range ids {
		secs[i] = []int{5, 10}[i%2]
		ids[i] = e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"six %d","metadata":{"duration":%d,"resolution":"720p","ratio":"16:9"}}`, i, secs[i]))
	}
	ended := make([]apiTask, tasks)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // pollers within the demo key's request rate
	for i, id := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			ended[i] = e.waitWithin(id, max(3*time.Minute, time.Duration(tasks)*time.Second))
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)

	perAccount := map[string]int{}
	cost := map[string]money.Micros{} // the operator's cost each account's jobs should have
	completed := 0
	for i, id := range ids {
		task := ended[i]
		if task.Status == "completed" {
			completed++
		}
		if task.Status != "completed" || task.Usage == nil || task.Usage.CompletionTokens != tokens {
			t.Errorf("task %d (%d s) ended %s %+v usage %+v\n%s", i, secs[i], task.Status, task.Error, task.Usage, linesWith(logs.String(), id))
			continue
		}
		prompt := fmt.Sprintf("six %d", i)
		jobs := map[string]int{
			"ark-refused": arkF.JobsFor(ark.Tag(id + ":gen")), "minimax-limited": mmF.JobsFor(prompt), "wan-full": wanF.JobsFor(prompt),
			"kling-lossy": klF.JobsFor(kling.ExternalID(id + ":gen")), "veo-main": veoF.JobsFor(prompt), "runway-main": rwF.JobsFor(prompt),
		}
		n := 0
		for _, a := range sixKinds {
			k := jobs[a.name]
			n += k
			if k == 0 {
				continue
			}
			perAccount[a.name] += k
			if !slices.Contains(a.seconds, secs[i]) {
				t.Errorf("task %d (%d s) made a job on %s, which cannot make %d s", i, secs[i], a.name, secs[i])
			}
			cost[a.name] += sixKindsCost(t, cat, a.name, a.vendorSeconds, tokens, secs[i], clipSeconds)
		}
		if n != 1 {
			t.Errorf("task %d (%d s) made %d paid jobs over the six accounts (%v), want exactly 1", i, secs[i], n, jobs)
		}
	}
	if perAccount["ark-refused"]+perAccount["minimax-limited"] != 0 {
		t.Errorf("jobs on the refused or rate-limited account: %v", perAccount)
	}
	if tasks >= 12 {
		for _, name := range []string{"wan-full", "kling-lossy", "veo-main", "runway-main"} {
			if perAccount[name] == 0 {
				t.Errorf("no task ran on %s (%v): the tasks did not fall back and spill over across the kinds", name, perAccount)
			}
		}
	}
	if arkF.Refused() == 0 || mmF.RateLimited() == 0 || klF.LostAnswers() == 0 {
		t.Errorf("401s %d, 429s %d, lost answers %d: the faults were not exercised", arkF.Refused(), mmF.RateLimited(), klF.LostAnswers())
	}
	for i, f := range fakes {
		for _, v := range f.Violations() {
			t.Errorf("%s wire format: %s", sixKinds[i].name, v)
		}
	}
	tenant, _ := m.cat().Tenant("demo")
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got, want := e.used(), one*money.Micros(completed); got != want {
		t.Errorf("charged %s, want %s (%d completed × %s)", got, want, completed, one)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
	names := make([]string, len(sixKinds))
	for i, a := range sixKinds {
		names[i] = a.name
	}
	checkUsageByAccount(t, m, start, names, perAccount, one, cost)

	fallbacks, waits := routeMetrics(t, m)
	var lines []string
	var charged, costs money.Micros
	for _, a := range sixKinds {
		lines = append(lines, fmt.Sprintf("  %-16s %-9s paid jobs %4d  cost USD %s", a.name, a.kind, perAccount[a.name], cost[a.name]))
		charged += one * money.Micros(perAccount[a.name])
		costs += cost[a.name]
	}
	t.Logf("ROUTING %d tasks (5 s and 10 s) in %s over six kinds: %d completed, %d failed\n%s\n"+
		"  ark-refused 401s %d; minimax-limited 429s %d; kling-lossy lost create answers %d; wan-full peak one job\n"+
		"  fallbacks by reason: %v\n  slot waits: %v\n  charged USD %s, cost USD %s, margin USD %s (exact per account, settled and rebuilt)",
		tasks, elapsed.Round(time.Millisecond), completed, tasks-completed, strings.Join(lines, "\n"),
		arkF.Refused(), mmF.RateLimited(), klF.LostAnswers(), fallbacks, waits, charged, costs, charged-costs)
}

// sixKindsCost is the operator's cost of one job on account name, from its catalog cost
// block: per million tokens of the stored video, or per second at 720p of the measured video
// (or, for a kind whose vendor reports the seconds it billed, of the requested duration,
// which the fakes bill).
func sixKindsCost(t *testing.T, cat *catalog.Catalog, name string, vendorSeconds bool, tokens int64, requested int, measured float64) money.Micros {
	t.Helper()
	for _, u := range cat.Upstreams {
		if u.Name != name {
			continue
		}
		if r, ok := u.Cost.TokenRate(); ok {
			c, _ := billing.TokenCost(r, tokens)
			return c
		}
		r, ok := u.Cost.SecondRate("720p")
		if !ok {
			t.Fatalf("%s has no cost at 720p", name)
		}
		s := measured
		if vendorSeconds {
			s = float64(requested)
		}
		c, _ := billing.SecondsCost(r, billing.SecondsToMicros(s))
		return c
	}
	t.Fatalf("no account %s", name)
	return 0
}
