package jobs

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the engine's series, labelled by kind. A nil *metrics records nothing.
type metrics struct {
	runs     *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inRun    *prometheus.GaugeVec
}

// Outcome labels of mediagen_job_runs_total: a closed set.
//   - done: the job finished; again: it made progress and runs again; retry: it failed and
//     runs again after a backoff; gave_up: attempts or deadline exhausted; handed_back: cut
//     short by shutdown; lease_lost: another process took it over.
func newMetrics(reg prometheus.Registerer, st Store, now func() time.Time) *metrics {
	if reg == nil {
		return nil
	}
	m := &metrics{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mediagen_job_runs_total", Help: "Job runs by kind and outcome (done, again, retry, gave_up, handed_back, lease_lost).",
		}, []string{"kind", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "mediagen_job_run_duration_seconds", Help: "Duration of one job run, by kind.",
			Buckets: []float64{.005, .01, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		}, []string{"kind"}),
		inRun: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "mediagen_jobs_running", Help: "Jobs running in this process, by kind.",
		}, []string{"kind"}),
	}
	reg.MustRegister(m.runs, m.duration, m.inRun, &queueCollector{st: st, now: now})
	return m
}

func (m *metrics) outcome(kind, label string) {
	if m != nil {
		m.runs.WithLabelValues(kind, label).Inc()
	}
}

func (m *metrics) ran(kind string, d time.Duration) {
	if m != nil {
		m.duration.WithLabelValues(kind).Observe(d.Seconds())
	}
}

func (m *metrics) running(kind string, delta float64) {
	if m != nil {
		m.inRun.WithLabelValues(kind).Add(delta)
	}
}

// queueCollector reports the jobs table by kind and state at scrape time, across all
// processes sharing the database.
type queueCollector struct {
	st  Store
	now func() time.Time
}

var queueDesc = prometheus.NewDesc("mediagen_jobs", "Jobs in the queue by kind and state (running: leased; due: waiting for a worker; scheduled: due later).",
	[]string{"kind", "state"}, nil)

// oldestDueDesc is the queue's age: how long work has waited for a worker. A count of due
// jobs alone cannot tell a busy queue that moves from a stuck one.
var oldestDueDesc = prometheus.NewDesc("mediagen_jobs_oldest_due_seconds",
	"Seconds the oldest due job of a kind has waited for a worker (0 when none is due); the whole queue, read from the database at each scrape.",
	[]string{"kind"}, nil)

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDesc
	ch <- oldestDueDesc
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	now := c.now()
	counts, err := c.st.CountJobs(ctx, now)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(queueDesc, err)
		return
	}
	sums := map[[2]string]int{}
	waited := map[string]float64{} // every kind in the table, so the series exists at 0
	for _, n := range counts {
		age := 0.0
		if n.Due && !n.Running && !n.Oldest.IsZero() {
			age = max(now.Sub(n.Oldest).Seconds(), 0)
		}
		waited[n.Kind] = max(waited[n.Kind], age)
		state := "scheduled"
		switch {
		case n.Running:
			state = "running"
		case n.Due:
			state = "due"
		}
		sums[[2]string{n.Kind, state}] += n.N
	}
	for k, n := range sums {
		ch <- prometheus.MustNewConstMetric(queueDesc, prometheus.GaugeValue, float64(n), k[0], k[1])
	}
	for kind, age := range waited {
		ch <- prometheus.MustNewConstMetric(oldestDueDesc, prometheus.GaugeValue, age, kind)
	}
}
