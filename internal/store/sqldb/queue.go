package sqldb

import (
	"context"
	"fmt"

	"mediagen/internal/store"
)

// TaskRun reads a whole task with its step and state, for its job. A read transaction sees
// every committed write (WAL on SQLite), so the read pool serves it and the single SQLite
// writer is left to writes.
func (db *DB) TaskRun(ctx context.Context, id string) (store.TaskRun, error) {
	var r store.TaskRun
	var state string
	t, err := scanTask(scanFunc(func(dest ...any) error {
		return db.readRow(ctx, `SELECT `+taskColumns+`, step, state FROM tasks WHERE id = ?`, id).
			Scan(append(dest, &r.Step, &state)...)
	}))
	if err != nil {
		return r, fmt.Errorf("task run %s: %w", id, err)
	}
	r.Task = t
	if state != "" {
		r.State = []byte(state)
	}
	return r, nil
}

type scanFunc func(dest ...any) error

func (f scanFunc) Scan(dest ...any) error { return f(dest...) }

// AdvanceTask writes a run's outcome if the task is not terminal. The caller's job lease,
// checked in the same transaction, is what fences a run that was taken over.
func (t *Tx) AdvanceTask(ctx context.Context, a store.Advance) error {
	t.touch(a.ID)
	// The event goes first, while the row still holds the status it moves from; it is
	// written only for an unfinished task whose status or step changes (or with a reason),
	// so polls that only move the progress add nothing. If the update below finds the task
	// finished, its ErrLeaseLost rolls the event back with it.
	now := micros(t.db.now())
	if _, err := t.exec(ctx, advanceEventSQL, a.ID, now, a.Status, a.Step, a.Attempt, a.Upstream, a.UpstreamJob,
		a.Detail, a.ID, a.Status, a.Step, a.Detail); err != nil {
		return fmt.Errorf("advance %s: event: %w", a.ID, err)
	}
	res, err := t.exec(ctx, `UPDATE tasks SET status = ?, progress = ?, step = ?, state = ?,
		result = ?, error_code = ?, error_message = ?, charged = ?, finished_at = ?, updated_at = ?
		WHERE id = ? AND status IN ('queued', 'in_progress')`,
		a.Status, a.Progress, a.Step, string(a.State), string(a.Result),
		a.ErrorCode, a.ErrorMessage, int64(a.Charged), micros(a.FinishedAt), now, a.ID)
	if err != nil {
		return fmt.Errorf("advance %s: %w", a.ID, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("advance %s: %w", a.ID, store.ErrLeaseLost)
	}
	if store.Terminal(a.Status) {
		// The update applied only to an unfinished task, so this runs once per task.
		return t.dropInFlight(ctx, store.InFlightTasks, a.ID)
	}
	return nil
}

// advanceEventSQL appends a task's next event from its row before an update.
const advanceEventSQL = `INSERT INTO task_events (task_id, seq, at, from_status, to_status, step, attempt, upstream,
		upstream_job, detail)
	SELECT id, (SELECT COALESCE(MAX(e.seq), 0) + 1 FROM task_events e WHERE e.task_id = ?), CAST(? AS BIGINT), status,
		CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT)
	FROM tasks WHERE id = ? AND status IN ('queued', 'in_progress') AND (status <> ? OR step <> ? OR ? <> '')`

// ActiveTasks counts unfinished tasks by route and status through the partial index tasks_active.
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
