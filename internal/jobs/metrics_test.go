package jobs

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/store"
)

// countsOnly is a Store whose only answer is a fixed CountJobs.
type countsOnly struct {
	Store
	counts []store.JobCount
}

func (c countsOnly) CountJobs(context.Context, time.Time) ([]store.JobCount, error) {
	return c.counts, nil
}

func TestQueueCollectorReportsTheOldestDueJobsWaitByKind(t *testing.T) {
	now := time.Date(2026, 11, 26, 3, 0, 0, 0, time.UTC)
	st := countsOnly{counts: []store.JobCount{
		{Kind: "video.task", Due: true, N: 3, Oldest: now.Add(-90 * time.Second)},
		{Kind: "video.task", Running: true, N: 2, Oldest: now.Add(-time.Hour)}, // leased: not waiting
		{Kind: "video.task", N: 1, Oldest: now.Add(time.Minute)},
		{Kind: "blob.retention", N: 1, Oldest: now.Add(time.Hour)}, // scheduled only: 0
		{Kind: "asset.ingest", Due: true, N: 1},                    // migrated with run_at 0: unknown, 0
	}}
	reg := prometheus.NewRegistry()
	reg.MustRegister(&queueCollector{st: st, now: func() time.Time { return now }})
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]float64{}
	for _, f := range fams {
		got[f.GetName()] = map[string]float64{}
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetValue())
			}
			got[f.GetName()][strings.Join(labels, ",")] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{"video.task": 90, "blob.retention": 0, "asset.ingest": 0}
	if !maps.Equal(got["mediagen_jobs_oldest_due_seconds"], want) {
		t.Errorf("mediagen_jobs_oldest_due_seconds: %v, want %v", got["mediagen_jobs_oldest_due_seconds"], want)
	}
	if n := len(got["mediagen_jobs"]); n != 5 {
		t.Errorf("mediagen_jobs series: %v, want 5 (video.task due, running, scheduled; blob.retention scheduled; asset.ingest due)", got["mediagen_jobs"])
	}
}
