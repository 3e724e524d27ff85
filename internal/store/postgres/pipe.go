package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"mediagen/internal/store/sqldb"
)

// Pipe gives a shared commit pgx's batches on a pooled connection (sqldb's pipe.go says why).
// Whatever fn does, the connection goes back with no transaction open, or is discarded.
func (dialect) Pipe(ctx context.Context, c *sql.Conn, fn func(sqldb.Pipe) error) error {
	return c.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("pipe: driver connection is %T", dc)
		}
		conn := sc.Conn()
		err := fn(&pipe{conn: conn})
		if conn.IsClosed() {
			return errors.Join(err, driver.ErrBadConn)
		}
		if conn.PgConn().TxStatus() != 'I' {
			if _, rerr := conn.Exec(ctx, "ROLLBACK"); rerr != nil {
				return errors.Join(err, rerr, driver.ErrBadConn)
			}
		}
		return err
	})
}

// RequireRows makes the server refuse with mediagen_require (migration 0010).
func (dialect) RequireRows(query, what string) string {
	return "WITH u AS (" + query + ") SELECT mediagen_require((SELECT count(*) FROM u) = ?, '" +
		strings.ReplaceAll(what, "'", "''") + "')"
}

// pipe is sqldb.Pipe over one pgx connection. A queued statement's check or read error is
// kept aside rather than returned to pgx, which would drop the batch's statements from its
// statement cache (each a prepare round trip next time) and stop reading answers; the call
// fails all the same.
type pipe struct {
	conn     *pgx.Conn
	batch    pgx.Batch
	checkErr error
	// refusable: the queue holds a statement whose check may refuse it, so a COMMIT must wait
	// for the queue's answers (Commit).
	refusable bool
}

func (p *pipe) Queue(query string, args []any, check func(sqldb.Rows) error) {
	p.queue(query, args, check)
	p.refusable = p.refusable || check != nil
}

func (p *pipe) QueueRead(query string, args []any, read func(sqldb.Rows) error) {
	p.queue(query, args, read)
}

func (p *pipe) queue(query string, args []any, fn func(sqldb.Rows) error) {
	qq := p.batch.Queue(query, args...)
	if fn != nil {
		qq.Query(func(rows pgx.Rows) error {
			if err := fn(rows); err != nil && p.checkErr == nil {
				p.checkErr = err
			}
			return nil
		})
	}
}

// send sends the queue and reads every answer; the first failure is returned.
func (p *pipe) send(ctx context.Context) error {
	b := p.batch
	p.batch = pgx.Batch{}
	p.checkErr, p.refusable = nil, false
	if b.Len() == 0 {
		return nil
	}
	err := p.conn.SendBatch(ctx, &b).Close()
	if err == nil {
		err = p.checkErr
	}
	p.checkErr = nil
	return err
}

func (p *pipe) Flush(ctx context.Context) error { return p.send(ctx) }

func (p *pipe) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	var n int64
	p.batch.Queue(query, args...).Exec(func(ct pgconn.CommandTag) error {
		n = ct.RowsAffected()
		return nil
	})
	return n, p.send(ctx)
}

func (p *pipe) Query(ctx context.Context, query string, args []any, read func(sqldb.Rows) error) error {
	var readErr error
	p.batch.Queue(query, args...).Query(func(rows pgx.Rows) error {
		readErr = read(rows)
		return nil
	})
	if err := p.send(ctx); err != nil {
		return err
	}
	return readErr
}

// errNotCommitted: COMMIT answered that the transaction had been rolled back.
var errNotCommitted = errors.New("transaction was rolled back instead of committed")

func (p *pipe) Commit(ctx context.Context) (queued, err error) {
	if p.refusable {
		// A check may refuse an answer the server accepted, and the server runs whatever a
		// pipeline holds: the queue goes first, in a round trip of its own, and COMMIT only
		// if every check passed.
		if err := p.send(ctx); err != nil {
			return err, nil
		}
	}
	// COMMIT travels with the queue. Whether it took effect is known only from its own answer:
	// the server runs a pipeline's statements in order and skips the rest after an error, so
	// a server's error for a statement before COMMIT means COMMIT never ran (queued); any
	// other failure before COMMIT's answer (a lost connection) leaves it unknown.
	var (
		ran       bool
		tag       pgconn.CommandTag
		commitErr error
	)
	p.batch.Queue("COMMIT").Fn = func(br pgx.BatchResults) error {
		ran = true
		tag, commitErr = br.Exec()
		return commitErr
	}
	err = p.send(ctx)
	switch {
	case !ran:
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) {
			return err, nil
		}
		if err == nil {
			err = errors.New("COMMIT was not answered")
		}
		return nil, err
	case commitErr != nil:
		return nil, commitErr
	case tag.String() != "COMMIT":
		// COMMIT of a transaction that failed earlier answers ROLLBACK, not an error.
		return nil, errNotCommitted
	case err != nil:
		// Committed, but a member's read of its answer failed: its caller cannot be told
		// success.
		return nil, fmt.Errorf("read after commit: %w", err)
	}
	return nil, nil
}

func (p *pipe) Rollback(ctx context.Context) error {
	p.batch = pgx.Batch{}
	p.checkErr, p.refusable = nil, false
	_, err := p.conn.Exec(ctx, "ROLLBACK")
	return err
}
