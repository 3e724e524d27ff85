package tracing_test

import (
	"context"
	"errors"
	"testing"

	"mediagen/internal/tracing"
	"mediagen/internal/tracing/otlptest"
)

func envOf(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestSetupIsOffWithoutAnOTLPEndpoint(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"nothing set":          {},
		"exporter none":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_EXPORTER": "none"},
		"sdk disabled":         {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_SDK_DISABLED": "true"},
		"only a service named": {"OTEL_SERVICE_NAME": "x"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := tracing.Setup(context.Background(), tracing.Config{Getenv: envOf(env)})
			if err != nil {
				t.Fatal(err)
			}
			if p.On() || p.Tracer() != nil {
				t.Fatal("tracing is on")
			}
			if err := p.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSetupRefusesWhatItCannotExport(t *testing.T) {
	for name, env := range map[string]map[string]string{
		"grpc":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"bad timeout": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"},
		"bad sampler": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_SAMPLER": "sometimes"},
		"bad ratio":   {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "2"},
		"bad headers": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_HEADERS": "novalue"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := tracing.Setup(context.Background(), tracing.Config{Getenv: envOf(env)}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// A span started under a client's traceparent, carried as a job's trace context and
// extracted on "another replica", lands in the receiver under the client's trace, with the
// process's resource.
func TestCarriedContextContinuesTheClientsTrace(t *testing.T) {
	rec, url := otlptest.Start(t)
	ctx := context.Background()
	p, err := tracing.Setup(ctx, tracing.Config{Getenv: envOf(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": url,
		"OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=test%20one"}), InstanceID: "r1", Role: "api"})
	if err != nil {
		t.Fatal(err)
	}
	tr := p.Tracer()
	const client = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	ctx = tracing.Extract(ctx, client, "vendor=x")
	ctx, req := tracing.Start(ctx, tr, "request")
	parent, state := tracing.Carrier(ctx)
	if parent == "" || state != "vendor=x" {
		t.Fatalf("carrier %q %q", parent, state)
	}
	tracing.End(req, nil)
	runCtx := tracing.Extract(context.Background(), parent, state)
	_, run := tracing.Start(runCtx, tr, "run")
	tracing.End(run, errors.New("upstream: boom"))
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rec.Spans()
	if len(spans) != 2 {
		t.Fatalf("got %d spans: %+v", len(spans), spans)
	}
	byName := map[string]otlptest.Span{}
	for _, s := range spans {
		byName[s.Name] = s
		if s.TraceID != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("%s: trace %s, want the client's", s.Name, s.TraceID)
		}
		if s.Resource["service.instance.id"] != "r1" || s.Resource["service.name"] != "mediagen" ||
			s.Resource["deployment.environment.name"] != "test one" {
			t.Errorf("%s: resource %v", s.Name, s.Resource)
		}
	}
	if byName["request"].ParentID != "b7ad6b7169203331" {
		t.Errorf("request's parent %q, want the client's span", byName["request"].ParentID)
	}
	if byName["run"].ParentID != byName["request"].SpanID || !byName["run"].StatusError {
		t.Errorf("run %+v, want a failed child of the request", byName["run"])
	}
}

func TestOffCostsNothing(t *testing.T) {
	ctx := context.Background()
	allocs := testing.AllocsPerRun(100, func() {
		c, span := tracing.Start(ctx, nil, "x")
		tracing.End(span, nil)
		if p, _ := tracing.Carrier(c); p != "" {
			t.Fatal("a carrier without a span")
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations with tracing off", allocs)
	}
}
