package httpapi

import (
	"net/http"

	"go.opentelemetry.io/otel/attribute"

	"mediagen/internal/tracing"
)

// traceRequests makes each request a server span, continuing the client's trace when it
// sent a W3C traceparent. It is in the chain only when tracing is on (Config.Tracer): off,
// the request path does not even read the header. The span is named once the route is known
// ("POST /v1/videos"), from the request's record that observe fills in. The span's start,
// naming and status are tracing's (tracing.Middleware serves the admin listener the same way);
// the key and the error code are this API's.
func (s *Server) traceRequests(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracing.StartServer(s.tracer, r, tracing.KeyRequestID.String(requestIDFrom(r.Context())))
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
		info := infoFrom(ctx)
		if info == nil {
			return
		}
		// The console's page pattern is finer than the table's "/console/" (serveConsole).
		route := info.route
		if info.spanRoute != "" {
			route = info.spanRoute
		}
		tracing.NameRoute(span, route)
		tracing.SetStatus(span, info.status)
		if info.keyID != "" {
			span.SetAttributes(attribute.String("mediagen.key_id", info.keyID))
		}
		if info.errCode != "" {
			span.SetAttributes(attribute.String("error.type", info.errCode))
		}
	})
}

// consoleRouter is the console's routing table: the pattern a request matches (console.Tenant).
type consoleRouter interface {
	Route(r *http.Request) string
}

// nameConsoleSpan notes the console page's pattern for the request's span, when tracing is
// on and the console knows it ("GET /console/tasks/{id}" rather than "/console/").
func (s *Server) nameConsoleSpan(h http.Handler, r *http.Request) {
	if s.tracer == nil {
		return
	}
	cr, ok := h.(consoleRouter)
	if !ok {
		return
	}
	if info := infoFrom(r.Context()); info != nil {
		info.spanRoute = cr.Route(r)
	}
}
