package billing

import (
	"log/slog"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/money"
)

// ExcessMetrics counts upstream excess as it is settled. A nil *ExcessMetrics only logs.
type ExcessMetrics struct {
	count  *prometheus.CounterVec
	amount *prometheus.CounterVec
}

// NewExcessMetrics registers mediagen_upstream_excess_total{upstream,route,kind} and
// mediagen_upstream_excess_amount_total{upstream,route,kind,currency} on reg. Every label
// comes from a closed set: upstream is a catalog account name, route one of OverageRoutes,
// kind one of ExcessKinds, currency a catalog currency.
func NewExcessMetrics(reg prometheus.Registerer) *ExcessMetrics {
	m := &ExcessMetrics{
		count: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_upstream_excess_total",
			Help: "What upstream accounts did beyond a request or below its measured result, recorded at settlement and never charged to the tenant, by upstream account, route and kind (duration, over_request, usage_over, usage_under, lost_create).",
		}, []string{"upstream", "route", "kind"}),
		amount: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_upstream_excess_amount_total",
			Help: "The amounts of upstream excess records, in currency units, by upstream account, route, kind and currency.",
		}, []string{"upstream", "route", "kind", "currency"}),
	}
	reg.MustRegister(m.count, m.amount)
	return m
}

// Record counts and logs (at warn) the excess settled on one task or speech: ref, on key,
// charged charge. Call it after the settlement committed.
func (m *ExcessMetrics) Record(log *slog.Logger, route, currency, ref, keyID string, charge money.Micros, ex []Excess) {
	if !slices.Contains(OverageRoutes, route) {
		route = "other"
	}
	for _, e := range ex {
		kind := e.Kind
		if !slices.Contains(ExcessKinds, kind) {
			kind = "other"
		}
		if log != nil {
			log.Warn("upstream excess: the upstream went beyond the request (or reported below its result); the tenant was charged within the request, the rest is the operator's",
				"upstream", e.Upstream, "route", route, "ref", ref, "key", keyID, "kind", kind, "claimed", e.Claimed.String(),
				"charged", charge.String(), "amount", e.Amount.String(), "detail", e.Detail)
		}
		if m == nil {
			continue
		}
		m.count.WithLabelValues(e.Upstream, route, kind).Inc()
		m.amount.WithLabelValues(e.Upstream, route, kind, currency).Add(float64(e.Amount) / float64(money.Scale))
	}
}
