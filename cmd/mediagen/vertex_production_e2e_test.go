package main

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/provider/vertex/vertexfake"
	"mediagen/internal/store"
	"path/filepath"
)

// A production alias's generation half runs on a vertex account (Veo 3 at the alias's 720p)
// and its enhancement half on ffmpeg: the final video is charged on its measured seconds at
// the production rate, and the operator's cost is the account's per_second at 720p × the
// seconds Veo delivered, for native and production alike (Vertex AI reports no usage).
func TestVertexRunsProductionsGenerationAndCostsPerSecond(t *testing.T) {
	t.Parallel()
	e, fake, _ := startVertexWith(t, vertexfake.Config{}, func(fake *vertexfake.Server) string {
		keyFile := filepath.Join(t.TempDir(), "vertex-sa.json")
		if err := os.WriteFile(keyFile, fake.KeyJSON(), 0o600); err != nil {
			t.Fatal(err)
		}
		accounts := vertexAccount("veo-main", fake.Base(), keyFile, "    cost: {currency: USD, per_second: {720p: 0.1, 1080p: 0.2}}\n") +
			"  - name: local-enhance\n    kind: ffmpeg\n"
		path := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{
			"demo-video-fast":          "veo-main",
			"demo-production-standard": "veo-main\n        enhance_upstream: local-enhance",
		})
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s := strings.Replace(string(b), "model: sandbox-video-fast-2.0", "model: veo-3.0-generate-001", 1)
		i := strings.Index(s, "alias: demo-production-standard")
		s = s[:i] + strings.Replace(s[i:], "model: sandbox-video-2.5", "model: veo-3.0-generate-001", 1)
		if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}, 100*money.Scale, "--log-level", "warn")
	tenant, _ := e.m.cat().Tenant("demo")

	id := e.create(`{"model":"demo-video-fast","prompt":"native one","metadata":{"ratio":"16:9","duration":8}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("native: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.URL, "native.mp4")
	before := e.used()
	id2 := e.create(`{"model":"demo-production-standard","prompt":"a city at dusk","metadata":{"ratio":"16:9","duration":8,"resolution":"1080p"}}`)
	ptask := e.wait(id2)
	if ptask.Status != "completed" {
		t.Fatalf("production on vertex + ffmpeg: %+v %+v", ptask, ptask.Error)
	}
	_, pinfo := e.download(ptask.Metadata.URL, "production.mp4")
	if pinfo.Height != 1080 || !near(pinfo.Duration, 8, 0.1) {
		t.Errorf("production result %+v, want 1080p of the 8 s generation", pinfo)
	}
	if p, _ := fake.Body("a city at dusk")["parameters"].(map[string]any); p["durationSeconds"] != float64(8) || p["sampleCount"] != float64(1) {
		t.Errorf("production's generation parameters %v", p)
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
		if r.Upstream != "veo-main" || r.CostCurrency != "USD" || r.Cost != want || r.Count != 1 {
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
