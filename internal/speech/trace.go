package speech

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/provider"
	"mediagen/internal/tracing"
)

// tracedEngine makes each call of an account's engine a span "upstream.synthesize" under
// the generation's job run, with the attributes of video's upstream spans: the account, the
// job run's attempt and the outcome, and which call of the run it was (upstream.try: a
// transient error's retry and each account of a routed request are calls of their own).
type tracedEngine struct {
	provider.Synthesizer
	tr      trace.Tracer
	account string
	tries   *int
}

func (e tracedEngine) Synthesize(ctx context.Context, r provider.SpeechRequest) (provider.Speech, error) {
	*e.tries++
	ctx, span := e.tr.Start(ctx, "upstream.synthesize", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		tracing.KeyAccount.String(e.account), tracing.KeyJobAttempt.Int(tracing.Attempt(ctx)),
		attribute.Int("upstream.try", *e.tries), attribute.String("mediagen.speech_id", r.IdempotencyKey)))
	out, err := e.Synthesizer.Synthesize(ctx, r)
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	span.SetAttributes(tracing.KeyOutcome.String(outcome))
	tracing.End(span, err)
	return out, err
}

// traced is the engine of account, traced when tracing is on (Service.Tracer); tries counts
// the run's calls across its accounts (nil when off). Off, it is e itself.
func (s *Service) traced(e provider.Synthesizer, account string, tries *int) provider.Synthesizer {
	if s.Tracer == nil || e == nil {
		return e
	}
	return tracedEngine{Synthesizer: e, tr: s.Tracer, account: account, tries: tries}
}
