package jobs_test

import (
	"context"
	"errors"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"mediagen/internal/jobs"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
	"mediagen/internal/tracing"
)

// The trace context a job is enqueued under (a request's span on another replica) is stored
// with it and read back by the claim: each run is a span "job.run" under it, with the kind,
// the record, the attempt and how the run ended; spans of the run's handler are its children.
func TestJobRunsContinueTheTraceTheyWereEnqueuedUnder(t *testing.T) {
	db := openDB(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := tp.Tracer("test")

	const traceID, requestSpan = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	reqCtx := tracing.Extract(t.Context(), "00-"+traceID+"-"+requestSpan+"-01", "vendor=x")
	if err := db.Transact(reqCtx, func(tx store.Tx) error {
		return tx.EnqueueJob(reqCtx, store.Job{ID: "traced:1", Kind: "traced", Ref: "rec_1", RunAt: time.Now(), CreatedAt: time.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	h := &handler{run: func(ctx context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
		if tracing.Attempt(ctx) != j.Attempt {
			return jobs.Outcome{}, errors.New("the run's context has no attempt")
		}
		_, span := tracing.Start(ctx, tr, "inside")
		span.End()
		if j.Attempt == 1 {
			return jobs.Outcome{}, errors.New("first attempt fails")
		}
		return jobs.Outcome{Done: true}, nil
	}}
	e := jobs.New(jobs.Config{Store: db, Logger: quiet(), Tracer: tr})
	if err := e.Register(jobs.Kind{Name: "traced", Handler: h, Backoff: jobs.Exponential(time.Millisecond, time.Millisecond)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	testkit.WaitFor(t, 10*time.Second, "still waiting for the job to finish", func() bool { return jobCount(t, db, "traced") == 0 })
	e.Stop()

	var runs []tracetest.SpanStub
	inside := 0
	for _, s := range exp.GetSpans() {
		if s.SpanContext.TraceID().String() != traceID {
			continue
		}
		switch s.Name {
		case "job.run":
			runs = append(runs, s)
		case "inside":
			inside++
		}
	}
	if len(runs) != 2 || inside != 2 {
		t.Fatalf("%d job.run and %d inside spans in the request's trace, want 2 and 2", len(runs), inside)
	}
	for i, r := range runs {
		attrs := map[string]string{}
		for _, kv := range r.Attributes {
			attrs[string(kv.Key)] = kv.Value.String()
		}
		want := map[string]string{"job.kind": "traced", "job.ref": "rec_1", "job.attempt": []string{"1", "2"}[i],
			"job.outcome": []string{"retry", "done"}[i]}
		for k, v := range want {
			if attrs[k] != v {
				t.Errorf("run %d: %s = %q, want %q", i+1, k, attrs[k], v)
			}
		}
		if r.Parent.SpanID().String() != requestSpan || r.Parent.TraceState().String() != "vendor=x" {
			t.Errorf("run %d under %s (%s), want the request's span", i+1, r.Parent.SpanID(), r.Parent.TraceState())
		}
	}
}
