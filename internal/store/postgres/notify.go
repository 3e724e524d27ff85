package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"

	"mediagen/internal/store/sqldb"
)

// taskChannel is where migration 0008's trigger announces every changed task.
const taskChannel = "mediagen_tasks"

// EnableTaskCache turns on db's task cache for a replica that shares the database with others.
// Writes made through db invalidate exactly (sqldb's bracket); writes made by other replicas
// arrive as notifications on one dedicated connection, usually within a millisecond of their
// commit; ttl bounds what a late notification could leave stale. While that connection is
// down the cache is off (every poll reads the database) and it comes back empty, since
// notifications sent in the gap were lost. The listener stops when db is closed.
func EnableTaskCache(db *sqldb.DB, url string, entries int, ttl time.Duration, log *slog.Logger) error {
	if entries <= 0 {
		return nil
	}
	if ttl <= 0 {
		return fmt.Errorf("postgres: the task cache needs a staleness bound (ttl > 0) when replicas share the database")
	}
	cfg, err := pgconnConfig(url)
	if err != nil {
		return err
	}
	db.EnableTaskCache(entries, ttl)
	db.SuspendTaskCache(true) // until the first LISTEN is in place
	ctx, cancel := context.WithCancel(context.Background())
	l := &listener{cfg: cfg, db: db, log: log, cancel: cancel, done: make(chan struct{}), ready: make(chan struct{})}
	go l.run(ctx)
	db.CloseWith(l)
	// Wait briefly for the cache to come on, so a replica that just started is not slower than
	// it needs to be; it works correctly (uncached) either way.
	select {
	case <-l.ready:
	case <-time.After(2 * time.Second):
	}
	return nil
}

type listener struct {
	cfg    *pgx.ConnConfig
	db     *sqldb.DB
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
	ready  chan struct{}
}

// retryEvery is how long a lost notification connection waits before it connects again.
const retryEvery = time.Second

func (l *listener) run(ctx context.Context) {
	defer close(l.done)
	first := true
	for ctx.Err() == nil {
		err := l.listen(ctx, func() {
			l.db.SuspendTaskCache(false)
			if first {
				first = false
				close(l.ready)
			}
		})
		l.db.SuspendTaskCache(true)
		if ctx.Err() != nil {
			return
		}
		if l.log != nil {
			l.log.Warn("task cache off: lost the notification connection; polls read the database until it is back", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(retryEvery):
		}
	}
}

// listen holds one connection on the channel until it fails, calling up once it listens.
func (l *listener) listen(ctx context.Context, up func()) error {
	conn, err := pgx.ConnectConfig(ctx, l.cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, "LISTEN "+taskChannel); err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	up()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return fmt.Errorf("wait for notification: %w", err)
		}
		l.db.InvalidateTask(n.Payload)
	}
}

// Close stops the listener and waits for it.
func (l *listener) Close() error {
	l.cancel()
	<-l.done
	return nil
}
