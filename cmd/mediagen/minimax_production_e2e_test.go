package main

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/minimax/minimaxfake"
	"mediagen/internal/store"
)

// A production alias's generation half runs on a minimax account (at the alias's 720p, sent as
// 768P) and its enhancement half on ffmpeg: the final video is charged on its measured
// seconds at the production rate, and the operator's cost is the account's per_second at 720p
// × the seconds of what MiniMax delivered, for native and production alike (MiniMax reports
// no usage; it prices per video).
func TestMiniMaxRunsProductionsGenerationAndCostsPerSecond(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	e, fake, _ := startMiniMaxWith(t, tools, dir, minimaxfake.Config{}, func(base string) string {
		accounts := "  - name: minimax-main\n    kind: minimax\n    base_url: " + base + "\n    api_key_env: MINIMAX_TEST_KEY\n" +
			"    cost: {currency: USD, per_second: {720p: 0.1, 1080p: 0.2}}\n" +
			"  - name: local-enhance\n    kind: ffmpeg\n"
		path := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{
			"demo-video-fast":          "minimax-main",
			"demo-production-standard": "minimax-main\n        enhance_upstream: local-enhance",
		})
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(b), "model: sandbox-video-fast-2.0", "model: MiniMax-Hailuo-02", 1)
		i := strings.Index(s, "alias: demo-production-standard")
		s = s[:i] + strings.Replace(s[i:], "model: sandbox-video-2.5", "model: MiniMax-Hailuo-02", 1)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	})
	tenant, _ := e.m.cat().Tenant("demo")

	id := e.create(`{"model":"demo-video-fast","prompt":"native one","metadata":{"ratio":"16:9","duration":6}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("native: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.URL, "native.mp4")
	before := e.used()
	id2 := e.create(`{"model":"demo-production-standard","prompt":"a city at dusk","metadata":{"ratio":"16:9","duration":6,"resolution":"1080p"}}`)
	ptask := e.wait(id2)
	if ptask.Status != "completed" {
		t.Fatalf("production on minimax + ffmpeg: %+v %+v", ptask, ptask.Error)
	}
	_, pinfo := e.download(ptask.Metadata.URL, "production.mp4")
	if pinfo.Height != 1080 || !near(pinfo.Duration, 6, 0.1) {
		t.Errorf("production result %+v, want 1080p of the 6 s generation", pinfo)
	}
	if b := fake.Body("a city at dusk"); b["resolution"] != "768P" || b["duration"] != float64(6) {
		t.Errorf("production's generation body %v", b)
	}
	pq := billing.Quote{Route: "production", Rate: rate(tenant.Rates.ProductionRate("standard", "1080p", false))}
	if want, _ := billing.SettleAmount(pq, billing.Measured{OutputSeconds: pinfo.Duration}); e.used()-before != want {
		t.Errorf("production charged %s, want %s", e.used()-before, want)
	}

	now := time.Now().UTC().Truncate(time.Hour)
	rows, err := e.m.db.UsageReport(context.Background(), store.UsageQuery{From: now.Add(-time.Hour), To: now.Add(2 * time.Hour),
		GroupBy: []string{store.UsageByUpstream, store.UsageByRoute}})
	if err != nil {
		t.Fatal(err)
	}
	perSecond := func(secs float64) money.Micros {
		c, _ := billing.SecondsCost(100_000, billing.SecondsToMicros(secs))
		return c
	}
	for _, r := range rows {
		want := map[string]money.Micros{"native": perSecond(info.Duration), "production": perSecond(pinfo.Duration)}[r.Route]
		if r.Upstream != "minimax-main" || r.CostCurrency != "USD" || r.Cost != want || r.Count != 1 {
			t.Errorf("cost row %s/%s: %s %q over %d, want %s USD", r.Upstream, r.Route, r.Cost, r.CostCurrency, r.Count, want)
		}
	}
	if len(rows) != 2 {
		t.Errorf("cost rows %+v, want native and production", rows)
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
}

// startMiniMaxWith is startMiniMax with the catalog written by catalogFor from the fake's base.
func startMiniMaxWith(t *testing.T, tools ffmpeg.Tools, dir string, cfg minimaxfake.Config, catalogFor func(base string) string) (*e2e, *minimaxfake.Server, *syncBuffer) {
	t.Helper()
	cfg = renderedClip(t, tools, dir, cfg)
	fake := minimaxfake.Start(cfg)
	t.Cleanup(fake.Close)
	var logs syncBuffer
	m := NewMain(env(map[string]string{"MINIMAX_TEST_KEY": minimaxTestKey}), io.Discard, &logs)
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--catalog", catalogFor(fake.Base()))
	return e, fake, &logs
}
