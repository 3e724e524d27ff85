package sqldb

import (
	"context"
	"fmt"
	"time"

	"mediagen/internal/store"
	"mediagen/internal/tracing"
)

// RenewJob extends a held lease (and the due time that mirrors it).
func (db *DB) RenewJob(ctx context.Context, id, token string, until time.Time) error {
	u := micros(until)
	res, err := db.writeExec(ctx, `UPDATE jobs SET lease_until = ?, run_at = ? WHERE id = ? AND lease_token = ?`, u, u, id, token)
	if err != nil {
		return fmt.Errorf("renew job %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("renew job %s: %w", id, store.ErrLeaseLost)
	}
	return nil
}

const (
	insertJobHead = `INSERT INTO jobs (id, kind, queue, ref, tenant_id, key_id, priority, payload, run_at, deadline, created_at, traceparent, tracestate, request_id)`
	insertJobTail = ` ON CONFLICT (id) DO NOTHING`
	insertJob     = insertJobHead + ` VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)` + insertJobTail
	jobColumns    = 14
)

func jobArgs(j store.Job) []any {
	return []any{j.ID, j.Kind, j.Queue, j.Ref, j.TenantID, j.KeyID, j.Priority, string(j.Payload), micros(j.RunAt), micros(j.Deadline), micros(j.CreatedAt),
		j.TraceParent, j.TraceState, j.RequestID}
}

// EnsureJob inserts the job unless its id exists.
func (db *DB) EnsureJob(ctx context.Context, j store.Job) error {
	if _, err := db.writeExec(ctx, insertJob, jobArgs(j)...); err != nil {
		return fmt.Errorf("ensure job %s: %w", j.ID, err)
	}
	return nil
}

// EnqueueJob inserts a job in the transaction of the record it is about. A job without a
// trace context gets ctx's (the request's span, when tracing is on), so the replica that
// runs it continues the request's trace.
func (t *Tx) EnqueueJob(ctx context.Context, j store.Job) error {
	if j.TraceParent == "" {
		j.TraceParent, j.TraceState = tracing.Carrier(ctx)
	}
	if err := t.insert(ctx, insertJobHead, insertJobTail, jobColumns, jobArgs(j)); err != nil {
		return fmt.Errorf("enqueue job %s: %w", j.ID, err)
	}
	return nil
}

// UpdateJob writes a run's outcome, fenced by the lease token.
func (t *Tx) UpdateJob(ctx context.Context, u store.JobUpdate) error {
	var q string
	var args []any
	switch {
	case u.Done:
		q, args = `DELETE FROM jobs WHERE id = ? AND lease_token = ?`, []any{u.ID, u.Token}
	case u.KeepLease:
		q, args = `UPDATE jobs SET last_error = last_error WHERE id = ? AND lease_token = ?`, []any{u.ID, u.Token}
	default:
		q = `UPDATE jobs SET run_at = ?, lease_until = 0, lease_token = '', attempts = ?, last_error = ?
			WHERE id = ? AND lease_token = ?`
		args = []any{micros(u.RunAt), u.Attempts, u.LastError, u.ID, u.Token}
	}
	res, err := t.exec(ctx, q, args...)
	if err != nil {
		return fmt.Errorf("update job %s: %w", u.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("update job %s: %w", u.ID, store.ErrLeaseLost)
	}
	return nil
}

// CountJobs counts jobs by kind and state: leased, due, and scheduled later.
func (db *DB) CountJobs(ctx context.Context, now time.Time) ([]store.JobCount, error) {
	n := micros(now)
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT kind, running, due, COUNT(*), MIN(run_at) FROM
		(SELECT kind, lease_until > ? AS running, run_at <= ? AS due, run_at FROM jobs) j
		GROUP BY kind, running, due ORDER BY kind`), n, n)
	if err != nil {
		return nil, fmt.Errorf("count jobs: %w", err)
	}
	defer rows.Close()
	var out []store.JobCount
	for rows.Next() {
		var c store.JobCount
		var oldest int64
		if err := rows.Scan(&c.Kind, &c.Running, &c.Due, &c.N, &oldest); err != nil {
			return nil, fmt.Errorf("count jobs: %w", err)
		}
		c.Oldest = fromMicros(oldest)
		if c.Running {
			c.Due = false
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
