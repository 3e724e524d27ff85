package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
	"mediagen/internal/store"
)

// routeAccounts are the four Ark accounts of the routing test, in the alias's priority order:
// one whose key is refused (401), one that rate-limits every create (429, Retry-After 1 s),
// one with room for two jobs at once, and one that makes every job and loses every create's
// answer (a 500), so its tasks must find their jobs there by their tag.
var routeAccounts = []string{"ark-broken", "ark-limited", "ark-full", "ark-lossy"}

// routeCostPerMTok is what each of routeAccounts costs the operator, in USD per million
// completion tokens: different on each, so a task's cost counted on the wrong account shows.
var routeCostPerMTok = map[string]string{"ark-broken": "2", "ark-limited": "0.5", "ark-full": "0.8", "ark-lossy": "0.6"}

// TestRouteAcrossFourAccountsMakesOnePaidJobPerTask sends tasks (MEDIAGEN_ROUTE_TASKS, 40 by
// default; bench/routing runs 500) through one alias routed across the four accounts. Every
// task must complete — some account always has capacity — with exactly one paid upstream job
// over all four fakes, charged its tokens, the ledger balanced. It logs the figures: tasks per
// account, fallbacks by reason, waits.
func TestRouteAcrossFourAccountsMakesOnePaidJobPerTask(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through four fake upstream accounts")
	}
	tasks := 40
	if v, err := strconv.Atoi(os.Getenv("MEDIAGEN_ROUTE_TASKS")); err == nil && v > 0 {
		tasks = v
	}
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "r"}, clip); err != nil {
		t.Fatal(err)
	}
	const tokens = 169 // 160×90×12×1/1024, what the stored clip implies; the fakes report it
	fakes := map[string]*arkfake.Server{
		"ark-broken":  arkfake.Start(arkfake.Config{Key: "another-key", Clip: clip, Tokens: tokens}),
		"ark-limited": arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: tokens, RateLimit: 1}),
		"ark-full":    arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: tokens, Polls: 3}),
		"ark-lossy":   arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: tokens, LoseAnswers: true}),
	}
	roots := x509.NewCertPool()
	var accounts strings.Builder
	for _, name := range routeAccounts {
		f := fakes[name]
		t.Cleanup(f.Close)
		roots.AddCert(f.Certificate())
		fmt.Fprintf(&accounts, "  - name: %s\n    kind: ark\n    base_url: %s\n    api_key_env: ARK_TEST_KEY\n    cost: {currency: USD, per_million_tokens: %s}\n",
			name, f.Base(), routeCostPerMTok[name])
		switch name {
		case "ark-full":
			accounts.WriteString("    max_in_flight: 2\n")
		case "ark-lossy": // its lost answers are transient failures: its breaker opens, often
			accounts.WriteString("    breaker: {failures: 3, cooldown: 2s}\n")
		}
	}
	path := demoCatalogWith(t, t.TempDir(), accounts.String(), map[string]string{"demo-video-fast": "ark-broken"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	routed := strings.Replace(string(b), "upstream: ark-broken", "upstreams: ["+strings.Join(routeAccounts, ", ")+"]", 1)
	// The demo key's limits would refuse a bench's 500 creates at once: raise them.
	routed = strings.NewReplacer("    requests_per_second: 100\n    burst: 200\n", "    requests_per_second: 1000\n    burst: 2000\n",
		"    video_tasks_in_flight: 200\n", "    video_tasks_in_flight: 1000\n").Replace(routed)
	if err := os.WriteFile(path, []byte(routed), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), io.Discard, &logs)
	m.FetchTLS = &tls.Config{RootCAs: roots}
	e := startRemote(t, m, dir, tools, 1000*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "8", "--catalog", path)
	start := time.Now()
	ids, ended := createAndWaitAll(e, tasks, "routed")
	elapsed := time.Since(start)
	completed := 0
	for i, task := range ended {
		if task.Status != "completed" || task.Usage == nil || task.Usage.CompletionTokens != tokens {
			t.Errorf("task %d (%s) ended %s %+v; an account always had capacity\n%s", i, ids[i], task.Status, task.Error, linesWith(logs.String(), ids[i]))
			continue
		}
		completed++
	}
	perAccount := map[string]int{}
	for i, id := range ids {
		n := 0
		for _, name := range routeAccounts {
			if k := fakes[name].JobsFor(ark.Tag(id + ":gen")); k > 0 {
				n += k
				perAccount[name] += k
			}
		}
		if n != 1 {
			t.Errorf("task %d (%s) made %d paid upstream jobs over the four accounts, want exactly 1", i, id, n)
		}
	}
	// Every task's events say where it was routed and why it left an account (the operator
	// task view shows them); its last event names the account it ran on.
	left := map[string]int{}
	for i, id := range ids {
		events, err := m.db.TaskEvents(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var routedTo string
		for _, ev := range events {
			if _, a, ok := strings.Cut(ev.Detail, "routed to "); ok {
				routedTo, _, _ = strings.Cut(a, " ")
			}
			if a, ok := strings.CutPrefix(ev.Detail, "left "); ok {
				acct, _, _ := strings.Cut(a, ":")
				left[acct]++
			}
		}
		if last := events[len(events)-1]; routedTo == "" || last.Upstream != routedTo || fakes[routedTo].JobsFor(ark.Tag(id+":gen")) != 1 {
			t.Errorf("task %d: routed to %q, last event on %q", i, routedTo, last.Upstream)
		}
	}
	if left["ark-broken"] == 0 || left["ark-limited"] == 0 {
		t.Errorf("tasks left accounts %v: want some leaving ark-broken and ark-limited", left)
	}
	for name, f := range fakes {
		for _, v := range f.Violations() {
			t.Errorf("%s wire format: %s", name, v)
		}
	}
	if n := fakes["ark-full"].Peak(); n > 2 {
		t.Errorf("ark-full ran %d jobs at once; its max_in_flight is 2", n)
	}
	tenant, _ := m.cat().Tenant("demo")
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got, want := e.used(), one*money.Micros(completed); got != want {
		t.Errorf("charged %s, want %s (%d completed × %s)", got, want, completed, one)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
	// The usage rollups count each task on the account it ran on, with the operator's cost at
	// that account's rate and the margin, before and after a rebuild from the records.
	checkCostPerAccount(t, m, cat, start, routeAccounts, perAccount, one, tokens)
	costs := map[string]money.Micros{}
	for _, name := range routeAccounts {
		for _, u := range cat.Upstreams {
			if u.Name == name {
				c, _ := billing.TokenCost(rate(u.Cost.TokenRate()), tokens)
				costs[name] = c * money.Micros(perAccount[name])
			}
		}
	}
	fallbacks, waits := routeMetrics(t, m)
	if fallbacks["account"] == 0 || fallbacks["rate_limited"] == 0 || fakes["ark-lossy"].LostAnswers() == 0 {
		t.Errorf("fallbacks %v, lost answers %d: the faults were not exercised", fallbacks, fakes["ark-lossy"].LostAnswers())
	}
	var lines []string
	for _, name := range routeAccounts {
		f := fakes[name]
		lines = append(lines, fmt.Sprintf("  %-12s paid jobs %4d  peak running %3d  401s %4d  429s %4d  lost create answers %4d  cost USD %s",
			name, perAccount[name], f.Peak(), f.Refused(), f.RateLimited(), f.LostAnswers(), costs[name]))
	}
	var reasons []string
	for k, v := range fallbacks {
		reasons = append(reasons, fmt.Sprintf("%s %d", k, v))
	}
	sort.Strings(reasons)
	var cost money.Micros
	for _, c := range costs {
		cost += c
	}
	charged := one * money.Micros(completed)
	t.Logf("ROUTING %d tasks in %s: %d completed, %d failed\n%s\n  fallbacks by reason: %s\n  tasks that left an account: %v\n  slot waits: %v\n  charged USD %s, cost USD %s, margin USD %s (exact per account, settled and rebuilt)",
		tasks, elapsed.Round(time.Millisecond), completed, tasks-completed, strings.Join(lines, "\n"), strings.Join(reasons, ", "), left, waits, charged, cost, charged-cost)
}

// routeMetrics reads the fallbacks by reason (mediagen_upstream_errors_total of submits,
// kinds account and rate_limited, and transient: lost answers) and the slot waits per
// account from the process's metrics.
func routeMetrics(t *testing.T, m *Main) (fallbacks map[string]int, waits map[string]int) {
	t.Helper()
	families, err := m.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	fallbacks, waits = map[string]int{}, map[string]int{}
	for _, f := range families {
		for _, mt := range f.GetMetric() {
			l := metricLabels(mt)
			switch f.GetName() {
			case "mediagen_upstream_errors_total":
				if l["call"] == "submit" || l["call"] == "find" {
					fallbacks[l["call"]+" "+l["kind"]] += int(mt.GetCounter().GetValue())
					if l["call"] == "submit" {
						fallbacks[l["kind"]] += int(mt.GetCounter().GetValue())
					}
				}
			case "mediagen_upstream_waits_total":
				waits[l["upstream"]] += int(mt.GetCounter().GetValue())
			}
		}
	}
	return fallbacks, waits
}

// lossyAccounts are the accounts of TestRouteWithLostAnswersOnEveryAccountMakesOnePaidJobPerTask:
// every one makes each job and loses its create's answer; each costs the operator a different
// rate per million tokens (the cost: block), in the tenant's currency.
var lossyAccounts = []struct {
	name    string
	perMTok string // USD per million completion tokens
}{{"ark-lossy-a", "1"}, {"ark-lossy-b", "2"}, {"ark-lossy-c", "4"}}

// TestRouteWithLostAnswersOnEveryAccountMakesOnePaidJobPerTask routes tasks through an alias
// whose every account loses every create's answer (the job is made, the answer is a 500). No
// account ever answers that a task's job does not exist, so a task must never move off the
// account it was routed to: it finds its job there by its tag. Every task completes with
// exactly one paid job over all the fakes, on the account its events name, and the usage
// report grouped by account gives the operator's cost (paid jobs × tokens × the account's
// rate) and the margin (charge − cost) exactly.
func TestRouteWithLostAnswersOnEveryAccountMakesOnePaidJobPerTask(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through three fake upstream accounts")
	}
	const tasks = 20
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 12, Duration: 1, Container: "mp4", Text: "l"}, clip); err != nil {
		t.Fatal(err)
	}
	const tokens = 169 // 160×90×12×1/1024, what the stored clip implies; the fakes report it
	fakes := map[string]*arkfake.Server{}
	roots := x509.NewCertPool()
	var accounts strings.Builder
	var names []string
	for _, a := range lossyAccounts {
		f := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: tokens, LoseAnswers: true})
		t.Cleanup(f.Close)
		fakes[a.name] = f
		names = append(names, a.name)
		roots.AddCert(f.Certificate())
		// A high breaker threshold: every create fails (its answer lost), and the test is
		// about where tasks go after that, not about waiting out cooldowns.
		fmt.Fprintf(&accounts, "  - name: %s\n    kind: ark\n    base_url: %s\n    api_key_env: ARK_TEST_KEY\n    breaker: {failures: 1000, cooldown: 1s}\n    cost: {currency: USD, per_million_tokens: %s}\n",
			a.name, f.Base(), a.perMTok)
	}
	path := demoCatalogWith(t, t.TempDir(), accounts.String(), map[string]string{"demo-video-fast": names[0]})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	routed := strings.Replace(string(b), "upstream: "+names[0], "upstreams: ["+strings.Join(names, ", ")+"]\n        strategy: weighted\n        weights: [1, 1, 1]", 1)
	if err := os.WriteFile(path, []byte(routed), 0o644); err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(path)
	if err != nil {
		t.Fatalf("%v\n%s", err, routed)
	}
	var logs syncBuffer
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), io.Discard, &logs)
	m.FetchTLS = &tls.Config{RootCAs: roots}
	e := startRemote(t, m, dir, tools, 1000*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "8", "--catalog", path)
	start := time.Now()
	ids, ended := createAndWaitAll(e, tasks, "lossy")
	completed := 0
	for i, task := range ended {
		if task.Status != "completed" || task.Usage == nil || task.Usage.CompletionTokens != tokens {
			t.Errorf("task %d (%s) ended %s %+v\n%s", i, ids[i], task.Status, task.Error, linesWith(logs.String(), ids[i]))
			continue
		}
		completed++
	}
	perAccount := map[string]int{}
	for i, id := range ids {
		n, on := 0, ""
		for _, name := range names {
			if k := fakes[name].JobsFor(ark.Tag(id + ":gen")); k > 0 {
				n += k
				on = name
				perAccount[name] += k
			}
		}
		if n != 1 {
			t.Errorf("task %d (%s) made %d paid upstream jobs over the accounts, want exactly 1", i, id, n)
			continue
		}
		// The task was routed once, to the account whose answer was lost and that holds its
		// job, and never left it.
		events, err := m.db.TaskEvents(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		var routedTo []string
		for _, ev := range events {
			if _, a, ok := strings.Cut(ev.Detail, "routed to "); ok {
				a, _, _ = strings.Cut(a, " ")
				routedTo = append(routedTo, a)
			}
			if strings.HasPrefix(ev.Detail, "left ") {
				t.Errorf("task %d (%s) moved off an account after a lost answer: %q", i, id, ev.Detail)
			}
		}
		if len(routedTo) != 1 || routedTo[0] != on || events[len(events)-1].Upstream != on {
			t.Errorf("task %d (%s): routed to %v, last event on %q, its job on %s", i, id, routedTo, events[len(events)-1].Upstream, on)
		}
	}
	lost := 0
	for _, name := range names {
		lost += fakes[name].LostAnswers()
		for _, v := range fakes[name].Violations() {
			t.Errorf("%s wire format: %s", name, v)
		}
	}
	if lost < tasks {
		t.Errorf("%d lost create answers for %d tasks: the fault was not exercised", lost, tasks)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
	// Cost and margin per account, exact, before and after a rebuild of the rollups.
	tenant, _ := cat.Tenant("demo")
	charge, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	checkCostPerAccount(t, m, cat, start, names, perAccount, charge, tokens)
	t.Logf("LOST ANSWERS %d tasks in %s: %d completed; paid jobs per account %v; lost create answers %d",
		tasks, time.Since(start).Round(time.Millisecond), completed, perAccount, lost)
}

// checkCostPerAccount is checkUsageByAccount for accounts whose cost block is per million
// tokens: each of an account's paid jobs costs tokens at its rate.
func checkCostPerAccount(t *testing.T, m *Main, cat *catalog.Catalog, start time.Time, names []string, perAccount map[string]int, charge money.Micros, tokens int64) {
	t.Helper()
	cost := map[string]money.Micros{}
	for _, name := range names {
		for _, u := range cat.Upstreams {
			if u.Name == name {
				one, _ := billing.TokenCost(rate(u.Cost.TokenRate()), tokens)
				cost[name] = one * money.Micros(perAccount[name])
			}
		}
	}
	checkUsageByAccount(t, m, start, names, perAccount, charge, cost)
}

// checkUsageByAccount checks the usage report grouped by account, as settled and after a
// rebuild from the records: each account counts the paid jobs it ran (perAccount), charged
// charge each, at the operator's cost cost[account] in USD, and the margin is the charge less
// that cost — all exact. An account that ran nothing has no row, or an empty one.
func checkUsageByAccount(t *testing.T, m *Main, start time.Time, names []string, perAccount map[string]int, charge money.Micros, cost map[string]money.Micros) {
	t.Helper()
	for _, when := range []string{"settled", "rebuilt"} {
		if when == "rebuilt" {
			if err := m.db.RebuildUsage(context.Background()); err != nil {
				t.Fatal(err)
			}
		}
		rows, err := m.db.UsageReport(context.Background(), store.UsageQuery{From: start.Add(-time.Hour).Truncate(time.Hour),
			To: time.Now().Add(2 * time.Hour).Truncate(time.Hour), GroupBy: []string{store.UsageByUpstream}})
		if err != nil {
			t.Fatal(err)
		}
		byAccount := map[string]store.UsageRow{}
		for _, r := range rows {
			byAccount[r.Upstream] = r
		}
		for _, name := range names {
			r, n := byAccount[name], money.Micros(perAccount[name])
			if n == 0 {
				if r.Count != 0 || r.Cost != 0 || r.Charged != 0 {
					t.Errorf("%s usage of %s, which ran no job: %+v", when, name, r)
				}
				continue
			}
			margin, ok := r.Margin()
			if money.Micros(r.Count) != n || r.CostCurrency != "USD" || r.Cost != cost[name] || r.Charged != n*charge || !ok || margin != n*charge-cost[name] {
				t.Errorf("%s usage of %s: count %d, charged %s, cost %s %s, margin %s (%v); want %d paid jobs, charged %s, cost USD %s, margin %s",
					when, name, r.Count, r.Charged, r.CostCurrency, r.Cost, margin, ok, n, n*charge, cost[name], n*charge-cost[name])
			}
		}
	}
}

// createAndWaitAll creates tasks native tasks on demo-video-fast (prompts "<prompt> 0", …),
// all at once, then waits for every one to end, 8 at a time: the demo key's request rate
// bounds the polls.
func createAndWaitAll(e *e2e, tasks int, prompt string) (ids []string, ended []apiTask) {
	ids = make([]string, tasks)
	for i := range ids {
		ids[i] = e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"%s %d","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`, prompt, i))
	}
	var wg sync.WaitGroup
	ended = make([]apiTask, tasks)
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
	return ids, ended
}
