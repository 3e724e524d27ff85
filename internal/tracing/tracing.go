// Package tracing sets up OpenTelemetry traces for one process and carries a trace from the
// request that starts work to the replica that does it. With no OTLP endpoint configured
// (OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) Provider is the noop
// provider and Tracer is nil, which every instrumented package reads as "off": nothing is
// wrapped, so the request path pays nothing. See docs/tracing.md.
package tracing

import (
	"context"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// ScopeName is the instrumentation scope of every span the service makes.
const ScopeName = "mediagen"

// Config is what Setup reads.
type Config struct {
	// Getenv reads the environment (the OTEL_* variables); the process's own in production.
	Getenv func(string) string
	// InstanceID is service.instance.id: unique per process, so spans show which replica
	// made them (OTEL_RESOURCE_ATTRIBUTES may set it instead).
	InstanceID string
	// Version is service.version; Role is mediagen.role (all, api, worker).
	Version, Role string
}

// Provider is the process's tracer provider: the SDK exporting over OTLP/HTTP, or the noop
// provider when tracing is off.
type Provider struct {
	trace.TracerProvider
	sdk *sdktrace.TracerProvider // nil: off
}

// Off is the provider of a process without tracing.
func Off() *Provider { return &Provider{TracerProvider: noop.NewTracerProvider()} }

// On reports whether spans are recorded and exported.
func (p *Provider) On() bool { return p != nil && p.sdk != nil }

// Tracer is the service's tracer, or nil when tracing is off: instrumented code checks for
// nil and does nothing, not even a noop span's context.
func (p *Provider) Tracer() trace.Tracer {
	if !p.On() {
		return nil
	}
	return p.sdk.Tracer(ScopeName)
}

// ForceFlush exports every span ended so far.
func (p *Provider) ForceFlush(ctx context.Context) error {
	if !p.On() {
		return nil
	}
	return p.sdk.ForceFlush(ctx)
}

// Shutdown flushes the spans still buffered and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.On() {
		return nil
	}
	return p.sdk.Shutdown(ctx)
}

// Setup builds the provider the environment asks for: Off when neither
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT nor OTEL_EXPORTER_OTLP_ENDPOINT is set (or
// OTEL_TRACES_EXPORTER is "none"), else an SDK provider batching spans to the OTLP/HTTP
// (protobuf) endpoint. The variables are read through c.Getenv, never os.Getenv, so one
// process can run several differently configured instances (tests, benchmarks).
func Setup(ctx context.Context, c Config) (*Provider, error) {
	get := c.Getenv
	endpoint, ok := tracesURL(get)
	if !ok || strings.EqualFold(strings.TrimSpace(get("OTEL_TRACES_EXPORTER")), "none") || envTrue(get("OTEL_SDK_DISABLED")) {
		return Off(), nil
	}
	if proto := firstSet(get, "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"); proto != "" && proto != "http/protobuf" {
		return nil, fmt.Errorf("tracing: OTLP protocol %q is not supported: use http/protobuf", proto)
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(endpoint)}
	headers, err := parseList(firstSet(get, "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_HEADERS"))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_HEADERS: %w", err)
	}
	if len(headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(headers))
	}
	if v := firstSet(get, "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_EXPORTER_OTLP_TIMEOUT"); v != "" {
		ms, err := strconv.Atoi(v)
		if err != nil || ms <= 0 {
			return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_TIMEOUT %q: want milliseconds", v)
		}
		opts = append(opts, otlptracehttp.WithTimeout(time.Duration(ms)*time.Millisecond))
	}
	switch v := firstSet(get, "OTEL_EXPORTER_OTLP_TRACES_COMPRESSION", "OTEL_EXPORTER_OTLP_COMPRESSION"); v {
	case "", "none":
	case "gzip":
		opts = append(opts, otlptracehttp.WithCompression(otlptracehttp.GzipCompression))
	default:
		return nil, fmt.Errorf("tracing: OTEL_EXPORTER_OTLP_COMPRESSION %q: want gzip or none", v)
	}
	sampler, err := samplerFrom(get("OTEL_TRACES_SAMPLER"), get("OTEL_TRACES_SAMPLER_ARG"))
	if err != nil {
		return nil, err
	}
	res, err := resourceFrom(c)
	if err != nil {
		return nil, err
	}
	exp, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	sdk := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(sampler))
	return &Provider{TracerProvider: sdk, sdk: sdk}, nil
}

// tracesURL is the traces endpoint: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT as it is, or
// OTEL_EXPORTER_OTLP_ENDPOINT with /v1/traces appended (the specification's rule).
func tracesURL(get func(string) string) (string, bool) {
	if v := strings.TrimSpace(get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")); v != "" {
		return v, true
	}
	if v := strings.TrimSpace(get("OTEL_EXPORTER_OTLP_ENDPOINT")); v != "" {
		return strings.TrimRight(v, "/") + "/v1/traces", true
	}
	return "", false
}

func firstSet(get func(string) string, names ...string) string {
	for _, n := range names {
		if v := strings.TrimSpace(get(n)); v != "" {
			return v
		}
	}
	return ""
}

func envTrue(v string) bool { return strings.EqualFold(strings.TrimSpace(v), "true") }

// parseList reads the W3C-baggage-like "k=v,k2=v2" lists of OTEL_EXPORTER_OTLP_HEADERS and
// OTEL_RESOURCE_ATTRIBUTES, values percent-decoded.
func parseList(s string) (map[string]string, error) {
	out := map[string]string{}
	for item := range strings.SplitSeq(s, ",") {
		if strings.TrimSpace(item) == "" {
			continue
		}
		k, v, ok := strings.Cut(item, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("item %q is not key=value", item)
		}
		dv, err := url.PathUnescape(strings.TrimSpace(v))
		if err != nil {
			return nil, fmt.Errorf("item %q: %w", k, err)
		}
		out[k] = dv
	}
	return out, nil
}

// samplerFrom reads OTEL_TRACES_SAMPLER and its argument; the default follows a client's
// sampling decision and samples every trace that starts here.
func samplerFrom(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || r < 0 || r > 1 {
			return 0, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER_ARG %q: want a ratio from 0 to 1", arg)
		}
		return r, nil
	}
	switch strings.TrimSpace(name) {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio":
		r, err := ratio()
		return sdktrace.TraceIDRatioBased(r), err
	case "parentbased_traceidratio":
		r, err := ratio()
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(r)), err
	}
	return nil, fmt.Errorf("tracing: OTEL_TRACES_SAMPLER %q is not supported", name)
}

// resourceFrom describes the process: service.name (OTEL_SERVICE_NAME, default mediagen),
// service.instance.id, service.version, mediagen.role, then OTEL_RESOURCE_ATTRIBUTES.
func resourceFrom(c Config) (*resource.Resource, error) {
	attrs := map[string]string{"service.name": "mediagen", "service.instance.id": c.InstanceID,
		"service.version": c.Version, "mediagen.role": c.Role}
	extra, err := parseList(c.Getenv("OTEL_RESOURCE_ATTRIBUTES"))
	if err != nil {
		return nil, fmt.Errorf("tracing: OTEL_RESOURCE_ATTRIBUTES: %w", err)
	}
	for k, v := range extra {
		attrs[k] = v
	}
	if v := strings.TrimSpace(c.Getenv("OTEL_SERVICE_NAME")); v != "" {
		attrs["service.name"] = v
	}
	kvs := make([]attribute.KeyValue, 0, len(attrs))
	for k, v := range attrs {
		if v != "" {
			kvs = append(kvs, attribute.String(k, v))
		}
	}
	return resource.NewSchemaless(kvs...), nil
}
