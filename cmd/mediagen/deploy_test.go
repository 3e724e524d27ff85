package main

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"mediagen/internal/money"
)

// The monitoring files an operator loads (docs/operations.md): the Prometheus rules and the
// Grafana dashboard. promtool checks and unit-tests the rules (make test); these tests check
// what promtool cannot: that every series they read is one the service exports, that the
// dashboard is well formed, and that every alert has its runbook section.
const (
	rulesFile     = "../../deploy/prometheus/mediagen.rules.yml"
	dashboardFile = "../../deploy/grafana/mediagen.json"
	runbookFile   = "../../docs/operations.md"
)

// metricName finds the service's series names in PromQL and in annotation text. Recording
// rules are named mediagen:…, so they never match.
var metricName = regexp.MustCompile(`\bmediagen_[a-z0-9_]*[a-z0-9]`)

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record      string            `yaml:"record"`
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func loadRules(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.Unmarshal(b, &rf); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	return rf
}

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []dashVar `json:"list"`
	} `json:"templating"`
	Panels []dashPanel `json:"panels"`
}

type dashVar struct {
	Name  string `json:"name"`
	Type  string `json:"type"`
	Query string `json:"query"`
}

type dashPanel struct {
	ID         int             `json:"id"`
	Type       string          `json:"type"`
	Title      string          `json:"title"`
	Datasource *dashDatasource `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string          `json:"refId"`
		Expr       string          `json:"expr"`
		Datasource *dashDatasource `json:"datasource"`
	} `json:"targets"`
	Panels []dashPanel `json:"panels"` // a collapsed row's panels
}

type dashDatasource struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	return d
}

// TestGrafanaDashboardIsWellFormed checks what Grafana's import would otherwise find one
// panel at a time: unique ids, a Prometheus datasource through the dashboard's variable on
// every panel and query, and a query in every target.
func TestGrafanaDashboardIsWellFormed(t *testing.T) {
	t.Parallel()
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q title %q: both are needed for a stable import", d.UID, d.Title)
	}
	if !slices.Contains(d.Templating.List, dashVar{Name: "datasource", Type: "datasource", Query: "prometheus"}) {
		t.Error("no datasource variable of type prometheus: the panels' ${datasource} would not resolve")
	}
	ids := map[int]string{}
	var panels []dashPanel
	for _, p := range d.Panels {
		panels = append(append(panels, p), p.Panels...)
	}
	queries := 0
	for _, p := range panels {
		if prev, dup := ids[p.ID]; dup || p.ID == 0 {
			t.Errorf("panel %q: id %d missing or shared with %q", p.Title, p.ID, prev)
		}
		ids[p.ID] = p.Title
		if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 {
			t.Errorf("panel %q: no gridPos", p.Title)
		}
		if p.Type == "row" {
			continue
		}
		if p.Title == "" {
			t.Errorf("panel %d has no title", p.ID)
		}
		if p.Datasource == nil || p.Datasource.Type != "prometheus" || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %+v, want prometheus ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		refs := map[string]bool{}
		for _, q := range p.Targets {
			if strings.TrimSpace(q.Expr) == "" || q.RefID == "" || refs[q.RefID] {
				t.Errorf("panel %q: query %q with refId %q: empty or repeated", p.Title, q.Expr, q.RefID)
			}
			refs[q.RefID] = true
			if q.Datasource == nil || q.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: query %s datasource %+v, want ${datasource}", p.Title, q.RefID, q.Datasource)
			}
			queries++
		}
	}
	if queries == 0 {
		t.Fatal("the dashboard has no queries")
	}
}

// TestAlertRulesHaveSeverityAndRunbook checks every alert's labels and annotations, and that
// the section its description links to exists in docs/operations.md.
func TestAlertRulesHaveSeverityAndRunbook(t *testing.T) {
	t.Parallel()
	runbook, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	alerts := 0
	for _, g := range loadRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				if !strings.HasPrefix(r.Record, "mediagen:") {
					t.Errorf("recording rule %q: name it mediagen:<what>:<how> (level:metric:operations)", r.Record)
				}
				continue
			}
			alerts++
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			if r.Annotations["summary"] == "" {
				t.Errorf("%s: no summary", r.Alert)
			}
			anchor := "docs/operations.md#" + strings.ToLower(r.Alert)
			if !strings.Contains(r.Annotations["description"], anchor) {
				t.Errorf("%s: the description does not link its runbook %s", r.Alert, anchor)
			}
			if !strings.Contains(string(runbook), "\n### "+r.Alert+"\n") {
				t.Errorf("%s: no section \"### %s\" in %s", r.Alert, r.Alert, runbookFile)
			}
		}
	}
	if alerts == 0 {
		t.Fatal("no alerts found")
	}
}

// TestDeployRulesAndDashboardUseExportedMetrics scrapes a real server that has run a task to
// completion and one to failure, and finds in its /metrics every mediagen_ series the rules
// and the dashboard name: a renamed or removed series would otherwise leave an alert that
// can never fire and a panel that stays empty.
func TestDeployRulesAndDashboardUseExportedMetrics(t *testing.T) {
	t.Parallel()
	// Vectors appear at their first use: a task that completes and one whose upstream fails
	// make the task, job and upstream series exist, and a speech request routed across two
	// accounts the breaker's (one-account aliases never consult it).
	dir := t.TempDir()
	path := demoCatalogWith(t, dir, "  - name: speech-a\n    kind: espeak\n  - name: speech-b\n    kind: espeak\n", map[string]string{"demo-speech": "speech-a"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), "upstream: speech-a", "upstreams: [speech-a, speech-b]", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewMain(env(nil), io.Discard, io.Discard)
	e := startRemote(t, m, dir, requireTools(t), 100*money.Scale, "--catalog", path, "--sandbox-pace", "200ms", "--log-level", "warn")
	e.speech(`{"model":"demo-speech","input":"Every alert reads a real series."}`)
	done := e.create(`{"model":"demo-video-fast","prompt":"a calm lake","metadata":{"duration":4,"resolution":"480p"}}`)
	failed := e.create(`{"model":"demo-video-fast","prompt":"boom [sandbox:fail]","metadata":{"duration":4,"resolution":"480p"}}`)
	if task := e.wait(done); task.Status != "completed" {
		t.Fatalf("task %s: %+v", done, task)
	}
	if task := e.wait(failed); task.Status != "failed" {
		t.Fatalf("task %s: %+v", failed, task)
	}
	exported := scrapedFamilies(e.metrics())

	used := map[string][]string{} // name → where
	rules, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range metricName.FindAllString(string(rules), -1) {
		used[name] = append(used[name], filepath.Base(rulesFile))
	}
	var panels []dashPanel
	for _, p := range loadDashboard(t).Panels {
		panels = append(append(panels, p), p.Panels...)
	}
	for _, p := range panels {
		for _, q := range p.Targets {
			for _, name := range metricName.FindAllString(q.Expr, -1) {
				used[name] = append(used[name], "dashboard panel "+p.Title)
			}
		}
	}
	if len(used) == 0 {
		t.Fatal("no mediagen_ series found in the rules and the dashboard")
	}
	for name, where := range used {
		if !exported[name] && !exported[histogramFamily(name)] {
			t.Errorf("%s (used by %s) is not in the service's /metrics", name, strings.Join(slices.Compact(where), ", "))
		}
	}
}

// scrapedFamilies are the metric families of an exposition: those with samples, and those
// announced by # HELP or # TYPE.
func scrapedFamilies(text string) map[string]bool {
	out := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) >= 3 && f[0] == "#" && (f[1] == "HELP" || f[1] == "TYPE"):
			out[f[2]] = true
		case len(f) >= 2 && f[0] != "#":
			name, _, _ := strings.Cut(f[0], "{")
			out[name] = true
		}
	}
	return out
}

// histogramFamily is the family of a histogram's _bucket, _sum or _count series.
func histogramFamily(name string) string {
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			return base
		}
	}
	return name
}
