package asset

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"mediagen/internal/jobs"
)

// With tracing on, an ingest's fetch of its source is a span "media.fetch" under the
// asset.ingest job's run, naming the source's host only: never the path or the query, which
// may hold a signature.
func TestTracingMakesAnIngestsFetchAMediaFetchSpanWithTheHostOnly(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer("mediagen")
	e := newEnv(t, envOpts{noRun: true, mutate: func(c *Config) { c.Tracer = tr; c.MaxAttempts = 1 }})
	eng := jobs.New(jobs.Config{Store: e.db, Now: e.clock.Now, Tracer: tr})
	for _, k := range e.svc.Kinds() {
		if err := eng.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	png := pngBytes(t, 16, 16)
	const secret = "sig-do-not-trace"
	g := e.virtualGroup(acme)
	ok := e.createAsset(acme, g, e.write("secret-name.png", png)+"?X-Signature="+secret, "Image")
	missing := e.createAsset(acme, g, e.url("status/404")+"?X-Signature="+secret, "Image")
	if m := e.wait(acme, ok); m["Status"] != "Active" {
		t.Fatalf("asset %v", m)
	}
	if m := e.wait(acme, missing); m["Status"] != "Failed" {
		t.Fatalf("asset %v", m)
	}
	eng.Stop() // a run's span ends after the asset's state is written

	runs := map[string]sdktrace.ReadOnlySpan{}    // by span id
	fetches := map[string]sdktrace.ReadOnlySpan{} // by asset id
	for _, s := range rec.Ended() {
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.String()
			if strings.Contains(kv.Value.String(), secret) || strings.Contains(kv.Value.String(), "secret-name") {
				t.Errorf("span %s attribute %s holds the URL: %s", s.Name(), kv.Key, kv.Value.String())
			}
		}
		switch s.Name() {
		case "job.run":
			runs[s.SpanContext().SpanID().String()] = s
		case "media.fetch":
			fetches[a["mediagen.asset_id"]] = s
		}
	}
	for _, c := range []struct {
		id, outcome, bytes string
		failed             bool
	}{{ok, "ok", fmt.Sprint(len(png)), false}, {missing, "error", "", true}} {
		s, found := fetches[c.id]
		if !found {
			t.Fatalf("no media.fetch span of asset %s", c.id)
		}
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.String()
		}
		if a["server.address"] != "127.0.0.1" || a["outcome"] != c.outcome || (c.bytes != "" && a["media.bytes"] != c.bytes) {
			t.Errorf("asset %s fetch attributes %v, want host 127.0.0.1, outcome %s, bytes %s", c.id, a, c.outcome, c.bytes)
		}
		if (s.Status().Code == codes.Error) != c.failed {
			t.Errorf("asset %s fetch status %v, want failed %v", c.id, s.Status(), c.failed)
		}
		run, under := runs[s.Parent().SpanID().String()]
		if !under {
			t.Errorf("asset %s fetch is not under a job run", c.id)
			continue
		}
		for _, kv := range run.Attributes() {
			if kv.Key == "job.ref" && kv.Value.AsString() != c.id {
				t.Errorf("asset %s fetch is under the run of %s", c.id, kv.Value.AsString())
			}
		}
	}
}
