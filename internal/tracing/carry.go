package tracing

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// w3c reads and writes the W3C traceparent and tracestate headers. It is the only propagator:
// the service takes no baggage or vendor formats.
var w3c propagation.TraceContext

// none is the span of a context without one: it records nothing and allocates nothing.
var none = trace.SpanFromContext(context.Background())

// Start starts a span named name under ctx's span when tr is set. With tr nil (tracing off)
// it returns ctx as it is and a span that does nothing, at the cost of a nil check.
func Start(ctx context.Context, tr trace.Tracer, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if tr == nil {
		return ctx, none
	}
	return tr.Start(ctx, name, opts...)
}

// End ends span, marking it failed with err's text when err is set. Span text is for
// operators (the trace backend), never for clients.
func End(span trace.Span, err error) {
	Fail(span, err)
	span.End()
}

// Fail marks span failed with err's text; nothing when err is nil.
func Fail(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
}

// Carrier is the W3C trace context of ctx's span, to store with work another process will
// do: "" and "" when ctx has no valid span context (tracing off, no client trace).
func Carrier(ctx context.Context) (traceparent, tracestate string) {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return "", ""
	}
	var c mapCarrier
	w3c.Inject(ctx, &c)
	return c.parent, c.state
}

// Extract returns ctx carrying the remote span context that traceparent and tracestate
// name, for a span started under it to continue that trace; ctx as it is when traceparent is
// empty or malformed.
func Extract(ctx context.Context, traceparent, tracestate string) context.Context {
	if traceparent == "" {
		return ctx
	}
	return w3c.Extract(ctx, &mapCarrier{parent: traceparent, state: tracestate})
}

// ExtractHeader is Extract from request headers (a client's traceparent and tracestate).
func ExtractHeader(ctx context.Context, h propagation.HeaderCarrier) context.Context {
	return w3c.Extract(ctx, h)
}

// mapCarrier holds the two W3C fields without a map.
type mapCarrier struct{ parent, state string }

func (c *mapCarrier) Get(key string) string {
	switch key {
	case "traceparent":
		return c.parent
	case "tracestate":
		return c.state
	}
	return ""
}

func (c *mapCarrier) Set(key, value string) {
	switch key {
	case "traceparent":
		c.parent = value
	case "tracestate":
		c.state = value
	}
}

func (c *mapCarrier) Keys() []string { return []string{"traceparent", "tracestate"} }

type attemptKey struct{}

// WithAttempt notes the job run's attempt in ctx (the job engine does, when tracing is on),
// so that spans deeper in the run (upstream calls) can say which attempt made them.
func WithAttempt(ctx context.Context, attempt int) context.Context {
	return context.WithValue(ctx, attemptKey{}, attempt)
}

// Attempt is the job run's attempt WithAttempt noted (0: none).
func Attempt(ctx context.Context) int {
	n, _ := ctx.Value(attemptKey{}).(int)
	return n
}

// Attribute keys shared by several packages.
const (
	KeyJobAttempt = attribute.Key("job.attempt")
	KeyAccount    = attribute.Key("upstream.account")
	KeyOutcome    = attribute.Key("outcome")
)
