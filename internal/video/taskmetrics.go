package video

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/money"
)

// TaskMetrics are the series of video task runs. A nil *TaskMetrics records nothing.
type TaskMetrics struct {
	tasks    *prometheus.CounterVec
	steps    *prometheus.HistogramVec
	stepErrs *prometheus.CounterVec
	retries  *prometheus.CounterVec
	reserved *prometheus.CounterVec
	settled  *prometheus.CounterVec
}

// NewTaskMetrics registers the series on reg.
func NewTaskMetrics(reg prometheus.Registerer) *TaskMetrics {
	m := &TaskMetrics{
		tasks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_tasks_finished_total", Help: "Tasks that reached a terminal state, by route and state.",
		}, []string{"route", "status"}),
		steps: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mediagen_task_step_duration_seconds", Help: "Duration of one task step, by route and step.",
			Buckets: []float64{.005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"route", "step"}),
		stepErrs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_task_step_errors_total", Help: "Steps that failed (upstream or storage errors), by route and step.",
		}, []string{"route", "step"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_task_step_retries_total", Help: "Steps scheduled for a retry, by route and step.",
		}, []string{"route", "step"}),
		reserved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_settled_reserved_units_total", Help: "Reservations released by settlement, in currency units, by route.",
		}, []string{"route"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_settled_amount_units_total", Help: "Final amounts charged at settlement, in currency units, by route.",
		}, []string{"route"}),
	}
	reg.MustRegister(m.tasks, m.steps, m.stepErrs, m.retries, m.reserved, m.settled)
	return m
}

func (m *TaskMetrics) stepDone(route, step string, d time.Duration, err error) {
	if m == nil {
		return
	}
	if step == "" {
		step = "start"
	}
	m.steps.WithLabelValues(route, step).Observe(d.Seconds())
	if err != nil {
		m.stepErrs.WithLabelValues(route, step).Inc()
	}
}

func (m *TaskMetrics) retried(route, step string) {
	if m == nil {
		return
	}
	if step == "" {
		step = "start"
	}
	m.retries.WithLabelValues(route, step).Inc()
}

func (m *TaskMetrics) finished(route, status string, reserved, charged money.Micros) {
	if m == nil {
		return
	}
	m.tasks.WithLabelValues(route, status).Inc()
	m.reserved.WithLabelValues(route).Add(float64(reserved) / money.Scale)
	m.settled.WithLabelValues(route).Add(float64(charged) / money.Scale)
}
