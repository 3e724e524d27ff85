package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/store/sqldb"
)

// pipeOn runs fn with a Pipe on a fresh schema holding table t (id text primary key, n int),
// and fails the test if the connection is not handed back clean.
func pipeOn(t *testing.T, fn func(ctx context.Context, db *sql.DB, p sqldb.Pipe)) {
	t.Helper()
	if err := pipeOnConn(t, fn); err != nil {
		t.Fatalf("pipe: %v", err)
	}
}

// pipeOnConn is pipeOn returning what Pipe returned.
func pipeOnConn(t *testing.T, fn func(ctx context.Context, db *sql.DB, p sqldb.Pipe)) error {
	t.Helper()
	ctx := context.Background()
	cfg, err := pgconnConfig(pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	db := stdlib.OpenDB(*cfg)
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id text PRIMARY KEY, n int NOT NULL CHECK (n >= 0)); INSERT INTO t VALUES ('a', 1)`); err != nil {
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
	err := pipeOnConn(t, func(ctx context.Context, db *sql.DB, p sqldb.Pipe) {
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
