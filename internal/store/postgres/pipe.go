package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

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

// pipe is sqldb.Pipe over one pgx connection. A queued statement's check error is kept
// aside rather than returned to pgx, which would drop the batch's statements from its
// statement cache (each a prepare round trip next time); the batch fails all the same.
type pipe struct {
	conn     *pgx.Conn
	batch    pgx.Batch
	checkErr error
}

func (p *pipe) Queue(query string, args []any, check func(sqldb.Rows) error) {
	qq := p.batch.Queue(query, args...)
	if check != nil {
		qq.Query(func(rows pgx.Rows) error {
			if err := check(rows); err != nil && p.checkErr == nil {
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
	p.checkErr = nil
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
	// The queue goes first, in a round trip of its own: the server runs whatever a pipeline
	// holds, so a check refused here must not travel with a COMMIT; and once a COMMIT is sent,
	// whether it took effect is known only from its own answer. An error before it is a
	// queued statement's, and nothing was committed.
	if p.batch.Len() > 0 {
		if err := p.send(ctx); err != nil {
			return err, nil
		}
	}
	ct, err := p.conn.Exec(ctx, "COMMIT")
	if err != nil {
		return nil, err
	}
	if ct.String() != "COMMIT" {
		// COMMIT of a transaction that failed earlier answers ROLLBACK, not an error.
		return nil, errNotCommitted
	}
	return nil, nil
}

func (p *pipe) Rollback(ctx context.Context) error {
	p.batch = pgx.Batch{}
	p.checkErr = nil
	_, err := p.conn.Exec(ctx, "ROLLBACK")
	return err
}
