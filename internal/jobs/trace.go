package jobs

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/tracing"
)

// traceRun starts the span "job.run" of one run, as a child of the trace context the job was
// enqueued with (the request that made it, on whichever replica): one trace then shows the
// request and every run of its job. With tracing off it returns ctx and a span that does
// nothing.
func (p *producer) traceRun(ctx context.Context, j Job) (context.Context, trace.Span) {
	tr := p.e.cfg.Tracer
	if tr == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	ctx = tracing.WithAttempt(tracing.Extract(ctx, j.TraceParent, j.TraceState), j.Attempt)
	return tr.Start(ctx, "job.run", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
		attribute.String("job.kind", p.k.Name), attribute.String("job.id", j.ID), attribute.String("job.ref", j.Ref),
		tracing.KeyJobAttempt.Int(j.Attempt)))
}

// noteOutcome records how the run ended (done, again, retry, gave_up, lease_lost, handed_back)
// on its span.
func noteOutcome(ctx context.Context, label string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attribute.String("job.outcome", label))
	}
}
