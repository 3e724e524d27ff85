package sqldb

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"mediagen/internal/store"
)

// JobQueueStats counts the jobs table by kind: leased, due, scheduled later, and the oldest
// due job's run_at. The table holds only unfinished jobs (a finished one is deleted), so this
// reads the backlog, like CountJobs for the metrics, never the tasks.
func (db *DB) JobQueueStats(ctx context.Context, now time.Time) ([]store.JobQueueStat, error) {
	n := micros(now)
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT kind,
		COALESCE(SUM(CASE WHEN lease_until > ? THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN lease_until <= ? AND run_at <= ? THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN lease_until <= ? AND run_at > ? THEN 1 ELSE 0 END), 0),
		MIN(CASE WHEN lease_until <= ? AND run_at <= ? THEN run_at END)
		FROM jobs GROUP BY kind ORDER BY kind`), n, n, n, n, n, n, n)
	if err != nil {
		return nil, fmt.Errorf("job queue stats: %w", err)
	}
	defer rows.Close()
	var out []store.JobQueueStat
	for rows.Next() {
		var s store.JobQueueStat
		var oldest sql.NullInt64
		if err := rows.Scan(&s.Kind, &s.Running, &s.Due, &s.Scheduled, &oldest); err != nil {
			return nil, fmt.Errorf("job queue stats: %w", err)
		}
		if oldest.Valid {
			s.OldestDue = fromMicros(oldest.Int64)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// UpstreamSlotStats reads the upstream slot counts (in_flight rows of kind 'upstream', one per
// account) and the lines (upstream_waits, by its (account, seen_until) index).
func (db *DB) UpstreamSlotStats(ctx context.Context, now time.Time) ([]store.UpstreamSlotStat, error) {
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT account, CAST(SUM(held) AS BIGINT), CAST(SUM(waiting) AS BIGINT) FROM (
		SELECT owner AS account, n AS held, 0 AS waiting FROM in_flight WHERE kind = 'upstream'
		UNION ALL
		SELECT account, 0, COUNT(*) FROM upstream_waits WHERE seen_until >= ? GROUP BY account
	) s GROUP BY account ORDER BY account`), micros(now))
	if err != nil {
		return nil, fmt.Errorf("upstream slot stats: %w", err)
	}
	defer rows.Close()
	var out []store.UpstreamSlotStat
	for rows.Next() {
		var s store.UpstreamSlotStat
		if err := rows.Scan(&s.Account, &s.InFlight, &s.Waiting); err != nil {
			return nil, fmt.Errorf("upstream slot stats: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
