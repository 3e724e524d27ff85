package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/tracing"
)

// startTracing builds the tracer provider the OTEL_* environment asks for (docs/tracing.md):
// the noop provider when no OTLP endpoint is set. Main owns it and flushes it on Close.
func (m *Main) startTracing(ctx context.Context) error {
	host, err := os.Hostname()
	if err != nil {
		host = "localhost"
	}
	p, err := tracing.Setup(ctx, tracing.Config{Getenv: m.getenv, InstanceID: host + "/" + idgen.New("proc"),
		Version: version, Role: m.Config.Role})
	if err != nil {
		return err
	}
	m.tracing = p
	if p.On() {
		m.log.Info("tracing on: spans are exported over OTLP/HTTP")
	}
	return nil
}

// stopTracing exports the spans still buffered, within a bound: a collector that is down
// must not hold the shutdown.
func (m *Main) stopTracing() error {
	if m.tracing == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := m.tracing.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: flush: %w", err)
	}
	return nil
}
