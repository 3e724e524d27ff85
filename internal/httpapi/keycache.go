package httpapi

import (
	"sync"
	"time"

	"mediagen/internal/store"
)

// keyCache remembers recently seen keys for a short time, so a client polling a task costs
// one database read instead of two. A revocation made elsewhere (an admin command, another
// replica) takes effect within the TTL; a TTL of zero disables the cache.
type keyCache struct {
	ttl     time.Duration
	max     int
	mu      sync.RWMutex
	entries map[string]keyEntry
}

type keyEntry struct {
	key     store.Key
	expires time.Time
}

func newKeyCache(ttl time.Duration) *keyCache {
	return &keyCache{ttl: ttl, max: 10_000, entries: map[string]keyEntry{}}
}

func (c *keyCache) get(hash []byte, now time.Time) (store.Key, bool) {
	if c.ttl <= 0 {
		return store.Key{}, false
	}
	c.mu.RLock()
	e, ok := c.entries[string(hash)]
	c.mu.RUnlock()
	if !ok || now.After(e.expires) {
		return store.Key{}, false
	}
	return e.key, true
}

func (c *keyCache) put(hash []byte, k store.Key, now time.Time) {
	if c.ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.entries) >= c.max {
		// Bounded memory: start over rather than track recency; a full cache means many
		// distinct keys, and each costs one read to re-enter.
		c.entries = make(map[string]keyEntry, c.max)
	}
	c.entries[string(hash)] = keyEntry{key: k, expires: now.Add(c.ttl)}
}
