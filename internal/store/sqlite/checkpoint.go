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

// walRestartFrames bounds the WAL: past this many frames (1 GiB of 4 KiB pages) after a
// passive checkpoint, the next one runs while the writer is held still (see checkpointer).
// Under a steady stream of writes a passive checkpoint never catches up with the frames
// appended while it copies, and SQLite restarts the WAL from its beginning only after one that
// did: without a bound the file grew by gigabytes a minute while 1,000,000 tasks were queued
// (bench/runner). Each hold costs writers a copy and a sync of what the passive checkpoints
// left: measured at 1,000 creates/s (which append about 40 MB of WAL a second), a p99 of
// 16 ms with a 64 MiB bound and of 97 ms in one window with 256 MiB, against 4 ms without
// holds. So the bound is a disk limit for sustained overload, not a tuning knob: at 1 GiB a
// store at 1,000 creates/s holds its writer about every 25 s, one under ordinary load never.
const walRestartFrames = 262_144

// checkpointer moves WAL frames into the database file from its own connection.
//
// By default SQLite checkpoints inside the COMMIT that pushes the WAL past 1000 pages: that
// commit copies 4 MiB and fsyncs twice while every other writer waits for it, which put a
// 10–15 ms stall at the p99 of task creation at every rate. The writer connection now has
// wal_autocheckpoint off, and this goroutine runs PASSIVE checkpoints, which never wait for
// (or block) readers and writers. When the WAL has grown past a bound anyway, one passive
// checkpoint runs on the writer goroutine between two commits (hold): no frame is appended
// while it copies, so it copies them all, and the next commit starts the WAL over from its
// beginning.
// That holds the writer for one copy of what the last passive checkpoint left (a few MiB) and
// its sync. A TRUNCATE checkpoint was tried first: it waits for readers with the busy
// handler's sleeps while it keeps writers out, which put 85 ms at the p99 of task creation.
type checkpointer struct {
	conn      *sql.DB
	maxFrames int
	hold      func(ctx context.Context, f func() error) error
	stop      chan struct{}
	done      sync.WaitGroup
	once      sync.Once
}

func startCheckpointer(conn *sql.DB, every time.Duration, maxFrames int, hold func(ctx context.Context, f func() error) error) *checkpointer {
	c := &checkpointer{conn: conn, maxFrames: maxFrames, hold: hold, stop: make(chan struct{})}
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
			if frames, err := c.passive(ctx); err == nil && frames > c.maxFrames {
				_ = c.hold(ctx, func() error { _, err := c.passive(ctx); return err })
			}
			cancel()
		}
	}
}

// passive runs one passive checkpoint and returns the frames in the WAL.
func (c *checkpointer) passive(ctx context.Context) (int, error) {
	var busy, frames, copied int
	err := c.conn.QueryRowContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)").Scan(&busy, &frames, &copied)
	return frames, err
}

// Close stops the loop and closes the connection. SQLite checkpoints the rest of the WAL when
// the last connection to the file closes.
func (c *checkpointer) Close() error {
	c.once.Do(func() { close(c.stop) })
	c.done.Wait()
	return c.conn.Close()
}
