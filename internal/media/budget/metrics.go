package budget

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Reasons of mediagen_media_refused_total: a closed set.
const (
	reasonBusy  = "busy"         // no slot freed within the request wait: 503
	reasonShare = "tenant_share" // the same, and the tenant holds its share: 429
)

// Tools of mediagen_media_processes_total: the media tools, and "other" for anything else.
var toolLabels = []string{"ffmpeg", "ffprobe", "espeak-ng", "other"}

// metrics are the budget's series. Their labels come from closed sets (the work, the reason,
// the tool), never from a tenant or key. A nil *metrics records nothing.
type metrics struct {
	refusals  *prometheus.CounterVec
	processes *prometheus.CounterVec
	wait      prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer, fair *Fair) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		refusals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_media_refused_total",
			Help: "Request-path media work refused by the media budget, by work (thumbnail, speech) and reason (busy: 503; tenant_share: 429).",
		}, []string{"work", "reason"}),
		processes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_media_processes_total",
			Help: "Media processes started under the media budget, by tool (ffmpeg, ffprobe, espeak-ng, other).",
		}, []string{"tool"}),
		wait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mediagen_media_slot_wait_seconds",
			Help:    "How long media work waited for a slot of the media budget before it got one.",
			Buckets: []float64{.001, .01, .1, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}),
	}
	for _, w := range []string{WorkThumbnail, WorkSpeech} {
		for _, r := range []string{reasonBusy, reasonShare} {
			m.refusals.WithLabelValues(w, r)
		}
	}
	for _, t := range toolLabels {
		m.processes.WithLabelValues(t)
	}
	reg.MustRegister(m.refusals, m.processes, m.wait,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mediagen_media_slots", Help: "Slots of the media budget (--media-slots): media processes this process runs at once.",
		}, func() float64 { return float64(fair.Usage().Size) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mediagen_media_slots_in_use", Help: "Slots of the media budget held now.",
		}, func() float64 { return float64(fair.Usage().InUse) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mediagen_media_slots_waiting", Help: "Media work waiting for a slot of the media budget now.",
		}, func() float64 { return float64(fair.Usage().Waiting) }))
	return m
}

func (m *metrics) refused(work, reason string) {
	if m != nil {
		m.refusals.WithLabelValues(work, reason).Inc()
	}
}

func (m *metrics) started(tool string) {
	if m == nil {
		return
	}
	switch tool {
	case "ffmpeg", "ffprobe", "espeak-ng":
	default:
		tool = "other"
	}
	m.processes.WithLabelValues(tool).Inc()
}

func (m *metrics) waited(d time.Duration) {
	if m != nil {
		m.wait.Observe(d.Seconds())
	}
}
