package sqlite

import (
	"context"
	"database/sql"
	"sync"
	"time"
)

// checkpointEvery is how often the background checkpointer copies the WAL into the database.
// At a few thousand small transactions per second the WAL grows by a few MiB in that time.
const checkpointEvery = 250 * time.Millisecond

// checkpointer moves WAL frames into the database file from its own connection.
//
// By default SQLite checkpoints inside the COMMIT that pushes the WAL past 1000 pages: that
// commit copies 4 MiB and fsyncs twice while every other writer waits for it, which put a
// 10–15 ms stall at the p99 of task creation at every rate. The writer connection now has
// wal_autocheckpoint off, and this goroutine runs PASSIVE checkpoints, which never wait for
// (or block) readers and writers.
type checkpointer struct {
	conn *sql.DB
	stop chan struct{}
	done sync.WaitGroup
	once sync.Once
}

func startCheckpointer(conn *sql.DB, every time.Duration) *checkpointer {
	c := &checkpointer{conn: conn, stop: make(chan struct{})}
	c.done.Add(1)
	go c.loop(every)
	return c
}

func (c *checkpointer) loop(every time.Duration) {
	defer c.done.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-t.C:
			// A failed passive checkpoint (the file is busy being closed, say) is retried on
			// the next tick; the WAL only grows meanwhile.
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			_, _ = c.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
			cancel()
		}
	}
}

// Close stops the loop and closes the connection. SQLite checkpoints the rest of the WAL when
// the last connection to the file closes.
func (c *checkpointer) Close() error {
	c.once.Do(func() { close(c.stop) })
	c.done.Wait()
	return c.conn.Close()
}
