package speech

import "github.com/prometheus/client_golang/prometheus"

// Metrics counts what became of speech requests beyond what the HTTP series show: how many
// generations finished and how (a replay is not counted again), how much audio was billed,
// and how often a generation was run again after its process died. A nil *Metrics records nothing.
type Metrics struct {
	finished     *prometheus.CounterVec
	audioSeconds prometheus.Counter
	recovered    prometheus.Counter
}

// NewMetrics registers the speech metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		finished: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_speech_finished_total",
			Help: "Speech generations that finished, by status (completed, failed) and error code (empty when completed).",
		}, []string{"status", "code"}),
		audioSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mediagen_speech_audio_seconds_total",
			Help: "Measured seconds of generated speech audio, the billed quantity.",
		}),
		recovered: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "mediagen_speech_recovered_total",
			Help: "Speech generations run again after their run was interrupted (its process stopped).",
		}),
	}
	reg.MustRegister(m.finished, m.audioSeconds, m.recovered)
	return m
}

func (m *Metrics) completed(durationMicros int64) {
	if m == nil {
		return
	}
	m.finished.WithLabelValues("completed", "").Inc()
	m.audioSeconds.Add(float64(durationMicros) / 1e6)
}

// failed counts a failure under its code when it is one of the service's own, and under
// "upstream" otherwise: an engine's codes reach clients (checked by publicCode) but must not
// grow the label set.
func (m *Metrics) failed(code string) {
	if m == nil {
		return
	}
	switch code {
	case CodeGenerationFailed, CodeTimeout, "invalid_request_error":
	default:
		code = "upstream"
	}
	m.finished.WithLabelValues("failed", code).Inc()
}

func (m *Metrics) recoveredOne() {
	if m != nil {
		m.recovered.Inc()
	}
}
