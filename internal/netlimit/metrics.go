package netlimit

import "github.com/prometheus/client_golang/prometheus"

// The listeners of serve: the listener label of the connection series, a closed set.
const (
	ListenerAPI     = "api"
	ListenerDebug   = "debug"
	ListenerMetrics = "metrics"
	ListenerAdmin   = "admin"
)

// Metrics counts the connections of every bounded listener. Its label values come from the
// constants above, never from a client.
type Metrics struct {
	open    *prometheus.GaugeVec
	limit   *prometheus.GaugeVec
	refused *prometheus.CounterVec
	shed    *prometheus.CounterVec
}

// NewMetrics registers the connection series on reg, every series at 0.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mediagen_http_connections",
			Help: "Connections a listener holds open (api, debug, metrics, admin).",
		}, []string{"listener"}),
		limit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mediagen_http_connections_limit",
			Help: "The most connections a listener holds at once (--max-conns for api).",
		}, []string{"listener"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_http_connections_refused_total",
			Help: "Connections refused on accept, by listener and reason (per_client, high_water, full).",
		}, []string{"listener", "reason"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_http_idle_connections_closed_total",
			Help: "Idle keep-alive connections closed to make room for a new connection at the limit.",
		}, []string{"listener"}),
	}
	reg.MustRegister(m.open, m.limit, m.refused, m.shed)
	for _, l := range []string{ListenerAPI, ListenerDebug, ListenerMetrics, ListenerAdmin} {
		m.open.WithLabelValues(l)
		m.limit.WithLabelValues(l)
		m.shed.WithLabelValues(l)
		for _, r := range []string{ReasonPerClient, ReasonHighWater, ReasonFull} {
			m.refused.WithLabelValues(l, r)
		}
	}
	return m
}
