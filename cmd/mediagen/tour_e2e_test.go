package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
)

// TestTourRunsEveryRouteOfflineWithoutOpeningTheFetchPolicy runs `mediagen tour` against a
// service started the way `make run` starts it: demo catalog, no --fetch-allow, no extra
// certificates. Every route's input comes from the sandbox samples.
func TestTourRunsEveryRouteOfflineWithoutOpeningTheFetchPolicy(t *testing.T) {
	t.Parallel()
	requireTools(t)
	m, _ := startMain(t, t.TempDir(), "--sandbox-pace", "200ms", "--log-level", "warn")
	dir := filepath.Join(t.TempDir(), "tour")
	vars := map[string]string{"MEDIAGEN_API_KEY": m.DemoKey, "MEDIAGEN_BASE_URL": m.URL()}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"tour", "--json", "--poll", "100ms", "--out-dir", dir}, env(vars), &stdout, &stderr); err != nil {
		t.Fatalf("tour: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	var sum tourSummary
	if err := json.Unmarshal(stdout.Bytes(), &sum); err != nil {
		t.Fatalf("%v\n%s", err, stdout.String())
	}
	routes := map[string]int{}
	for _, l := range sum.Steps {
		routes[l.Route+" "+l.Status]++
	}
	want := map[string]int{"assets Active": 1, "native completed": 2, "enhancement completed": 1, "production completed": 1, "native failed": 1, "speech completed": 1}
	for k, n := range want {
		if routes[k] != n {
			t.Errorf("%q: %d, want %d (all: %v)", k, routes[k], n, routes)
		}
	}
	if len(sum.Files) != 7 {
		t.Errorf("files %v, want 7 (4 videos, 2 last frames, 1 speech)", sum.Files)
	}
	for _, f := range sum.Files {
		if fi, err := os.Stat(f); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	if sum.Spent <= 0 || sum.Currency != "USD" || sum.After >= sum.Before {
		t.Errorf("balance %+v: want a positive spend", sum)
	}
	// What people read at the end of the same tour without --json. (The human run itself,
	// progress lines included, is the docs' `mediagen tour`, run by TestDocsCommandLinesRunOffline.)
	var human bytes.Buffer
	printTourSummary(&human, sum)
	for _, s := range []string{"files made (7):", "the tour spent", "error.code video_generation_failed", "production.mp4"} {
		if !strings.Contains(human.String(), s) {
			t.Errorf("output lacks %q:\n%s", s, human.String())
		}
	}
}

// With the samples off (as with an operator's catalog), a sample URL is an ordinary unknown
// name: refused at submission, no task.
func TestSamplesOffRefusesSampleURLs(t *testing.T) {
	t.Parallel()
	requireTools(t)
	m, _ := startMain(t, t.TempDir(), "--sandbox-pace", "200ms", "--log-level", "warn", "--sandbox-samples", "off")
	e := &e2e{t: t, m: m, key: m.DemoKey}
	status, b := e.call("POST", "/v1/videos", `{"model":"demo-enhance-lite","metadata":{"video_url":"https://samples.mediagen.example/clip.mp4","duration":5,"resolution_limit":480}}`)
	if status != 400 || !strings.Contains(string(b), `"param":"metadata.video_url"`) {
		t.Fatalf("%d %s", status, b)
	}
}

func TestSamplesAutoIsOnOnlyWithTheDemoCatalog(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		demo  bool
		want  bool
	}{
		{"auto", true, true}, {"auto", false, false}, {"", false, false},
		{"on", false, true}, {"off", true, false},
	}
	for _, tt := range tests {
		c := Config{SandboxSamples: tt.value}
		if got := c.samplesOn(tt.demo); got != tt.want {
			t.Errorf("%q demo=%v: %v, want %v", tt.value, tt.demo, got, tt.want)
		}
	}
}
