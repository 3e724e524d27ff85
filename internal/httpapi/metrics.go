package httpapi

import (
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

type metrics struct {
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	accepted *prometheus.CounterVec
}

func newMetrics(reg *prometheus.Registry) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_http_requests_total", Help: "HTTP requests by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mediagen_http_request_duration_seconds", Help: "HTTP request latency by route pattern.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 10},
		}, []string{"route"}),
	}
	m.accepted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_tasks_accepted_total", Help: "Video tasks accepted (new, not replays), by route.",
	}, []string{"route"})
	reg.MustRegister(m.requests, m.latency, m.accepted)
	// A fresh registry has no process metrics; add them so one scrape shows the whole picture.
	_ = reg.Register(collectors.NewGoCollector())
	_ = reg.Register(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// observe records one request. route must be a pattern of the routing table or "unmatched";
// method and status are mapped onto closed sets here, because both come from outside (any
// token is a valid method on the wire) and every distinct label value is a series kept for
// the life of the process.
func (m *metrics) observe(route, method string, status int, d time.Duration) {
	m.requests.WithLabelValues(route, methodLabel(method), statusLabel(status)).Inc()
	m.latency.WithLabelValues(route).Observe(d.Seconds())
}

// methodLabel is the method for the metrics: one of the RFC 9110 methods, else "other".
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

// statusLabel is the status for the metrics: a code net/http knows a text for, else "other".
func statusLabel(code int) string {
	if code < 100 || code > 599 || http.StatusText(code) == "" {
		return "other"
	}
	return strconv.Itoa(code)
}

// MetricsHandler serves the Prometheus exposition, for a listener of its own
// (Config.MetricsElsewhere).
func (s *Server) MetricsHandler() http.Handler { return s.metricsHandler() }

func (s *Server) metricsHandler() http.Handler {
	// One failing collector (tasks_active with the database down) must not blank the whole
	// scrape: the other series are what an operator needs then.
	return promhttp.HandlerFor(s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError, ErrorLog: promLog{s.log}})
}

// promLog hands promhttp's collection errors to the service's logger.
type promLog struct{ log *slog.Logger }

func (l promLog) Println(v ...any) { l.log.Error("metrics collection", "err", fmt.Sprint(v...)) }
