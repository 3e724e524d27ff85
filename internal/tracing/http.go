package tracing

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// Attribute keys of server spans.
const (
	KeyHTTPMethod = attribute.Key("http.request.method")
	KeyHTTPRoute  = attribute.Key("http.route")
	KeyHTTPStatus = attribute.Key("http.response.status_code")
	KeyURLPath    = attribute.Key("url.path")
	KeyRequestID  = attribute.Key("mediagen.request_id")
)

// RouteFunc names a request for its server span before it is served: the route pattern it
// matches ("GET /admin/v1/keys/{id}") with route true, or, when no pattern matches, a name
// from a closed set (the method and a fixed label) with route false. Never the raw path: a
// path holds ids, and span names are grouped by backends.
type RouteFunc func(r *http.Request) (name string, route bool)

// Middleware makes each request through the handler it wraps a server span named by route,
// continuing the client's W3C traceparent, with the response's status. With tr nil (tracing
// off) it returns the handler itself: nothing is in the chain.
func Middleware(tr trace.Tracer, route RouteFunc) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		if tr == nil {
			return next
		}
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			name, isRoute := route(r)
			ctx, span := StartServer(tr, r)
			defer span.End()
			sw := &statusWriter{ResponseWriter: w}
			next.ServeHTTP(sw, r.WithContext(ctx))
			if id := w.Header().Get("X-Request-Id"); id != "" {
				span.SetAttributes(KeyRequestID.String(id))
			}
			if isRoute {
				NameRoute(span, name)
			} else {
				span.SetName(name)
			}
			if sw.status == 0 {
				sw.status = http.StatusOK
			}
			SetStatus(span, sw.status)
		})
	}
}

// StartServer starts the server span of r, continuing the client's trace when it sent a W3C
// traceparent. The span is named by the method until NameRoute names it by its route.
func StartServer(tr trace.Tracer, r *http.Request, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx := ExtractHeader(r.Context(), propagation.HeaderCarrier(r.Header))
	method := MethodLabel(r.Method)
	attrs = append(attrs, KeyHTTPMethod.String(method), KeyURLPath.String(r.URL.Path))
	return tr.Start(ctx, method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// NameRoute names a server span by the route pattern its request matched; a pattern with the
// method ("POST /v1/videos") is the whole name.
func NameRoute(span trace.Span, pattern string) {
	if pattern == "" {
		return
	}
	span.SetName(pattern)
	span.SetAttributes(KeyHTTPRoute.String(pattern))
}

// SetStatus records the response's status on a server span: failed on a 5xx, as the
// semantic conventions ask (a 4xx is the client's, not the server's, error).
func SetStatus(span trace.Span, status int) {
	span.SetAttributes(KeyHTTPStatus.Int(status))
	if status >= 500 {
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}

// MethodLabel is the method for a span name or attribute: a standard method as it is, any
// other "other", so a client cannot make names without bound.
func MethodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// statusWriter notes the status a handler answered with.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 { // a 1xx is not the answer
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection's writer (Flush, deadlines).
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
