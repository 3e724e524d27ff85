package sqldb

import (
	"time"

	"mediagen/internal/store"
)

// The task cache serves polling (GET /v1/videos/{id}), the hottest path, which almost always
// reads a row that has not changed since the last poll. Its rules are those of readCache
// (cache.go). On SQLite, whose database one serve process owns, every task write goes through
// this DB, so the cache is exact (no ttl). On PostgreSQL other replicas write too: the driver
// hears of their writes by LISTEN/NOTIFY (postgres/notify.go) and the ttl bounds what a late
// or lost notification could leave behind.

// EnableTaskCache keeps up to entries recently read tasks in memory. With ttl 0 the cache
// trusts that every task write goes through this DB (a process that owns the database); with
// ttl > 0 an entry is served for at most ttl after the read that filled it, and the caller
// should also report writes made elsewhere (InvalidateTask). Call it before the DB is used.
func (db *DB) EnableTaskCache(entries int, ttl time.Duration) {
	if entries > 0 {
		db.tasks = newReadCache(entries, ttl, func(a, b store.Task) bool { return a.UpdatedAt.Before(b.UpdatedAt) })
	}
}

// InvalidateTask forgets task id after a write made by another process.
func (db *DB) InvalidateTask(id string) {
	if db.tasks != nil {
		db.tasks.invalidate(id)
	}
}

// SuspendTaskCache turns the task cache off while writes made elsewhere cannot be heard of
// (a lost notification connection), and back on, empty, once they can.
func (db *DB) SuspendTaskCache(off bool) {
	if db.tasks != nil {
		db.tasks.suspend(off)
	}
}

// CachedTasks reports how many tasks the cache holds (0 without a cache).
func (db *DB) CachedTasks() int {
	if db.tasks == nil {
		return 0
	}
	return db.tasks.len()
}

// touch records that the transaction wrote task id; the cache forgets it after the commit.
func (t *Tx) touch(id string) {
	if t.db.tasks != nil {
		t.touched = append(t.touched, id)
	}
}

// beforeCommit and afterCommit bracket the commit of transactions that may have written
// cached rows (tasks, and balances: balancecache.go) (see readCache.beginWrite). A failed commit changed nothing, but forgetting too
// much is harmless.
func (db *DB) beforeCommit(txs ...*Tx) {
	for _, t := range txs {
		if db.tasks != nil {
			db.tasks.beginWrite(t.touched)
		}
		if db.balances != nil {
			db.balances.beginWrite(t.touchedKeys)
		}
	}
}

func (db *DB) afterCommit(txs ...*Tx) {
	for _, t := range txs {
		if db.tasks != nil {
			db.tasks.endWrite(t.touched)
		}
		if db.balances != nil {
			db.balances.endWrite(t.touchedKeys)
		}
	}
}
