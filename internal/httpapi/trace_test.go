package httpapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"mediagen/internal/catalog"
)

// A traced request is a server span named by its route, under the client's traceparent, with
// the status; an untraced server (Tracer nil) puts no middleware in the chain.
func TestTracedRequestIsAServerSpanUnderTheClientsTrace(t *testing.T) {
	e := newVideoEnv(t, "acme")
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e.srv.tracer = tp.Tracer("test")
	const client = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	req := httptest.NewRequest("GET", "/v1/videos/video_nosuchtask0000000000000", nil)
	req.Header.Set("Authorization", "Bearer "+e.key)
	req.Header.Set("traceparent", client)
	rec := httptest.NewRecorder()
	e.srv.Handler().ServeHTTP(rec, req)
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if s.Name != "GET /v1/videos/{task_id}" || s.SpanContext.TraceID().String() != "0af7651916cd43dd8448eb211c80319c" ||
		s.Parent.SpanID().String() != "b7ad6b7169203331" {
		t.Fatalf("span %s in trace %s under %s", s.Name, s.SpanContext.TraceID(), s.Parent.SpanID())
	}
	attrs := map[string]string{}
	for _, kv := range s.Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["http.response.status_code"] != "404" || attrs["http.route"] != "GET /v1/videos/{task_id}" ||
		attrs["mediagen.request_id"] != rec.Header().Get("X-Request-Id") || attrs["error.type"] == "" {
		t.Errorf("attributes %v", attrs)
	}
}

// BenchmarkGetVideoTraced is BenchmarkGetVideo with tracing on: each request a recorded
// server span, batched to an exporter that drops them. The difference between the two is the
// span's cost on the request path; tracing off is BenchmarkGetVideo itself.
func BenchmarkGetVideoTraced(b *testing.B) {
	e := newVideoEnv(b, "acme")
	e.srv.catalogs = catalog.Static(limitedCatalog(b, nil, nil))
	e.srv.keys = newKeyCache(60e9)
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	e.srv.tracer = tp.Tracer("bench")
	created := e.post(e.key, `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5}}`)
	var answer struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(created.body, &answer); err != nil || answer.ID == "" {
		b.Fatalf("create answer %s: %v", created.body, err)
	}
	h := e.srv.Handler()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		req := httptest.NewRequest("GET", "/v1/videos/"+answer.ID, nil)
		req.Header.Set("Authorization", "Bearer "+e.key)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}

type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkCreateVideoTraced is BenchmarkCreateVideo with tracing on: the server span, the
// create's store.tx span and the job's carried trace context.
func BenchmarkCreateVideoTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	benchCreateTraced(b, limitedCatalog(b, nil, nil), tp.Tracer("bench"))
}
