package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/tracing/otlptest"
)

// One task, one trace, two replicas: a client POSTs with its own traceparent to an api-only
// replica; the worker-only replica runs the task. The in-process OTLP receiver then holds
// one trace with the client's id covering the HTTP span and its transaction on replica A,
// and on replica B every job run (a child of the request's span) with its upstream calls,
// the result's probe, its blob write and, in the last run, the settlement and the
// transaction that commits it.
func TestTracingFollowsOneTaskAcrossTwoReplicas(t *testing.T) {
	t.Parallel()
	requireTools(t)
	db := pgtest.URL(t)
	rec, otlp := otlptest.Start(t)
	dir := t.TempDir()
	signing := strings.Repeat("6b", 32)
	start := func(name, role string) *Main {
		t.Helper()
		m := NewMain(env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": otlp, "OTEL_SERVICE_NAME": "mediagen-test"}), io.Discard, io.Discard)
		if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, name), "--db", db,
			"--role", role, "--signing-key", signing, "--sandbox-pace", "100ms", "--log-level", "warn"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Cleanup(func() { _ = m.Close() })
		return m
	}
	api := start("a", "api")
	worker := start("b", "worker")

	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("POST", api.URL()+"/v1/videos",
		strings.NewReader(`{"model":"demo-video-fast","prompt":"traced across replicas","metadata":{"duration":4,"resolution":"480p"}}`))
	req.Header.Set("Authorization", "Bearer "+api.DemoKey)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 202 {
		t.Fatalf("create: %d %s", res.StatusCode, body)
	}
	var created apiTask
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}
	e := &e2e{t: t, m: api, key: api.DemoKey}
	if task := e.wait(created.ID); task.Status != "completed" {
		t.Fatalf("task %+v %+v", task, task.Error)
	}
	// Close flushes each replica's spans (the worker's last run ends after the task reads
	// completed).
	if err := worker.Close(); err != nil {
		t.Fatal(err)
	}
	if err := api.Close(); err != nil {
		t.Fatal(err)
	}

	var spans []otlptest.Span
	byID := map[string]otlptest.Span{}
	for _, s := range rec.Spans() {
		if s.TraceID == clientTrace {
			spans = append(spans, s)
			byID[s.SpanID] = s
		}
	}
	find := func(name string, ok func(otlptest.Span) bool) []otlptest.Span {
		var out []otlptest.Span
		for _, s := range spans {
			if s.Name == name && (ok == nil || ok(s)) {
				out = append(out, s)
			}
		}
		return out
	}
	one := func(name string, ok func(otlptest.Span) bool) otlptest.Span {
		t.Helper()
		got := find(name, ok)
		if len(got) == 0 {
			names := map[string]int{}
			for _, s := range spans {
				names[s.Name]++
			}
			t.Fatalf("no span %s in the client's trace; its spans: %v", name, names)
		}
		return got[0]
	}
	// under reports whether s descends from anc.
	under := func(s, anc otlptest.Span) bool {
		for range len(spans) + 1 {
			p, ok := byID[s.ParentID]
			if !ok {
				return false
			}
			if p.SpanID == anc.SpanID {
				return true
			}
			s = p
		}
		return false
	}

	for _, s := range spans {
		t.Logf("span %s %s parent %s on %s: %v", s.SpanID, s.Name, s.ParentID, s.Resource["mediagen.role"], s.Attrs)
	}
	post := one("POST /v1/videos", nil)
	if post.ParentID != clientSpan || post.Kind != "SPAN_KIND_SERVER" || post.Attrs["http.response.status_code"] != "202" ||
		post.Attrs["http.route"] != "POST /v1/videos" {
		t.Errorf("HTTP span %+v: want a server span under the client's, route and 202", post)
	}
	instA := post.Resource["service.instance.id"]
	if post.Resource["service.name"] != "mediagen-test" || post.Resource["mediagen.role"] != "api" {
		t.Errorf("HTTP span's resource %v", post.Resource)
	}
	accept := one("store.tx", func(s otlptest.Span) bool { return s.ParentID == post.SpanID })
	if !strings.Contains(accept.Attrs["db.operation.name"], "accept") || accept.Attrs["db.system.name"] != "postgres" {
		t.Errorf("the create's transaction %v", accept.Attrs)
	}

	runs := find("job.run", func(s otlptest.Span) bool { return s.ParentID == post.SpanID })
	if len(runs) == 0 {
		t.Fatal("no job.run under the request's span")
	}
	for _, r := range runs {
		if r.Resource["service.instance.id"] == instA || r.Resource["mediagen.role"] != "worker" {
			t.Errorf("job.run on %v, want the worker replica (not %s)", r.Resource, instA)
		}
		if r.Attrs["job.kind"] != "video.task" || r.Attrs["job.ref"] != created.ID || r.Attrs["job.attempt"] == "" {
			t.Errorf("job.run attributes %v", r.Attrs)
		}
	}
	underRun := func(s otlptest.Span) bool {
		for _, r := range runs {
			if under(s, r) {
				return true
			}
		}
		return false
	}
	submit := one("upstream.submit", underRun)
	if submit.Attrs["upstream.account"] != "sandbox" || submit.Attrs["outcome"] != "ok" || submit.Attrs["job.attempt"] == "" {
		t.Errorf("upstream.submit %v", submit.Attrs)
	}
	one("upstream.poll", underRun)
	one("media.probe", underRun)
	one("blob.put", underRun)
	settle := one("task.settle", underRun)
	if settle.Attrs["mediagen.status"] != "completed" {
		t.Errorf("task.settle %v", settle.Attrs)
	}
	last := runs[0]
	for _, r := range runs {
		if r.Attrs["job.outcome"] == "done" {
			last = r
		}
	}
	if last.Attrs["job.outcome"] != "done" || settle.ParentID != last.SpanID {
		t.Errorf("the settlement is not in the run that ended the job (%v)", last.Attrs)
	}
	// The transaction that commits it is a sibling: a transaction's function reads its
	// caller's context, not the transaction span's.
	one("store.tx", func(s otlptest.Span) bool {
		return s.ParentID == last.SpanID && strings.Contains(s.Attrs["db.operation.name"], "jobs.(*producer).commit")
	})
}
