package tracing_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/tracing"
)

// recorder is a tracer whose ended spans the test reads back.
func recorder(t *testing.T) (trace.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(t.Context()) })
	return tp.Tracer(tracing.ScopeName), rec
}

func attrsOf(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value
	}
	return m
}

func TestMiddlewareNamesEachRequestsServerSpanByRouteUnderTheClientsTrace(t *testing.T) {
	const clientTrace, clientSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	route := func(r *http.Request) (string, bool) {
		if r.URL.Path == "/things/42" {
			return "GET /things/{id}", true
		}
		return tracing.MethodLabel(r.Method) + " /elsewhere/*", false
	}
	for _, tc := range []struct {
		name, method, path string
		status             int
		want               string
		route              bool
		failed             bool
	}{
		{name: "a route's pattern", method: "GET", path: "/things/42", status: 200, want: "GET /things/{id}", route: true},
		{name: "no route: the bounded label", method: "GET", path: "/x/secret-id-7", status: 404, want: "GET /elsewhere/*"},
		{name: "a 5xx fails the span", method: "GET", path: "/things/42", status: 503, want: "GET /things/{id}", route: true, failed: true},
		{name: "an odd method is other", method: "BREW", path: "/pot", status: 200, want: "other /elsewhere/*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, rec := recorder(t)
			var inner trace.SpanContext
			h := tracing.Middleware(tr, route)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inner = trace.SpanContextFromContext(r.Context())
				w.Header().Set("X-Request-Id", "req_1")
				if tc.status != 200 {
					w.WriteHeader(tc.status)
				}
				_, _ = w.Write([]byte("ok"))
			}))
			req := httptest.NewRequest(tc.method, tc.path, nil)
			req.Header.Set("traceparent", "00-"+clientTrace+"-"+clientSpan+"-01")
			h.ServeHTTP(httptest.NewRecorder(), req)

			spans := rec.Ended()
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			if s.Name() != tc.want || s.SpanKind() != trace.SpanKindServer {
				t.Fatalf("span %q kind %v, want %q server", s.Name(), s.SpanKind(), tc.want)
			}
			if s.Parent().TraceID().String() != clientTrace || s.Parent().SpanID().String() != clientSpan {
				t.Fatalf("parent %v, want the client's span", s.Parent())
			}
			if inner.SpanID() != s.SpanContext().SpanID() {
				t.Fatal("the handler does not run under the request's span")
			}
			a := attrsOf(s)
			if a["http.response.status_code"].AsInt64() != int64(tc.status) || a["mediagen.request_id"].AsString() != "req_1" ||
				a["url.path"].AsString() != tc.path {
				t.Fatalf("attributes %v", a)
			}
			if got, ok := a["http.route"]; ok != tc.route || (ok && got.AsString() != tc.want) {
				t.Fatalf("http.route %v (set %v), want set %v", got.AsString(), ok, tc.route)
			}
			if (s.Status().Code == codes.Error) != tc.failed {
				t.Fatalf("status %v, want failed %v", s.Status(), tc.failed)
			}
		})
	}
}

func TestMiddlewareIsNotInTheChainWhenTracingIsOff(t *testing.T) {
	next := &plain{}
	got := tracing.Middleware(nil, func(*http.Request) (string, bool) { t.Fatal("named with tracing off"); return "", false })(next)
	if got != http.Handler(next) {
		t.Fatal("a wrapper was returned with tracing off")
	}
}

type plain struct{}

func (*plain) ServeHTTP(http.ResponseWriter, *http.Request) {}
