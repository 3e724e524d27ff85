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

type metrics struct{ deliveries *prometheus.CounterVec }

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_webhook_deliveries_total",
		Help: "Webhook delivery attempts by outcome (each attempt counted once): delivered, retry, gave_up, refused, dropped.",
	}, []string{"outcome"})}
	for _, o := range []string{outcomeDelivered, outcomeRetry, outcomeGaveUp, outcomeRefused, outcomeDropped} {
		m.deliveries.WithLabelValues(o)
	}
	if reg != nil {
		if err := reg.Register(m.deliveries); err != nil {
			if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
				m.deliveries = are.ExistingCollector.(*prometheus.CounterVec)
			}
		}
	}
	return m
}

func (m *metrics) count(outcome string) {
	if m != nil {
		m.deliveries.WithLabelValues(outcome).Inc()
	}
}
