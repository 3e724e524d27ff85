package blob

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// Traced leaves the store as it is without a tracer, and otherwise makes each write a span
// "blob.put" with the key and the bytes written.
func TestTracedStoreMakesASpanPerWrite(t *testing.T) {
	fs, err := NewFS(t.TempDir(), []byte(strings.Repeat("k", 32)), "http://127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	if Traced(fs, nil) != Store(fs) {
		t.Fatal("Traced without a tracer wrapped the store")
	}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s := Traced(fs, tp.Tracer("test"))
	if _, err := s.Put(t.Context(), "videos/v1/result.mp4", strings.NewReader("12345")); err != nil {
		t.Fatal(err)
	}
	spans := exp.GetSpans()
	if len(spans) != 1 || spans[0].Name != "blob.put" {
		t.Fatalf("spans %v", spans)
	}
	attrs := map[string]string{}
	for _, kv := range spans[0].Attributes {
		attrs[string(kv.Key)] = kv.Value.String()
	}
	if attrs["blob.key"] != "videos/v1/result.mp4" || attrs["blob.bytes"] != "5" {
		t.Errorf("attributes %v", attrs)
	}
	if p, ok := s.LocalPath("videos/v1/result.mp4"); !ok || p == "" {
		t.Error("the wrapper hides the store's local path")
	}
}
