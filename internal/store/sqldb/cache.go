package sqldb

import (
	"sync"
	"sync/atomic"
	"time"
)

// A read-through cache of rows by id, shared by the task cache (taskcache.go) and the balance
// cache (balancecache.go).
//
// Writes made through this DB value are exact: each committed write forgets the ids it
// touched before its Transact returns, and a read that raced with a write never fills the
// cache. Writes made elsewhere (another replica, another process) are bounded by ttl, and by
// invalidate where the driver hears of them (PostgreSQL's LISTEN/NOTIFY for tasks).
//
// Two races need care.
//
// A reader misses, reads the row (old), and is descheduled; a writer commits and invalidates;
// the reader then stores the old row, which nothing would ever evict. Each shard therefore
// counts its invalidations: a reader notes the count before it reads the database and stores
// its row only if the count has not moved. reset (a whole-cache invalidation) moves a
// cache-wide generation the same way.
//
// A reader that read the old row just before the commit may store it just after, while
// another reader has already seen the new row in the database: the second reader's next read
// would go back in time until the writer's invalidation ran. So a write brackets its commit:
// beginWrite before it (forget the rows, refuse fills), endWrite after it (forget again,
// allow fills). While a write is under way in a shard every read there goes to the database,
// which orders old and new correctly by itself.
//
// A fill is stamped with the time its database read began, so an entry served before its ttl
// ran out was at most ttl old.
//
// A refused fill still saw a version of the row, and its caller returns it. Another reader
// whose read began earlier but whose token is newer (a late notification moved the shard
// between the two misses) may hold an older version, and its fill would be accepted: the
// first caller's next read would go back. So a refused fill leaves a marker with its version,
// never served, that refuses fills older than it; the next invalidation removes it like any
// entry, and a fill that is not older replaces it.

const cacheShards = 64

type readCache[V any] struct {
	shards [cacheShards]cacheShard[V]
	max    int           // entries per shard
	ttl    time.Duration // 0: entries never expire
	// older reports that a is an older version of the row than b. Two fills that read the row
	// before and after another process's commit can reach put in either order before that
	// commit's notification does; the older one must not replace the newer, or a poller could
	// see the row go back in time.
	older func(a, b V) bool
	gen   atomic.Uint64 // whole-cache invalidations (reset)
	off   atomic.Bool   // suspended: every read misses, nothing fills
}

type cacheEntry[V any] struct {
	v  V
	at time.Time
	// marker: left by a refused fill; never served, only refuses older fills.
	marker bool
}

type cacheShard[V any] struct {
	mu      sync.RWMutex
	m       map[string]cacheEntry[V]
	epoch   uint64 // invalidations so far
	writers int    // writes between beginWrite and endWrite
	_       [16]byte
}

// fillToken is what a miss hands to put: the shard's epoch, the cache's generation and the
// time, all taken before the database read.
type fillToken struct {
	epoch, gen uint64
	at         time.Time
}

func newReadCache[V any](entries int, ttl time.Duration, older func(a, b V) bool) *readCache[V] {
	c := &readCache[V]{max: max(1, entries/cacheShards), ttl: ttl, older: older}
	for i := range c.shards {
		c.shards[i].m = make(map[string]cacheEntry[V])
	}
	return c
}

func (c *readCache[V]) shard(id string) *cacheShard[V] {
	return &c.shards[fnv32(id)%cacheShards]
}

// get returns the cached value, or the token to hand to put after a database read.
func (c *readCache[V]) get(id string) (V, fillToken, bool) {
	tok := fillToken{gen: c.gen.Load()}
	if c.ttl > 0 {
		// The clock only matters to a cache whose entries expire (not on the exact SQLite
		// task cache of the polling hot path).
		tok.at = time.Now()
	}
	s := c.shard(id)
	s.mu.RLock()
	e, ok := s.m[id]
	tok.epoch = s.epoch
	s.mu.RUnlock()
	if ok && (e.marker || c.off.Load() || (c.ttl > 0 && tok.at.Sub(e.at) >= c.ttl)) {
		ok = false
	}
	return e.v, tok, ok
}

// put stores v unless the cache was invalidated (in v's shard or as a whole) since get
// returned tok, in which case it leaves a marker (see above).
func (c *readCache[V]) put(id string, v V, tok fillToken) {
	if c.off.Load() {
		return
	}
	s := c.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, ok := s.m[id]
	if ok && c.older(v, prev.v) {
		return
	}
	refused := s.epoch != tok.epoch || s.writers > 0 || c.gen.Load() != tok.gen
	if !ok && len(s.m) >= c.max {
		// Drop an arbitrary entry (map order): bounded memory without LRU bookkeeping on the
		// read path. A dropped row is read from the database next time.
		for k := range s.m {
			delete(s.m, k)
			break
		}
	}
	s.m[id] = cacheEntry[V]{v: v, at: tok.at, marker: refused}
}

// beginWrite forgets the given ids and keeps their shards from filling until endWrite. It is
// called just before the commit of the write that changes them.
func (c *readCache[V]) beginWrite(ids []string) { c.bracket(ids, +1) }

// endWrite is called just after that commit (whether it succeeded or not).
func (c *readCache[V]) endWrite(ids []string) { c.bracket(ids, -1) }

// invalidate forgets id after a write made elsewhere (a notification).
func (c *readCache[V]) invalidate(id string) { c.bracket([]string{id}, 0) }

func (c *readCache[V]) bracket(ids []string, d int) {
	for _, id := range ids {
		s := c.shard(id)
		s.mu.Lock()
		delete(s.m, id)
		s.epoch++
		s.writers += d
		s.mu.Unlock()
	}
}

// reset forgets everything; fills begun before it are refused.
func (c *readCache[V]) reset() {
	c.gen.Add(1)
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.m)
		s.mu.Unlock()
	}
}

// suspend turns the cache off (true) or back on (false) without losing the bracket counts of
// writes under way. Turning it back on forgets what it held.
func (c *readCache[V]) suspend(off bool) {
	c.off.Store(off)
	c.reset()
}

// len counts the entries served (not the markers of refused fills): metrics and tests read it
// rarely, so it walks the maps rather than keep a count on every path that changes them.
func (c *readCache[V]) len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		for _, e := range s.m {
			if !e.marker {
				n++
			}
		}
		s.mu.RUnlock()
	}
	return n
}
