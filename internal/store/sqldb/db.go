// Package sqldb is the SQL shared by the SQLite and PostgreSQL drivers. The two dialects differ
// in placeholders, error codes and how they lock; everything else is the same SQL, written
// once here so the drivers cannot disagree on what the ledger means.
package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"mediagen/internal/store"
)

// Dialect is what a driver supplies.
type Dialect interface {
	Name() string
	// Placeholders rewrites ? placeholders into the dialect's form.
	Placeholders(query string) string
	IsUniqueViolation(err error) bool
	// IsRetryable reports a failure of the transaction as a whole that running it again can
	// cure: a deadlock the server broke, a serialization failure.
	IsRetryable(err error) bool
	// LockMigrations serialises migrators on the same database (a no-op where the
	// transaction itself is exclusive).
	LockMigrations(ctx context.Context, tx *sql.Tx) error
	// ClaimLock is appended to the claim's inner SELECT (" FOR UPDATE SKIP LOCKED" or "").
	ClaimLock() string
	// ClaimSetup is an SQL expression the claim's first statement evaluates, so that it holds
	// for the rest of the claim's transaction ("" for none): on PostgreSQL, the planner
	// settings that keep the fair-share claim to its index seeks (postgres.dialect.ClaimSetup
	// says why each).
	ClaimSetup() string
	// DriverCachesStatements reports that the driver already keeps prepared statements per
	// connection (pgx does), so DB should not prepare its own.
	DriverCachesStatements() bool
}

// DB implements store.Store over database/sql. SQLite gives it one writer connection and a read
// pool; PostgreSQL gives it one pool for both.
type DB struct {
	write, read *sql.DB
	d           Dialect
	now         func() time.Time
	stmts       sync.Map                  // query text → *sql.Stmt on the read handle
	wstmts      sync.Map                  // query text → *sql.Stmt on the write handle
	pending     sync.Map                  // write queries seen inside transactions, to prepare after them
	group       *grouper                  // non-nil with group commit (EnableGroupCommit)
	tasks       *readCache[store.Task]    // non-nil with the task cache (EnableTaskCache)
	balances    *readCache[store.Balance] // non-nil with the balance cache (EnableBalanceCache)
	closers     []io.Closer               // driver helpers closed before the handles (CloseWith)
	spendRows   knownRows                 // spend counter rows known to exist (spendseed.go)
	// usageBackfill is the usage migration's backfill statement, RebuildUsage's (usage.go).
	usageBackfill string
	// tracer, when set, makes each transaction a span (trace.go).
	tracer trace.Tracer
}

// CloseWith registers a driver helper that Close closes first.
func (db *DB) CloseWith(c io.Closer) { db.closers = append(db.closers, c) }

// New wraps open database handles. DB takes ownership of both (Close closes them).
func New(write, read *sql.DB, d Dialect) *DB {
	return &DB{write: write, read: read, d: d, now: time.Now}
}

// SetClock replaces the clock, for tests.
func (db *DB) SetClock(now func() time.Time) { db.now = now }

// Dialect returns the dialect name.
func (db *DB) Dialect() string { return db.d.Name() }

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	if err := db.read.PingContext(ctx); err != nil {
		return fmt.Errorf("ping %s: %w", db.d.Name(), err)
	}
	return nil
}

// prepared returns a statement kept for the life of the DB. Parsing the SQL again on every
// call cost more than the lookup itself (a third of the CPU of GET /v1/videos/{id} on SQLite);
// queries are constants, so the cache is bounded by the code.
func (db *DB) prepared(ctx context.Context, h *sql.DB, cache *sync.Map, query string) (*sql.Stmt, error) {
	if db.d.DriverCachesStatements() {
		return nil, errNoStmt
	}
	if st, ok := cache.Load(query); ok {
		return st.(*sql.Stmt), nil
	}
	st, err := h.PrepareContext(ctx, db.q(query))
	if err != nil {
		return nil, err
	}
	if prev, loaded := cache.LoadOrStore(query, st); loaded {
		_ = st.Close()
		return prev.(*sql.Stmt), nil
	}
	return st, nil
}

// errNoStmt tells callers to run the query text directly (the driver caches statements).
var errNoStmt = errors.New("no prepared statement")

// readRow runs a read through a prepared statement on the read handle.
func (db *DB) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	st, err := db.prepared(ctx, db.read, &db.stmts, query)
	if err != nil {
		return db.read.QueryRowContext(ctx, db.q(query), args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// readRows is readRow for several rows.
func (db *DB) readRows(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	st, err := db.prepared(ctx, db.read, &db.stmts, query)
	if err != nil {
		return db.read.QueryContext(ctx, db.q(query), args...)
	}
	return st.QueryContext(ctx, args...)
}

// writeExec runs a statement outside any transaction on the write handle, through a
// statement prepared once: parsing it again on every call cost a busy worker real CPU (the
// claim's statements, inside their transaction, are prepared the same way: Tx.writeStmt).
func (db *DB) writeExec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	st, err := db.prepared(ctx, db.write, &db.wstmts, query)
	if err != nil {
		return db.write.ExecContext(ctx, db.q(query), args...)
	}
	return st.ExecContext(ctx, args...)
}

// Close closes both handles.
func (db *DB) Close() error {
	if db.group != nil {
		db.group.stop()
	}
	var errs []error
	for _, c := range db.closers {
		errs = append(errs, c.Close())
	}
	for _, c := range []*sync.Map{&db.stmts, &db.wstmts} {
		c.Range(func(_, st any) bool { _ = st.(*sql.Stmt).Close(); return true })
	}
	errs = append(errs, db.write.Close())
	if db.read != db.write {
		errs = append(errs, db.read.Close())
	}
	return errors.Join(errs...)
}

// q returns the query in the dialect's placeholder form; the rewrite is a single pass over a
// short string, far below the cost of the round trip it precedes.
func (db *DB) q(query string) string { return db.d.Placeholders(query) }

// Transact runs fn in a transaction on the write handle, rolling back on error or panic. With
// group commit, concurrent calls share one commit (group.go) with the same outcome for each.
func (db *DB) Transact(ctx context.Context, fn func(store.Tx) error) error {
	if db.tracer != nil {
		return db.tracedTransact(ctx, fn)
	}
	return db.transact(ctx, fn)
}

func (db *DB) transact(ctx context.Context, fn func(store.Tx) error) error {
	if g := db.group; g != nil {
		if !g.shared {
			return g.transact(ctx, fn, store.Share{})
		}
		if share, ok := store.SharedCommit(ctx); ok {
			return g.transact(ctx, fn, share)
		}
	}
	return db.transactOnce(ctx, fn)
}

// transactOnce is one transaction of its own.
func (db *DB) transactOnce(ctx context.Context, fn func(store.Tx) error) (err error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	t := &Tx{db: db, tx: tx}
	if err = fn(t); err != nil {
		return err
	}
	db.beforeCommit(t)
	err = tx.Commit()
	db.afterCommit(t)
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	db.spendRows.committed(t)
	db.preparePending(ctx)
	return nil
}

// Tx is one open transaction.
type Tx struct {
	db *DB
	tx *sql.Tx
	// pipe replaces tx in a pipelined shared batch (pipe.go). merge, in its optimistic
	// attempt, holds writes back for the commit, merged (merge.go), and lets later queue.
	pipe  Pipe
	merge *merged
	// detached: the transaction is shared (group commit), so statements must not be
	// interrupted by one caller's context (see stmtCtx).
	detached bool
	// touched lists the tasks this transaction wrote, for the task cache; touchedKeys the keys
	// whose money it moved, for the balance cache.
	touched, touchedKeys []string
	// counted is what the last in-flight increment of this transaction returned (inflight.go).
	counted countedInFlight
	// held: the spend counters this transaction's holds grew, known to exist once it commits
	// (spendseed.go).
	held []string
}

// writeStmt returns the statement prepared on the write handle, or nil the first time a query
// is seen. It never prepares inside a transaction: SQLite's writer has one connection, held
// by the transaction, so preparing on the handle would wait for it forever. Queries seen for
// the first time are prepared after the transaction ends (preparePending).
func (t *Tx) writeStmt(query string) *sql.Stmt {
	if t.db.d.DriverCachesStatements() {
		return nil
	}
	if st, ok := t.db.wstmts.Load(query); ok {
		return st.(*sql.Stmt)
	}
	t.db.pending.Store(query, struct{}{})
	return nil
}

// preparePending prepares the write queries first seen inside transactions.
func (db *DB) preparePending(ctx context.Context) {
	if db.d.DriverCachesStatements() {
		return
	}
	db.pending.Range(func(q, _ any) bool {
		db.pending.Delete(q)
		_, _ = db.prepared(ctx, db.write, &db.wstmts, q.(string))
		return true
	})
}

// exec and queryRow use statements prepared once on the write handle; inside the
// transaction database/sql reuses the statement already prepared on its connection.
func (t *Tx) exec(ctx context.Context, query string, args ...any) (sql.Result, error) {
	ctx = t.stmtCtx(ctx)
	if t.pipe != nil {
		n, err := t.pipe.Exec(ctx, t.db.q(query), args...)
		return execResult(n), err
	}
	if st := t.writeStmt(query); st != nil {
		return t.tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return t.tx.ExecContext(ctx, t.db.q(query), args...)
}

func (t *Tx) queryRow(ctx context.Context, query string, args ...any) scanner {
	ctx = t.stmtCtx(ctx)
	if t.pipe != nil {
		return pipeRow{ctx: ctx, p: t.pipe, query: t.db.q(query), args: args}
	}
	if st := t.writeStmt(query); st != nil {
		return t.tx.StmtContext(ctx, st).QueryRowContext(ctx, args...)
	}
	return t.tx.QueryRowContext(ctx, t.db.q(query), args...)
}

func micros(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMicro()
}

func fromMicros(v int64) time.Time {
	if v == 0 {
		return time.Time{}
	}
	return time.UnixMicro(v).UTC()
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// RebindDollar turns ? placeholders into $1, $2, … for PostgreSQL. Queries here never contain
// a literal question mark, so no quoting awareness is needed.
func RebindDollar(q string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(q); i++ {
		if q[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(q[i])
	}
	return b.String()
}
