package sqldb

import (
	"context"
	"fmt"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/store"
)

// claimQuery leases due tasks. The CTE picks the rows once, using the partial index
// tasks_due; on PostgreSQL the dialect adds FOR UPDATE SKIP LOCKED so concurrent claimers take
// disjoint rows without waiting (a plain "WHERE id IN (SELECT … LIMIT n)" may be re-evaluated
// by the planner and lease more than n rows); on SQLite the single writer serialises claimers.
const claimQuery = `WITH due AS (SELECT id AS due_id FROM tasks
		WHERE status IN ('queued', 'in_progress') AND next_run_at <= ? AND lease_until < ?
		ORDER BY next_run_at LIMIT ?%s)
	UPDATE tasks SET lease_token = ?, lease_until = ?
	FROM due WHERE tasks.id = due.due_id
	RETURNING ` + taskColumns + `, attempts, step, state`

// ClaimDue leases due tasks. Every claimed row gets the same fresh token: one claim is one
// worker's batch, and the token fences every later write of that batch's steps.
func (db *DB) ClaimDue(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Claimed, error) {
	if limit <= 0 {
		return nil, nil
	}
	token := idgen.New("lease")
	n := micros(now)
	q := fmt.Sprintf(claimQuery, db.d.ClaimLock())
	rows, err := db.write.QueryContext(ctx, db.q(q), n, n, limit, token, micros(now.Add(lease)))
	if err != nil {
		return nil, fmt.Errorf("claim: %w", err)
	}
	defer rows.Close()
	var out []store.Claimed
	for rows.Next() {
		var c store.Claimed
		var state string
		t, err := scanTask(scanFunc(func(dest ...any) error {
			return rows.Scan(append(dest, &c.Attempts, &c.Step, &state)...)
		}))
		if err != nil {
			return nil, fmt.Errorf("claim: %w", err)
		}
		c.Task, c.Token, c.State = t, token, []byte(state)
		out = append(out, c)
	}
	return out, rows.Err()
}

type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// AdvanceTask writes a step's outcome if the lease is still ours and the task not terminal.
func (t *Tx) AdvanceTask(ctx context.Context, a store.Advance) error {
	t.touch(a.ID)
	leaseClause := "lease_until = 0, lease_token = ''"
	if a.KeepLease {
		leaseClause = "lease_until = lease_until"
	}
	res, err := t.exec(ctx, `UPDATE tasks SET status = ?, progress = ?, step = ?, state = ?, attempts = ?,
		next_run_at = ?, result = ?, error_code = ?, error_message = ?, charged = ?, finished_at = ?,
		updated_at = ?, `+leaseClause+`
		WHERE id = ? AND lease_token = ? AND status IN ('queued', 'in_progress')`,
		a.Status, a.Progress, a.Step, string(a.State), a.Attempts, micros(a.NextRunAt), string(a.Result),
		a.ErrorCode, a.ErrorMessage, int64(a.Charged), micros(a.FinishedAt), micros(t.db.now()), a.ID, a.Token)
	if err != nil {
		return fmt.Errorf("advance %s: %w", a.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("advance %s: %w", a.ID, store.ErrLeaseLost)
	}
	if store.Terminal(a.Status) {
		// The update applied only to an unfinished task, so this runs once per task.
		return t.dropInFlight(ctx, "task", "tasks", a.ID)
	}
	return nil
}

// ReleaseLease hands the lease back and makes the task due now.
func (db *DB) ReleaseLease(ctx context.Context, id, token string) error {
	if db.tasks != nil {
		// next_run_at changes: bracket the write like a commit (taskCache.beginWrite).
		ids := []string{id}
		db.tasks.beginWrite(ids)
		defer db.tasks.endWrite(ids)
	}
	_, err := db.write.ExecContext(ctx, db.q(`UPDATE tasks SET lease_until = 0, lease_token = '', next_run_at = ?
		WHERE id = ? AND lease_token = ?`), micros(db.now()), id, token)
	if err != nil {
		return fmt.Errorf("release %s: %w", id, err)
	}
	return nil
}

// RenewLease extends a held lease. lease_until is not part of any cached task view, so the
// task cache needs no bracket here.
func (db *DB) RenewLease(ctx context.Context, id, token string, until time.Time) error {
	res, err := db.write.ExecContext(ctx, db.q(`UPDATE tasks SET lease_until = ?
		WHERE id = ? AND lease_token = ? AND status IN ('queued', 'in_progress')`), micros(until), id, token)
	if err != nil {
		return fmt.Errorf("renew lease %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("renew lease %s: %w", id, store.ErrLeaseLost)
	}
	return nil
}

// ActiveTasks counts unfinished tasks by route and status through the partial index tasks_due.
func (db *DB) ActiveTasks(ctx context.Context) ([]store.TaskCount, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT route, status, COUNT(*) FROM tasks
		WHERE status IN ('queued', 'in_progress') GROUP BY route, status ORDER BY route, status`)
	if err != nil {
		return nil, fmt.Errorf("active tasks: %w", err)
	}
	defer rows.Close()
	var out []store.TaskCount
	for rows.Next() {
		var c store.TaskCount
		if err := rows.Scan(&c.Route, &c.Status, &c.N); err != nil {
			return nil, fmt.Errorf("active tasks: %w", err)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CountTasks counts tasks by status.
func (db *DB) CountTasks(ctx context.Context) (map[string]int, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT status, COUNT(*) FROM tasks GROUP BY status`)
	if err != nil {
		return nil, fmt.Errorf("count tasks: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var s string
		var n int
		if err := rows.Scan(&s, &n); err != nil {
			return nil, err
		}
		out[s] = n
	}
	return out, rows.Err()
}
