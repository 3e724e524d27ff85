package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"

	"mediagen/internal/httpapi"
	"mediagen/internal/netlimit"
)

// startDebug serves the Go profiler on its own listener. It is a separate server so the
// profiling routes can never be reached through the public API address, and it is off unless
// --debug-listen is set.
func (m *Main) startDebug() error {
	ln, err := net.Listen("tcp", m.Config.DebugListen)
	if err != nil {
		return fmt.Errorf("debug listen on %s: %w", m.Config.DebugListen, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
	bounded := wrapOps(netlimit.ListenerDebug, ln, m.Config.proxies, m.connMetrics)
	m.debug = httpapi.NewOpsServer(mux, httpapi.DebugWriteTimeout, slog.NewLogLogger(m.log.Handler(), slog.LevelWarn))
	m.debug.ConnState = bounded.ConnState
	m.debugAddr = ln.Addr().String()
	go func() { _ = m.debug.Serve(bounded) }()
	m.log.Info("profiling enabled", "addr", m.debugAddr)
	return nil
}

// startMetrics serves /metrics on its own listener (--metrics-listen); the API's handler then
// leaves the route out, so the series are not readable through the public address.
func (m *Main) startMetrics(h http.Handler) error {
	ln, err := net.Listen("tcp", m.Config.MetricsListen)
	if err != nil {
		return fmt.Errorf("metrics listen on %s: %w", m.Config.MetricsListen, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", h)
	bounded := wrapOps(netlimit.ListenerMetrics, ln, m.Config.proxies, m.connMetrics)
	m.metrics = httpapi.NewOpsServer(mux, httpapi.MetricsWriteTimeout, slog.NewLogLogger(m.log.Handler(), slog.LevelWarn))
	m.metrics.ConnState = bounded.ConnState
	m.metricsAddr = ln.Addr().String()
	go func() { _ = m.metrics.Serve(bounded) }()
	m.log.Info("metrics on their own listener", "addr", m.metricsAddr)
	return nil
}
