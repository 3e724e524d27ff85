package sqldb

import (
	"context"
	"database/sql"
	"database/sql/driver"
)

// Pipelined shared commits (PostgreSQL).
//
// A create made seven statements, and on PostgreSQL each was a round trip while the batch held
// its tenant's counter row: the lane, not the server, was the limit (bench/README.md). Most of
// those statements answer nothing the transaction needs before its commit: the inserts succeed
// or the batch fails, and the balance updates pass their guard or the batch fails. So in an
// optimistic shared batch (group.go) such statements are queued (Tx.later) and sent in one
// round trip with the next statement whose answer is needed, or with the COMMIT. A queued
// statement that fails fails the batch; the batch then runs again with savepoints, where every
// statement runs at once and each error reaches the member that made it, exactly as before. The
// ShareCommit contract already allows that second run.
//
// A refusal must be the server's for the COMMIT to travel with the queue: the server runs
// whatever a pipeline holds, so an answer the client refuses after the fact may already be
// committed. Queued statements therefore refuse by raising an error on the server (the guarded
// balance update calls mediagen_require, PostgreSQL migration 0010), and a statement queued
// with a client-side check (Pipe.Queue) sends its COMMIT a round trip later.

// Rows is what a statement's check reads: database/sql's rows or the driver's.
type Rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// Pipe is one connection on which statements can be queued and sent together.
// Queries are in the dialect's placeholder form.
type Pipe interface {
	// Queue adds a statement to send with the next Exec, Query, Flush or Commit; check, if not nil,
	// reads its rows then, and its error fails that call. A Commit with a checked statement in
	// its queue sends COMMIT only after the queue's answers.
	Queue(query string, args []any, check func(Rows) error)
	// QueueRead is Queue for a statement whose answer is read but never refused (its refusals
	// are the server's errors): it may travel with a COMMIT. read's error still fails the call.
	QueueRead(query string, args []any, read func(Rows) error)
	// Exec sends the queue and query, returning query's affected rows.
	Exec(ctx context.Context, query string, args ...any) (int64, error)
	// Query sends the queue and query, handing query's rows to read.
	Query(ctx context.Context, query string, args []any, read func(Rows) error) error
	// Flush sends the queue.
	Flush(ctx context.Context) error
	// Commit sends the queue and COMMIT, in one round trip unless a queued statement has a
	// check. queued is the error the server or a check gave a queued statement (COMMIT did not
	// run: nothing was committed); err is any other failure (whether COMMIT took effect is
	// unknown), or a report that the transaction was rolled back instead.
	Commit(ctx context.Context) (queued, err error)
	// Rollback drops the queue and rolls back.
	Rollback(ctx context.Context) error
}

// Piper is implemented by a Dialect whose driver gives a Pipe over a pooled connection. Pipe
// runs fn with it and leaves the connection with no transaction open (or discards it).
type Piper interface {
	Pipe(ctx context.Context, c *sql.Conn, fn func(Pipe) error) error
	// RequireRows wraps query, a data-modifying statement with a RETURNING clause, so that the
	// server raises an error (aborting the transaction) unless it returned as many rows as the
	// one more argument the wrapped statement takes, after query's own.
	RequireRows(query, what string) string
}

// later runs a statement whose answer the transaction needs only by its commit: at once, or,
// in an optimistic shared batch, queued (see above). check, if not nil, gets its rows; its
// error is later's, or the batch's.
func (t *Tx) later(ctx context.Context, query string, args []any, check func(Rows) error) error {
	if t.merge != nil {
		t.pipe.Queue(t.db.q(query), args, check)
		return nil
	}
	if check == nil {
		_, err := t.exec(ctx, query, args...)
		return err
	}
	return t.query(ctx, query, args, check)
}

// query runs a statement and hands its rows to read.
func (t *Tx) query(ctx context.Context, query string, args []any, read func(Rows) error) error {
	ctx = t.stmtCtx(ctx)
	if t.pipe != nil {
		return t.pipe.Query(ctx, t.db.q(query), args, read)
	}
	var rows *sql.Rows
	var err error
	if st := t.writeStmt(query); st != nil {
		rows, err = t.tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	} else {
		rows, err = t.tx.QueryContext(ctx, t.db.q(query), args...)
	}
	if err != nil {
		return err
	}
	defer rows.Close()
	if err := read(rows); err != nil {
		return err
	}
	return rows.Err()
}

// pipeRow is QueryRow on a Pipe: the statement runs when Scan is called.
type pipeRow struct {
	ctx   context.Context
	p     Pipe
	query string
	args  []any
}

func (r pipeRow) Scan(dest ...any) error {
	none := false
	err := r.p.Query(r.ctx, r.query, r.args, func(rows Rows) error {
		if !rows.Next() {
			none = true
			return rows.Err()
		}
		return rows.Scan(dest...)
	})
	if err == nil && none {
		return sql.ErrNoRows
	}
	return err
}

// sharedTxn is the one transaction a shared batch runs in: database/sql's, or a Pipe's.
type sharedTxn interface {
	// member returns a Tx for one member's fn; queue lets it queue statements (Tx.later).
	member(queue bool) *Tx
	// commit sends what members queued, then COMMIT; queued is the error of a queued
	// statement (theirs, not the commit's: nothing was committed).
	commit() (queued, err error)
	rollback()
}

type sqlTxn struct {
	db *DB
	tx *sql.Tx
}

func (s sqlTxn) member(bool) *Tx             { return &Tx{db: s.db, tx: s.tx, detached: true} }
func (s sqlTxn) commit() (queued, err error) { return nil, s.tx.Commit() }
func (s sqlTxn) rollback()                   { _ = s.tx.Rollback() }

type pipeTxn struct {
	db    *DB
	p     Pipe
	merge *merged // the members' merged writes, sent with the commit (merge.go)
}

func (s pipeTxn) member(queue bool) *Tx {
	t := &Tx{db: s.db, pipe: s.p, detached: true}
	if queue {
		t.merge = s.merge
	}
	return t
}

func (s pipeTxn) commit() (queued, err error) {
	s.merge.queue(s.p, s.db.q, s.db.group.moveBalances, s.db.group.holdSpends)
	return s.p.Commit(context.Background())
}
func (s pipeTxn) rollback() { _ = s.p.Rollback(context.Background()) }

// piped runs body in a transaction on a Pipe of the write pool. BEGIN is queued, so it costs no
// round trip of its own. It reports whether body ran: once it has, body has told its jobs or
// handed them back, and what happens to the connection after (a broken one is dropped by the
// pool) is nobody's outcome.
func (db *DB) piped(p Piper, body func(sharedTxn)) (ran bool) {
	bg := context.Background()
	c, err := db.write.Conn(bg)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = p.Pipe(bg, c, func(pp Pipe) error {
		ran = true
		pp.Queue("BEGIN", nil, nil)
		body(pipeTxn{db: db, p: pp, merge: &merged{}})
		return nil
	})
	return ran
}

// execResult is sql.Result for a Pipe's Exec.
func execResult(n int64) sql.Result { return driver.RowsAffected(n) }
