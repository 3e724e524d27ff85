package webhook

import "github.com/prometheus/client_golang/prometheus"

// Delivery attempt outcomes, the closed label set of mediagen_webhook_deliveries_total.
const (
	outcomeDelivered = "delivered" // 2xx
	outcomeRetry     = "retry"     // failed, another attempt scheduled
	outcomeGaveUp    = "gave_up"   // failed, the schedule is over
	outcomeRefused   = "refused"   // the address policy refused the destination (retried or not)
	outcomeDropped   = "dropped"   // endpoint deleted or disabled, or the tenant's switch off
)

type metrics struct {
	deliveries *prometheus.CounterVec
	sweptRows  prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_webhook_deliveries_total",
		Help: "Webhook delivery attempts by outcome (each attempt counted once): delivered, retry, gave_up, refused, dropped.",
	}, []string{"outcome"})}
	for _, o := range []string{outcomeDelivered, outcomeRetry, outcomeGaveUp, outcomeRefused, outcomeDropped} {
		m.deliveries.WithLabelValues(o)
	}
	m.sweptRows = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "mediagen_webhook_log_swept_total",
		Help: "Ended webhook deliveries (with their attempts) deleted from the delivery log by its retention sweep.",
	})
	if reg != nil {
		if err := reg.Register(m.deliveries); err != nil {
			if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
				m.deliveries = are.ExistingCollector.(*prometheus.CounterVec)
			}
		}
		if err := reg.Register(m.sweptRows); err != nil {
			if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
				m.sweptRows = are.ExistingCollector.(prometheus.Counter)
			}
		}
	}
	return m
}

func (m *metrics) swept(n int) {
	if m != nil && n > 0 {
		m.sweptRows.Add(float64(n))
	}
}

func (m *metrics) count(outcome string) {
	if m != nil {
		m.deliveries.WithLabelValues(outcome).Inc()
	}
}
