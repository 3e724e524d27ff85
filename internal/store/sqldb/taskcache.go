package sqldb

import (
	"sync"

	"mediagen/internal/store"
)

// A read-through cache of Task, for a store that is written by this process alone.
//
// Polling (GET /v1/videos/{id}) is the hottest path and almost always reads a row that has
// not changed since the last poll. When every write to the tasks table goes through this DB
// value — SQLite, whose database one serve process owns — the cache can be exact rather than
// "fresh within a TTL": each committed write invalidates the ids it touched before its
// Transact returns, and a read that raced with a write never fills the cache (below). With
// several processes writing (PostgreSQL replicas) it must stay off, and does unless the
// driver's owner enables it.
//
// Two races need care.
//
// A reader misses, reads the row (old), and is descheduled; a writer commits and invalidates;
// the reader then stores the old row, which nothing would ever evict. Each shard therefore
// counts its invalidations: a reader notes the count before it reads the database and stores
// its row only if the count has not moved.
//
// A reader that read the old row just before the commit may store it just after, while
// another reader has already seen the new row in the database: the second reader's next poll
// would go back in time until the writer's invalidation ran. So a write brackets its commit:
// beginWrite before it (forget the rows, refuse fills), endWrite after it (forget again,
// allow fills). While a write is under way in a shard every read there goes to the database,
// which orders old and new correctly by itself.

const taskCacheShards = 64

type taskCache struct {
	shards [taskCacheShards]taskShard
	max    int // entries per shard
}

type taskShard struct {
	mu      sync.RWMutex
	m       map[string]store.Task
	epoch   uint64 // invalidations so far
	writers int    // writes between beginWrite and endWrite
	_       [16]byte
}

func newTaskCache(entries int) *taskCache {
	c := &taskCache{max: max(1, entries/taskCacheShards)}
	for i := range c.shards {
		c.shards[i].m = make(map[string]store.Task)
	}
	return c
}

func (c *taskCache) shard(id string) *taskShard {
	// FNV-1a: ids are random, so any cheap mix spreads them.
	h := uint32(2166136261)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint32(id[i])) * 16777619
	}
	return &c.shards[h%taskCacheShards]
}

// get returns the cached task, or the shard's epoch to hand to put after a database read.
func (c *taskCache) get(id string) (store.Task, uint64, bool) {
	s := c.shard(id)
	s.mu.RLock()
	t, ok := s.m[id]
	e := s.epoch
	s.mu.RUnlock()
	return t, e, ok
}

// put stores t unless an invalidation happened in its shard since get returned epoch.
func (c *taskCache) put(t store.Task, epoch uint64) {
	s := c.shard(t.ID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.epoch != epoch || s.writers > 0 {
		return
	}
	if len(s.m) >= c.max {
		// Drop an arbitrary entry (map order): bounded memory without LRU bookkeeping on the
		// read path. A dropped task is read from the database on its next poll.
		for k := range s.m {
			delete(s.m, k)
			break
		}
	}
	s.m[t.ID] = t
}

// beginWrite forgets the given tasks and keeps their shards from caching until endWrite. It
// is called just before the commit of the write that changes them.
func (c *taskCache) beginWrite(ids []string) { c.bracket(ids, +1) }

// endWrite is called just after that commit (whether it succeeded or not).
func (c *taskCache) endWrite(ids []string) { c.bracket(ids, -1) }

func (c *taskCache) bracket(ids []string, d int) {
	for _, id := range ids {
		s := c.shard(id)
		s.mu.Lock()
		delete(s.m, id)
		s.epoch++
		s.writers += d
		s.mu.Unlock()
	}
}

func (c *taskCache) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.m)
		s.mu.RUnlock()
	}
	return n
}

// EnableTaskCache keeps up to entries recently read tasks in memory (see taskcache.go). Only
// a process that makes every write to the database's tasks may enable it; call it before the
// DB is used.
func (db *DB) EnableTaskCache(entries int) {
	if entries > 0 {
		db.tasks = newTaskCache(entries)
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
// tasks (see taskCache.beginWrite). A failed commit changed nothing, but forgetting too much
// is harmless.
func (db *DB) beforeCommit(txs ...*Tx) {
	if db.tasks == nil {
		return
	}
	for _, t := range txs {
		db.tasks.beginWrite(t.touched)
	}
}

func (db *DB) afterCommit(txs ...*Tx) {
	if db.tasks == nil {
		return
	}
	for _, t := range txs {
		db.tasks.endWrite(t.touched)
	}
}
