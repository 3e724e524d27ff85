package billing

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/money"
)

// OverageRoutes are the values of the route label of the overage metrics: a closed set.
var OverageRoutes = []string{"native", "production", "enhancement", "speech"}

// Overages counts settlements whose final amount exceeded the reservation. Since charges are
// bounded by their reservation (Final, SpeechFinal), none should ever be counted: the
// overage transaction of Settle is a defence in depth, and each one is logged as a bug. A nil
// *Overages only logs.
type Overages struct {
	count  *prometheus.CounterVec
	amount *prometheus.CounterVec
}

// NewOverages registers mediagen_settlement_overage_total{route} and
// mediagen_settlement_overage_amount_total{route,currency} on reg.
func NewOverages(reg prometheus.Registerer) *Overages {
	o := &Overages{
		count: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_settlement_overage_total",
			Help: "Settlements whose final amount exceeded the reservation (collected as an overage ledger transaction), by route.",
		}, []string{"route"}),
		amount: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_settlement_overage_amount_total",
			Help: "Amount collected above reservations, in currency units, by route and currency.",
		}, []string{"route", "currency"}),
	}
	reg.MustRegister(o.count, o.amount)
	for _, r := range OverageRoutes {
		o.count.WithLabelValues(r) // present at 0 from the start, so alerts can use rate()
	}
	return o
}

// Record counts and logs one overage. route must be one of OverageRoutes (anything else is
// counted as "other", so no caller can grow the label set); currency comes from the catalog.
func (o *Overages) Record(log *slog.Logger, route, currency, keyID, ref string, reserved, final money.Micros) {
	over := final - reserved
	if over <= 0 {
		return
	}
	if log != nil {
		// Final bounds every charge by its reservation, so an overage is a bug of ours: the
		// defence in depth collected it, and someone must look.
		log.Error("BUG: settlement above its reservation, although every charge is bounded by it; the overage was collected and recorded",
			"route", route, "ref", ref, "key", keyID, "reserved", reserved.String(), "charged", final.String(), "overage", over.String())
	}
	if o == nil {
		return
	}
	known := false
	for _, r := range OverageRoutes {
		known = known || r == route
	}
	if !known {
		route = "other"
	}
	o.count.WithLabelValues(route).Inc()
	o.amount.WithLabelValues(route, currency).Add(float64(over) / float64(money.Scale))
}
