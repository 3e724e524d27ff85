package httpapi

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/tracing"
)

// traceRequests makes each request a server span, continuing the client's trace when it
// sent a W3C traceparent. It is in the chain only when tracing is on (Config.Tracer): off,
// the request path does not even read the header. The span is named once the route is known
// ("POST /v1/videos"), from the request's record that observe fills in.
func (s *Server) traceRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := tracing.ExtractHeader(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := s.tracer.Start(ctx, r.Method, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(
			attribute.String("http.request.method", methodLabel(r.Method)), attribute.String("url.path", r.URL.Path),
			attribute.String("mediagen.request_id", requestIDFrom(r.Context()))))
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
		info := infoFrom(ctx)
		if info == nil {
			return
		}
		if info.route != "" {
			// The pattern includes the method ("POST /v1/videos"): the span's name.
			span.SetName(info.route)
			span.SetAttributes(attribute.String("http.route", info.route))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", info.status))
		if info.keyID != "" {
			span.SetAttributes(attribute.String("mediagen.key_id", info.keyID))
		}
		if info.errCode != "" {
			span.SetAttributes(attribute.String("error.type", info.errCode))
		}
		if info.status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(info.status))
		}
	})
}
