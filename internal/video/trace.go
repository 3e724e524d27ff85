package video

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/jobs"
	"mediagen/internal/store"
	"mediagen/internal/tracing"
)

// traceUpstream records one upstream call as a span "upstream.<call>" (submit, poll, find)
// that began at start and ends now: the account, the job run's attempt and the outcome.
// The span is made after the call, so the adapters stay free of tracing.
func (s *stepCtx) traceUpstream(ctx context.Context, call string, start time.Time, err error) {
	tr := s.p.Tracer
	if tr == nil {
		return
	}
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	_, span := tr.Start(ctx, "upstream."+call, trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start),
		trace.WithAttributes(tracing.KeyAccount.String(s.account()), tracing.KeyJobAttempt.Int(tracing.Attempt(ctx)),
			tracing.KeyOutcome.String(outcome), attribute.String("mediagen.task_id", s.c.ID), attribute.String("mediagen.phase", s.phase)))
	tracing.End(span, err)
}

// tracedMeasure is measure in a span "media.probe".
func (p *Pipeline) tracedMeasure(ctx context.Context, path string) (measuredResult, error) {
	ctx, span := p.Tracer.Start(ctx, "media.probe", trace.WithAttributes(attribute.String("media.source", "result")))
	m, err := p.measureFile(ctx, path)
	if err == nil {
		span.SetAttributes(attribute.Float64("media.duration_s", m.length), attribute.Int("media.width", m.info.Width),
			attribute.Int("media.height", m.info.Height))
	}
	tracing.End(span, err)
	return m, err
}

// traceSettle wraps a task's terminal write and settlement in a span "task.settle", inside
// the transaction that ends its job (the store.tx span of the engine's commit).
func (h *Tasks) traceSettle(taskID, status string, apply jobs.Apply) jobs.Apply {
	if h.Tracer == nil {
		return apply
	}
	return func(ctx context.Context, tx store.Tx) error {
		ctx, span := h.Tracer.Start(ctx, "task.settle", trace.WithAttributes(
			attribute.String("mediagen.task_id", taskID), attribute.String("mediagen.status", status)))
		err := apply(ctx, tx)
		tracing.End(span, err)
		return err
	}
}
