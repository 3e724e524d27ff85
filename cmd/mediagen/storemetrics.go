package main

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/store/sqldb"
)

// registerStoreMetrics exposes the store's own counters: how well group commit batches (the
// ratio of the two counters is the mean batch size) and how full the task cache is.
func registerStoreMetrics(reg *prometheus.Registry, db *sqldb.DB) {
	reg.MustRegister(
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mediagen_store_commits_total",
			Help: "Commits made by group commit: every transaction on SQLite, the creates on PostgreSQL.",
		}, func() float64 { c, _ := db.GroupStats(); return float64(c) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mediagen_store_grouped_transactions_total",
			Help: "Transactions carried by those commits; divided by mediagen_store_commits_total, the mean batch size.",
		}, func() float64 { _, n := db.GroupStats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Name: "mediagen_store_shared_reruns_total",
			Help: "PostgreSQL: transactions run again alone because the shared transaction carrying them failed before its commit (a deadlock, a lost connection).",
		}, func() float64 { return float64(db.GroupReruns()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mediagen_task_cache_entries",
			Help: "Tasks held by the task cache for polling (0 while a PostgreSQL replica's notification connection is down).",
		}, func() float64 { return float64(db.CachedTasks()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "mediagen_balance_cache_entries",
			Help: "Balances held by the balance cache.",
		}, func() float64 { return float64(db.CachedBalances()) }),
		activeTasks{db: db, desc: prometheus.NewDesc("mediagen_tasks_active",
			"Tasks not finished yet, by route and status (queued, in_progress); read from the database at each scrape.",
			[]string{"route", "status"}, nil)},
		upstreamSlots{db: db, desc: prometheus.NewDesc("mediagen_upstream_jobs_in_flight",
			"Upstream jobs in flight of each account with a max_in_flight (docs/upstreams.md); read from the database at each scrape.",
			[]string{"upstream"}, nil)},
	)
}

// activeTasks reads the unfinished tasks at scrape time: every replica sees the same numbers,
// whichever process accepted or runs the tasks.
type activeTasks struct {
	db   *sqldb.DB
	desc *prometheus.Desc
}

func (a activeTasks) Describe(ch chan<- *prometheus.Desc) { ch <- a.desc }

func (a activeTasks) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts, err := a.db.ActiveTasks(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(a.desc, err)
		return
	}
	for _, c := range counts {
		ch <- prometheus.MustNewConstMetric(a.desc, prometheus.GaugeValue, float64(c.N), c.Route, c.Status)
	}
}

// upstreamSlots reads the upstream jobs in flight of the accounts with a max_in_flight, at
// scrape time, the same on every replica.
type upstreamSlots struct {
	db   *sqldb.DB
	desc *prometheus.Desc
}

func (u upstreamSlots) Describe(ch chan<- *prometheus.Desc) { ch <- u.desc }

func (u upstreamSlots) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	slots, err := u.db.UpstreamSlots(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(u.desc, err)
		return
	}
	for account, n := range slots {
		ch <- prometheus.MustNewConstMetric(u.desc, prometheus.GaugeValue, float64(n), account)
	}
}
