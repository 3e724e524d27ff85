package sqldb

import (
	"context"
	"fmt"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

const taskColumns = `id, key_id, tenant_id, route, model, status, progress, client_request_id, payload_hash,
	request, pricing, reserved, charged, result, error_code, error_message, created_at, updated_at,
	finished_at`

func scanTask(row scanner) (store.Task, error) {
	var t store.Task
	var request, pricing, result string
	var reserved, charged, created, updated, finished int64
	err := row.Scan(&t.ID, &t.KeyID, &t.TenantID, &t.Route, &t.Model, &t.Status, &t.Progress,
		&t.ClientRequestID, &t.PayloadHash, &request, &pricing, &reserved, &charged, &result,
		&t.ErrorCode, &t.ErrorMessage, &created, &updated, &finished)
	if err != nil {
		return store.Task{}, noRows(err)
	}
	t.Request, t.Pricing = []byte(request), []byte(pricing)
	if result != "" {
		t.Result = []byte(result)
	}
	t.Reserved, t.Charged = money.Micros(reserved), money.Micros(charged)
	t.CreatedAt, t.UpdatedAt, t.FinishedAt = fromMicros(created), fromMicros(updated), fromMicros(finished)
	return t, nil
}

// CreateTask inserts a new task. The in-flight counters come first: their rows are the
// first a create locks (inflight.go), so it holds nothing else, not even its
// client_request_id's index entry, while it waits for them.
func (t *Tx) CreateTask(ctx context.Context, task store.Task) error {
	if !store.Terminal(task.Status) {
		if err := t.addInFlight(ctx, store.InFlightTasks, task.KeyID, task.TenantID); err != nil {
			return err
		}
	}
	// A duplicate client_request_id fails the insert; merged into a shared batch's commit
	// (Tx.insert), it fails the batch, whose second run gives this create its ErrConflict.
	err := t.insert(ctx, `INSERT INTO tasks (`+taskColumns+`)`, "", 19,
		[]any{task.ID, task.KeyID, task.TenantID, task.Route, task.Model, task.Status, task.Progress,
			task.ClientRequestID, task.PayloadHash, string(task.Request), string(task.Pricing),
			int64(task.Reserved), int64(task.Charged), string(task.Result), task.ErrorCode, task.ErrorMessage,
			micros(task.CreatedAt), micros(task.UpdatedAt), micros(task.FinishedAt)})
	if err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("create task %s: %w", task.ID, store.ErrConflict)
		}
		return fmt.Errorf("create task %s: %w", task.ID, err)
	}
	// Its history starts with its acceptance, which is not written here: the task's row is
	// that event (TaskEvents reads it as event 0), so a create costs no insert more.
	return nil
}

// readColumns are taskColumns without the request and pricing documents: readers (polling,
// replays) never need them, and polling is the hottest path, so it reads less.
const readColumns = `id, key_id, tenant_id, route, model, status, progress, client_request_id, payload_hash,
	'', '', reserved, charged, result, error_code, error_message, created_at, updated_at,
	finished_at`

// Task reads one task by id: one primary-key lookup, the hot path of polling. Request and
// Pricing are left empty (the runner gets them with its claims).
func (db *DB) Task(ctx context.Context, id string) (store.Task, error) {
	var tok fillToken
	if db.tasks != nil {
		t, tk, ok := db.tasks.get(id)
		if ok {
			return t, nil
		}
		tok = tk
	}
	t, err := scanTask(db.readRow(ctx, `SELECT `+readColumns+` FROM tasks WHERE id = ?`, id))
	if err != nil {
		return t, fmt.Errorf("task %s: %w", id, err)
	}
	if db.tasks != nil {
		db.tasks.put(id, t, tok)
	}
	return t, nil
}

// TaskByRequestID finds the key's task with the given client_request_id.
func (db *DB) TaskByRequestID(ctx context.Context, keyID, clientRequestID string) (store.Task, error) {
	t, err := scanTask(db.readRow(ctx, `SELECT `+readColumns+` FROM tasks
		WHERE key_id = ? AND client_request_id = ? AND client_request_id <> ''`, keyID, clientRequestID))
	if err != nil {
		return t, fmt.Errorf("task by request id: %w", err)
	}
	return t, nil
}

// ReplaceTaskResult rewrites a completed task's result document (store.TaskTx). The update
// touches the row, so this replica's cache forgets it after the commit and, on PostgreSQL,
// migration 0008's trigger tells the other replicas.
func (t *Tx) ReplaceTaskResult(ctx context.Context, id string, result []byte) error {
	t.touch(id)
	res, err := t.exec(ctx, `UPDATE tasks SET result = ?, updated_at = ? WHERE id = ? AND status = 'completed'`,
		string(result), micros(t.db.now()), id)
	if err != nil {
		return fmt.Errorf("replace result of %s: %w", id, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("replace result of %s: %w", id, store.ErrNotFound)
	}
	return nil
}
