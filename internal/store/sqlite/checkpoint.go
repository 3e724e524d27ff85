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

// walTruncateFrames bounds the WAL: past this many frames (64 MiB of 4 KiB pages) after a
// passive checkpoint, a TRUNCATE checkpoint resets it. Under a steady stream of writes a
// passive checkpoint never catches up with the frames appended while it copies, and SQLite
// restarts the WAL from its beginning only after one that did: without the bound the file
// grew by gigabytes a minute while 1,000,000 tasks were queued (bench/runner).
const walTruncateFrames = 16_384

// checkpointer moves WAL frames into the database file from its own connection.
//
// By default SQLite checkpoints inside the COMMIT that pushes the WAL past 1000 pages: that
// commit copies 4 MiB and fsyncs twice while every other writer waits for it, which put a
// 10–15 ms stall at the p99 of task creation at every rate. The writer connection now has
// wal_autocheckpoint off, and this goroutine runs PASSIVE checkpoints, which never wait for
// (or block) readers and writers. When the WAL has grown past a bound anyway, one TRUNCATE
// checkpoint makes writers wait while it copies what the passive one left (little, since it
// just ran) and resets the file.
type checkpointer struct {
	conn      *sql.DB
	maxFrames int
	stop      chan struct{}
	done      sync.WaitGroup
	once      sync.Once
}

func startCheckpointer(conn *sql.DB, every time.Duration, maxFrames int) *checkpointer {
	c := &checkpointer{conn: conn, maxFrames: maxFrames, stop: make(chan struct{})}
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
			var busy, frames, copied int
			err := c.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
			if err == nil && frames > c.maxFrames {
				_, _ = c.conn.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
			}
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
