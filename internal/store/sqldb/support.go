package sqldb

import (
	"context"
	"fmt"
	"strings"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Support reads: a record's whole story for an operator, and searches in creation order.
// Searches page by keyset on (created_at, id) through the indexes of migration 0017, so a page
// costs its rows whatever the table holds, and a page is stable under inserts.

const eventColumns = `task_id, seq, at, from_status, to_status, step, attempt, upstream, upstream_job, detail`

// TaskEvents lists a task's events in the order they were written.
func (db *DB) TaskEvents(ctx context.Context, taskID string) ([]store.TaskEvent, error) {
	// Event 0, the acceptance, is the task's row itself (CreateTask writes no event: the hot
	// path stays one insert); a task is always accepted queued. A seq-0 row, if one was ever
	// written, wins.
	return db.events(ctx, "tasks", store.StatusQueued, taskID)
}

// SpeechEvents lists a speech record's events: its acceptance (the record's row, pending),
// then what FinishSpeech appended (and, for records from before migration 0022, the
// take-overs of that time).
func (db *DB) SpeechEvents(ctx context.Context, speechID string) ([]store.TaskEvent, error) {
	return db.events(ctx, "speeches", store.SpeechPending, speechID)
}

// events reads the history of the record id of table, whose row is its event 0 (accepted in
// status first).
func (db *DB) events(ctx context.Context, table, first, id string) ([]store.TaskEvent, error) {
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT `+eventColumns+` FROM task_events WHERE task_id = ?
		UNION ALL
		SELECT id, 0, created_at, '', '`+first+`', '', 0, '', '', '' FROM `+table+`
		WHERE id = ? AND NOT EXISTS (SELECT 1 FROM task_events WHERE task_id = ? AND seq = 0)
		ORDER BY 2`), id, id, id)
	if err != nil {
		return nil, fmt.Errorf("events of %s: %w", id, err)
	}
	defer rows.Close()
	var out []store.TaskEvent
	for rows.Next() {
		var e store.TaskEvent
		var at int64
		if err := rows.Scan(&e.TaskID, &e.Seq, &at, &e.From, &e.To, &e.Step, &e.Attempt, &e.Upstream, &e.UpstreamJob, &e.Detail); err != nil {
			return nil, fmt.Errorf("events of %s: %w", id, err)
		}
		e.At = fromMicros(at)
		out = append(out, e)
	}
	return out, rows.Err()
}

// AppendTaskEvent appends an event to an existing, unfinished task, keeping its status:
// a failed attempt, for instance, changes nothing else.
func (t *Tx) AppendTaskEvent(ctx context.Context, e store.TaskEvent) error {
	_, err := t.exec(ctx, `INSERT INTO task_events (`+eventColumns+`)
		SELECT id, (SELECT COALESCE(MAX(e.seq), 0) + 1 FROM task_events e WHERE e.task_id = ?), CAST(? AS BIGINT),
			status, status, step, CAST(? AS INTEGER), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT)
		FROM tasks WHERE id = ?`,
		e.TaskID, micros(e.At), e.Attempt, e.Upstream, e.UpstreamJob, e.Detail, e.TaskID)
	if err != nil {
		return fmt.Errorf("append task event %s: %w", e.TaskID, err)
	}
	return nil
}

// where builds a search's conditions: equality filters, a creation range and the keyset
// position after the cursor.
type where struct {
	conds []string
	args  []any
}

func (w *where) eq(col, val string) {
	if val != "" {
		w.conds, w.args = append(w.conds, col+" = ?"), append(w.args, val)
	}
}

func (w *where) created(col string, from, to time.Time) {
	if !from.IsZero() {
		w.conds, w.args = append(w.conds, col+" >= ?"), append(w.args, micros(from))
	}
	if !to.IsZero() {
		w.conds, w.args = append(w.conds, col+" < ?"), append(w.args, micros(to))
	}
}

// page adds the keyset condition and returns the ORDER BY and LIMIT.
func (w *where) page(createdCol, idCol string, p store.Page) string {
	dir, op := "DESC", "<"
	if p.Asc {
		dir, op = "ASC", ">"
	}
	if p.AfterID != "" {
		// (created_at, id) after the cursor's, written so that both databases seek the index
		// to the cursor's time (the bare OR form made SQLite scan from the table's end).
		at := micros(p.AfterAt)
		w.conds = append(w.conds, createdCol+" "+op+"= ?", "("+createdCol+" "+op+" ? OR "+idCol+" "+op+" ?)")
		w.args = append(w.args, at, at, p.AfterID)
	}
	limit := p.Limit
	if limit <= 0 {
		limit = store.SearchDefaultLimit
	}
	limit = min(limit, store.SearchMaxLimit)
	w.args = append(w.args, limit)
	return " ORDER BY " + createdCol + " " + dir + ", " + idCol + " " + dir + " LIMIT ?"
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// taskSearch is SearchTasks's statement and arguments.
func taskSearch(f store.TaskFilter) (string, []any) {
	var w where
	w.eq("tenant_id", f.TenantID)
	w.eq("key_id", f.KeyID)
	w.eq("status", f.Status)
	w.eq("model", f.Model)
	w.eq("route", f.Route)
	w.created("created_at", f.CreatedFrom, f.CreatedTo)
	if f.UpstreamJob != "" {
		w.conds = append(w.conds, "id IN (SELECT e.task_id FROM task_events e WHERE e.upstream_job = ? AND e.upstream_job <> '')")
		w.args = append(w.args, f.UpstreamJob)
	}
	order := w.page("created_at", "id", f.Page)
	return `SELECT ` + readColumns + ` FROM tasks` + w.sql() + order, w.args
}

// ExplainSearchTasks is the database's plan for SearchTasks with f, one line per row of
// EXPLAIN (EXPLAIN QUERY PLAN on SQLite): how bench/support shows which index a search uses.
func (db *DB) ExplainSearchTasks(ctx context.Context, f store.TaskFilter) ([]string, error) {
	q, args := taskSearch(f)
	explain := "EXPLAIN "
	if db.d.Name() == "sqlite" {
		explain = "EXPLAIN QUERY PLAN "
	}
	rows, err := db.read.QueryContext(ctx, db.q(explain+q), args...)
	if err != nil {
		return nil, fmt.Errorf("explain search tasks: %w", err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		// SQLite: id, parent, notused, detail; PostgreSQL: one text column.
		out = append(out, fmt.Sprint(vals[len(vals)-1]))
	}
	return out, rows.Err()
}

// SearchTasks lists tasks in creation order.
func (db *DB) SearchTasks(ctx context.Context, f store.TaskFilter) ([]store.Task, error) {
	q, args := taskSearch(f)
	rows, err := db.read.QueryContext(ctx, db.q(q), args...)
	if err != nil {
		return nil, fmt.Errorf("search tasks: %w", err)
	}
	defer rows.Close()
	var out []store.Task
	for rows.Next() {
		t, err := scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("search tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// SearchSpeeches lists speech records in creation order.
func (db *DB) SearchSpeeches(ctx context.Context, f store.SpeechFilter) ([]store.Speech, error) {
	var w where
	w.eq("tenant_id", f.TenantID)
	w.eq("key_id", f.KeyID)
	w.eq("status", f.Status)
	w.eq("model", f.Model)
	w.created("created_at", f.CreatedFrom, f.CreatedTo)
	order := w.page("created_at", "id", f.Page)
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT `+speechColumns+` FROM speeches`+w.sql()+order), w.args...)
	if err != nil {
		return nil, fmt.Errorf("search speeches: %w", err)
	}
	defer rows.Close()
	var out []store.Speech
	for rows.Next() {
		s, err := scanSpeech(rows)
		if err != nil {
			return nil, fmt.Errorf("search speeches: %w", err)
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// SearchAssets lists assets in creation order.
func (db *DB) SearchAssets(ctx context.Context, f store.AssetFilter) ([]store.Asset, error) {
	var w where
	w.eq("tenant_id", f.TenantID)
	w.eq("key_id", f.KeyID)
	w.eq("group_id", f.GroupID)
	w.eq("status", f.Status)
	w.created("created_at", f.CreatedFrom, f.CreatedTo)
	order := w.page("created_at", "id", f.Page)
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT `+assetSelect+` FROM assets`+w.sql()+order), w.args...)
	if err != nil {
		return nil, fmt.Errorf("search assets: %w", err)
	}
	defer rows.Close()
	var out []store.Asset
	for rows.Next() {
		a, err := scanAsset(rows)
		if err != nil {
			return nil, fmt.Errorf("search assets: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// LedgerTxns lists the transactions about ref with their entries, oldest first.
func (db *DB) LedgerTxns(ctx context.Context, ref string) ([]store.Txn, error) {
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT t.id, t.kind, t.ref, t.note, t.created_at, e.account_id, e.amount
		FROM ledger_txns t JOIN ledger_entries e ON e.txn_id = t.id
		WHERE t.ref = ? ORDER BY t.created_at, t.id, e.id`), ref)
	if err != nil {
		return nil, fmt.Errorf("ledger of %s: %w", ref, err)
	}
	defer rows.Close()
	var out []store.Txn
	for rows.Next() {
		var t store.Txn
		var e store.Entry
		var at, amount int64
		if err := rows.Scan(&t.ID, &t.Kind, &t.Ref, &t.Note, &at, &e.Account, &amount); err != nil {
			return nil, fmt.Errorf("ledger of %s: %w", ref, err)
		}
		e.Amount = money.Micros(amount)
		if n := len(out); n > 0 && out[n-1].ID == t.ID {
			out[n-1].Entries = append(out[n-1].Entries, e)
			continue
		}
		t.CreatedAt, t.Entries = fromMicros(at), []store.Entry{e}
		out = append(out, t)
	}
	return out, rows.Err()
}

// KeyLedger lists the latest limit transactions touching the key's accounts, newest first,
// through the index on ledger_entries (account_id): the subquery reads at most limit entries
// of each account.
func (db *DB) KeyLedger(ctx context.Context, keyID string, limit int) ([]store.Txn, error) {
	if limit <= 0 {
		return nil, nil
	}
	accounts := []any{store.AccountID(keyID, store.AccountAvailable), store.AccountID(keyID, store.AccountReserved),
		store.AccountID(keyID, store.AccountSpent)}
	sub := `SELECT txn_id FROM (SELECT txn_id, id FROM ledger_entries WHERE account_id = ? ORDER BY id DESC LIMIT ?) a%d`
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT t.id, t.kind, t.ref, t.note, t.created_at, e.account_id, e.amount
		FROM ledger_txns t JOIN ledger_entries e ON e.txn_id = t.id
		WHERE t.id IN (SELECT id FROM ledger_txns WHERE id IN (`+fmt.Sprintf(sub, 1)+` UNION `+fmt.Sprintf(sub, 2)+` UNION `+fmt.Sprintf(sub, 3)+`)
			ORDER BY created_at DESC, id DESC LIMIT ?)
		ORDER BY t.created_at DESC, t.id DESC, e.id`), accounts[0], limit, accounts[1], limit, accounts[2], limit, limit)
	if err != nil {
		return nil, fmt.Errorf("ledger of key %s: %w", keyID, err)
	}
	defer rows.Close()
	var out []store.Txn
	for rows.Next() {
		var t store.Txn
		var e store.Entry
		var at, amount int64
		if err := rows.Scan(&t.ID, &t.Kind, &t.Ref, &t.Note, &at, &e.Account, &amount); err != nil {
			return nil, fmt.Errorf("ledger of key %s: %w", keyID, err)
		}
		e.Amount = money.Micros(amount)
		if n := len(out); n > 0 && out[n-1].ID == t.ID {
			out[n-1].Entries = append(out[n-1].Entries, e)
			continue
		}
		t.CreatedAt, t.Entries = fromMicros(at), []store.Entry{e}
		out = append(out, t)
	}
	return out, rows.Err()
}

// Jobs reads the jobs with the given ids that are still queued, by primary key (the jobs
// table has no index on ref: the claim's indexes are all it pays for).
func (db *DB) Jobs(ctx context.Context, ids []string) ([]store.JobState, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT id, kind, queue, ref, tenant_id, key_id, priority, run_at,
		deadline, created_at, attempts, last_error, lease_until FROM jobs WHERE id IN (?`+strings.Repeat(", ?", len(ids)-1)+`)
		ORDER BY created_at, id`), args...)
	if err != nil {
		return nil, fmt.Errorf("jobs %v: %w", ids, err)
	}
	defer rows.Close()
	var out []store.JobState
	for rows.Next() {
		var j store.JobState
		var runAt, deadline, created, lease int64
		if err := rows.Scan(&j.ID, &j.Kind, &j.Queue, &j.Ref, &j.TenantID, &j.KeyID, &j.Priority, &runAt, &deadline,
			&created, &j.Attempts, &j.LastError, &lease); err != nil {
			return nil, fmt.Errorf("jobs %v: %w", ids, err)
		}
		j.RunAt, j.Deadline, j.CreatedAt, j.LeaseUntil = fromMicros(runAt), fromMicros(deadline), fromMicros(created), fromMicros(lease)
		out = append(out, j)
	}
	return out, rows.Err()
}
