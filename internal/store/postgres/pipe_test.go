package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io/fs"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/store/sqldb"
)

// pipeOn runs fn with a Pipe on a fresh schema holding table t (id text primary key, n int),
// and fails the test if the connection is not handed back clean.
func pipeOn(t *testing.T, fn func(ctx context.Context, db *sql.DB, p sqldb.Pipe)) {
	t.Helper()
	if err := pipeOnConn(t, nil, fn); err != nil {
		t.Fatalf("pipe: %v", err)
	}
}

// pipeOnConn is pipeOn returning what Pipe returned; batches, if not nil, counts the round
// trips of pgx batches on every connection. The schema also has mediagen_require (migration 0010).
func pipeOnConn(t *testing.T, batches *atomic.Int64, fn func(ctx context.Context, db *sql.DB, p sqldb.Pipe)) error {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgconnConfig(pgtest.EmptyURL(t))
	if err != nil {
		t.Fatal(err)
	}
	if batches != nil {
		cfg.Tracer = batchCounter{batches}
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	require, err := fs.ReadFile(Migrations(), "0010_require.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id text PRIMARY KEY, n int NOT NULL CHECK (n >= 0)); INSERT INTO t VALUES ('a', 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, string(require)); err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return dialect{}.Pipe(ctx, c, func(p sqldb.Pipe) error {
		fn(ctx, db, p)
		return nil
	})
}

// batchCounter counts pgx batches sent (each one round trip once its statements are prepared).
type batchCounter struct{ n *atomic.Int64 }

func (b batchCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	return ctx
}
func (batchCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (b batchCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	b.n.Add(1)
	return ctx
}
func (batchCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (batchCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

func rowCount(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

var errRefusedHere = errors.New("refused by check")

// TestPipeCommitOfAFailedQueueIsQueuedAndCommitsNothing: a queued statement that fails on the
// server, or whose answer the client's check refuses, is reported as queued, and the COMMIT is
// never sent with it (the server would run it whatever the check decides).
func TestPipeCommitOfAFailedQueueIsQueuedAndCommitsNothing(t *testing.T) {
	tests := []struct {
		name  string
		query string
		check func(sqldb.Rows) error
		want  error // nil: any error
	}{
		// The update succeeds on the server; only the client's check refuses its answer.
		{"a refused check", `UPDATE t SET n = n + 1 WHERE id = 'a' RETURNING n`,
			func(sqldb.Rows) error { return errRefusedHere }, errRefusedHere},
		{"a failed insert", `INSERT INTO t VALUES ('a', 1)`, nil, nil}, // duplicate key
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pipeOn(t, func(ctx context.Context, db *sql.DB, p sqldb.Pipe) {
				p.Queue("BEGIN", nil, nil)
				p.Queue(`INSERT INTO t VALUES ('b', 1)`, nil, nil)
				p.Queue(tt.query, nil, tt.check)
				queued, err := p.Commit(ctx)
				if queued == nil || (tt.want != nil && !errors.Is(queued, tt.want)) || err != nil {
					t.Fatalf("Commit = (%v, %v), want the statement's error as queued", queued, err)
				}
				if err := p.Rollback(ctx); err != nil {
					t.Fatal(err)
				}
				if n := rowCount(t, db); n != 1 {
					t.Fatalf("%d rows after %s, want 1 (nothing committed)", n, tt.name)
				}
			})
		})
	}
}

// TestPipeCommitTravelsWithAQueueOfReads: statements queued without a check (their refusals
// are the server's) go with their COMMIT in one batch, and their answers are read.
func TestPipeCommitTravelsWithAQueueOfReads(t *testing.T) {
	var batches atomic.Int64
	err := pipeOnConn(t, &batches, func(ctx context.Context, db *sql.DB, p sqldb.Pipe) {
		before := batches.Load()
		p.Queue("BEGIN", nil, nil)
		p.Queue(`INSERT INTO t VALUES ('b', 1)`, nil, nil)
		read := 0
		p.QueueRead(sqldb.RebindDollar(dialect{}.RequireRows(`UPDATE t SET n = n + 1 WHERE id = 'a' RETURNING n`, "t")), []any{1}, func(r sqldb.Rows) error {
			for r.Next() {
				if err := r.Scan(new(bool)); err != nil {
					return err
				}
				read++
			}
			return nil
		})
		if queued, err := p.Commit(ctx); queued != nil || err != nil {
			t.Fatalf("Commit = (%v, %v)", queued, err)
		}
		if n := batches.Load() - before; n != 1 || read != 1 {
			t.Errorf("%d batches sent, %d answers read; want 1 and 1 (COMMIT with the queue)", n, read)
		}
		var a int
		if err := db.QueryRow(`SELECT n FROM t WHERE id = 'a'`).Scan(&a); err != nil || a != 2 || rowCount(t, db) != 2 {
			t.Errorf("after commit: a = %d (%v), %d rows; want 2 and 2", a, err, rowCount(t, db))
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPipeServerRefusalWithCommitIsQueuedAndCommitsNothing: a RequireRows statement that
// changes no row is refused by the server, so the COMMIT that travels with it never runs.
func TestPipeServerRefusalWithCommitIsQueuedAndCommitsNothing(t *testing.T) {
	pipeOn(t, func(ctx context.Context, db *sql.DB, p sqldb.Pipe) {
		p.Queue("BEGIN", nil, nil)
		p.Queue(`INSERT INTO t VALUES ('b', 1)`, nil, nil)
		p.QueueRead(sqldb.RebindDollar(dialect{}.RequireRows(`UPDATE t SET n = n + 1 WHERE id = 'nobody' RETURNING n`, "t")), []any{1}, nil)
		queued, err := p.Commit(ctx)
		var pgErr *pgconn.PgError
		if !errors.As(queued, &pgErr) || pgErr.Code != "MG001" || err != nil {
			t.Fatalf("Commit = (%v, %v), want the server's MG001 refusal as queued", queued, err)
		}
		if err := p.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if n := rowCount(t, db); n != 1 {
			t.Fatalf("%d rows after a refusal, want 1 (nothing committed)", n)
		}
	})
}

// TestPipeReadFailingAfterCommitIsNotQueued: a read that fails once its COMMIT has committed
// must not pass for a queued failure (the work would be done twice).
func TestPipeReadFailingAfterCommitIsNotQueued(t *testing.T) {
	pipeOn(t, func(ctx context.Context, db *sql.DB, p sqldb.Pipe) {
		p.Queue("BEGIN", nil, nil)
		p.QueueRead(`INSERT INTO t VALUES ('b', 1) RETURNING n`, nil, func(sqldb.Rows) error { return errRefusedHere })
		queued, err := p.Commit(ctx)
		if queued != nil || !errors.Is(err, errRefusedHere) {
			t.Fatalf("Commit = (%v, %v), want the read's error, not queued", queued, err)
		}
		if n := rowCount(t, db); n != 2 {
			t.Fatalf("%d rows, want 2 (committed)", n)
		}
	})
}

func TestPipeQuerySendsTheQueueFirstAndCommits(t *testing.T) {
	pipeOn(t, func(ctx context.Context, db *sql.DB, p sqldb.Pipe) {
		p.Queue("BEGIN", nil, nil)
		p.Queue(`INSERT INTO t VALUES ($1, $2)`, []any{"b", 5}, nil)
		checked := 0
		p.Queue(`UPDATE t SET n = n + 1 WHERE id = 'b' RETURNING n`, nil, func(r sqldb.Rows) error {
			for r.Next() {
				if err := r.Scan(&checked); err != nil {
					return err
				}
			}
			return nil
		})
		var sum int
		err := p.Query(ctx, `SELECT sum(n) FROM t`, nil, func(r sqldb.Rows) error {
			r.Next()
			return r.Scan(&sum)
		})
		if err != nil || sum != 7 || checked != 6 {
			t.Fatalf("Query: err %v, sum %d, checked %d; want nil, 7, 6", err, sum, checked)
		}
		n, err := p.Exec(ctx, `UPDATE t SET n = n + 1`)
		if err != nil || n != 2 {
			t.Fatalf("Exec = (%d, %v), want 2 rows", n, err)
		}
		if queued, err := p.Commit(ctx); queued != nil || err != nil {
			t.Fatalf("Commit = (%v, %v)", queued, err)
		}
		if n := rowCount(t, db); n != 2 {
			t.Fatalf("%d rows committed, want 2", n)
		}
	})
}

func TestPipeCommitOfAnAbortedTransactionIsAnError(t *testing.T) {
	pipeOn(t, func(ctx context.Context, db *sql.DB, p sqldb.Pipe) {
		p.Queue("BEGIN", nil, nil)
		if _, err := p.Exec(ctx, `UPDATE t SET n = -1`); err == nil {
			t.Fatal("a CHECK violation was accepted")
		}
		// The transaction is aborted; COMMIT answers ROLLBACK, which must not pass for success.
		if queued, err := p.Commit(ctx); queued != nil || !errors.Is(err, errNotCommitted) {
			t.Fatalf("Commit = (%v, %v), want errNotCommitted", queued, err)
		}
	})
}

func TestPipeConnectionLostBeforeCommitIsQueuedAndCommitsNothing(t *testing.T) {
	err := pipeOnConn(t, nil, func(ctx context.Context, db *sql.DB, p sqldb.Pipe) {
		p.Queue("BEGIN", nil, nil)
		p.Queue(`INSERT INTO t VALUES ('b', 1)`, nil, nil)
		// The server ends this connection while running the queue, before any COMMIT was sent:
		// the caller may run the work again, since none of it was committed.
		p.Queue(`SELECT pg_terminate_backend(pg_backend_pid())`, nil, nil)
		queued, err := p.Commit(ctx)
		if queued == nil || err != nil {
			t.Fatalf("Commit = (%v, %v), want the lost connection as queued", queued, err)
		}
		if n := rowCount(t, db); n != 1 {
			t.Fatalf("%d rows after a connection lost before COMMIT, want 1", n)
		}
	})
	// The dead connection is handed back as bad, so the pool drops it.
	if !errors.Is(err, driver.ErrBadConn) {
		t.Errorf("Pipe = %v, want driver.ErrBadConn", err)
	}
}
