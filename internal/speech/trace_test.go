package speech

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"mediagen/internal/catalog"
	"mediagen/internal/jobs"
	"mediagen/internal/keys"
	"mediagen/internal/provider"
	"mediagen/internal/routing"
)

// With tracing on, each engine call of a generation is a span "upstream.synthesize" under
// the generation's job.run, with video's attribute names: a routed request whose first
// account refuses its key makes two, the refused call (outcome error, failed) and the call
// that made the audio on the next account (outcome ok).
func TestTracingMakesEachSpeechEngineCallAnUpstreamSpanUnderItsJobRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, manualEngine)
	cat, err := catalog.Parse("routed.yaml", []byte(routedCatalog))
	if err != nil {
		t.Fatal(err)
	}
	tenant, _ := cat.Tenant("demo")
	e.caller = keys.Caller{Key: e.caller.Key, Tenant: tenant, Catalog: cat}
	e.svc.Accounts, e.svc.Router = cat.Upstream, &routing.Router{}
	e.svc.Engines = map[string]provider.Synthesizer{
		"openai-a":     failing{fmt.Errorf("openai: HTTP 401: %w", provider.ErrAccount), &atomic.Int64{}},
		"local-speech": e.svc.Engines["sandbox"],
	}
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer("mediagen")
	e.svc.Tracer = tr
	eng := jobs.New(jobs.Config{Store: e.db, Now: e.svc.now, Logger: e.svc.Logger, Tracer: tr})
	for _, k := range e.svc.Kinds() {
		if err := eng.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.svc.Notify = eng.Notify

	res, err := e.svc.Create(context.Background(), e.caller, []byte(`{"model":"routed-speech","input":"Traced."}`))
	if err != nil {
		t.Fatal(err)
	}
	eng.Stop() // the run's span ends after the request's answer

	var run sdktrace.ReadOnlySpan
	var calls []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "job.run":
			run = s
		case "upstream.synthesize":
			calls = append(calls, s)
		}
	}
	if run == nil || len(calls) != 2 {
		t.Fatalf("job.run %v, %d upstream.synthesize spans: want one and two", run != nil, len(calls))
	}
	want := []struct {
		account, outcome string
		failed           bool
	}{{"openai-a", "error", true}, {"local-speech", "ok", false}}
	for i, s := range calls {
		a := map[string]string{}
		for _, kv := range s.Attributes() {
			a[string(kv.Key)] = kv.Value.String()
		}
		w := want[i]
		if s.Parent().SpanID() != run.SpanContext().SpanID() {
			t.Errorf("call %d is not under the job run", i)
		}
		if a["upstream.account"] != w.account || a["outcome"] != w.outcome || a["job.attempt"] != "1" ||
			a["upstream.try"] != fmt.Sprint(i+1) || a["mediagen.speech_id"] != res.ID {
			t.Errorf("call %d attributes %v, want account %s, outcome %s", i, a, w.account, w.outcome)
		}
		if (s.Status().Code == codes.Error) != w.failed {
			t.Errorf("call %d status %v, want failed %v", i, s.Status(), w.failed)
		}
	}
}
