package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/blob"
)

// pingTimeout bounds one dependency check of a scrape: a database or bucket that takes longer
// to answer is as good as down for the requests waiting on it.
const pingTimeout = 2 * time.Second

// upGauge reports at each scrape whether a dependency answers (1) or not (0): the signal of
// the MediagenStoreDown and MediagenBlobStoreDown alerts (docs/operations.md). A gauge read
// at scrape time, not a counter of failures, so that it says "now" on an idle replica too.
type upGauge struct {
	desc *prometheus.Desc
	ping func(ctx context.Context) error
}

func (g upGauge) Describe(ch chan<- *prometheus.Desc) { ch <- g.desc }

func (g upGauge) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), pingTimeout)
	defer cancel()
	up := 1.0
	if g.ping(ctx) != nil {
		up = 0
	}
	ch <- prometheus.MustNewConstMetric(g.desc, prometheus.GaugeValue, up)
}

// registerHealthMetrics registers mediagen_store_up (the database answers a ping) and
// mediagen_blob_up (the result store's root or bucket is there).
func registerHealthMetrics(reg prometheus.Registerer, db interface{ Ping(context.Context) error }, blobs blob.Store) {
	reg.MustRegister(upGauge{
		desc: prometheus.NewDesc("mediagen_store_up", "1 when the database (SQLite or PostgreSQL) answered a ping at this scrape, 0 when not within 2 s.", nil, nil),
		ping: db.Ping,
	})
	if p, ok := blobs.(blob.Pinger); ok {
		reg.MustRegister(upGauge{
			desc: prometheus.NewDesc("mediagen_blob_up", "1 when the result store (the data directory's blobs, or the S3 bucket) was reachable at this scrape, 0 when not within 2 s.", nil, nil),
			ping: p.Ping,
		})
	}
}
