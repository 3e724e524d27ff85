package sqldb

import (
	"testing"
	"testing/synctest"
	"time"
)

type version struct{ n int }

func newTestCache(ttl time.Duration) *readCache[version] {
	return newReadCache(64*4, ttl, func(a, b version) bool { return a.n < b.n })
}

func TestCacheFills(t *testing.T) {
	tests := []struct {
		name string
		ttl  time.Duration
		// between runs after the miss that hands out the token and before the fill.
		between func(c *readCache[version])
		want    bool
	}{
		{"fill after a quiet read is kept", 0, func(*readCache[version]) {}, true},
		{"fill begun before an invalidation is refused", 0, func(c *readCache[version]) { c.invalidate("a") }, false},
		{"fill begun before another row's invalidation in another shard is kept", 0, func(c *readCache[version]) {
			for _, id := range []string{"b", "c", "d", "e"} {
				if c.shard(id) != c.shard("a") {
					c.invalidate(id)
					return
				}
			}
		}, true},
		{"fill during a write is refused", 0, func(c *readCache[version]) { c.beginWrite([]string{"a"}) }, false},
		{"fill begun before a reset is refused", 0, func(c *readCache[version]) { c.reset() }, false},
		{"fill while suspended is refused", 0, func(c *readCache[version]) { c.off.Store(true) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCache(tt.ttl)
			_, tok, ok := c.get("a")
			if ok {
				t.Fatal("hit in an empty cache")
			}
			tt.between(c)
			c.put("a", version{1}, tok)
			c.off.Store(false)
			if _, _, ok := c.get("a"); ok != tt.want {
				t.Errorf("cached %v, want %v", ok, tt.want)
			}
		})
	}
}

// Two readers fill the same row with the version before and the version after another
// process's commit, in either order: the cache ends with the newer.
func TestCacheKeepsTheNewerOfTwoRacingFills(t *testing.T) {
	for _, order := range [][2]int{{1, 2}, {2, 1}} {
		c := newTestCache(0)
		_, tok1, _ := c.get("a")
		_, tok2, _ := c.get("a")
		c.put("a", version{order[0]}, tok1)
		c.put("a", version{order[1]}, tok2)
		if v, _, ok := c.get("a"); !ok || v.n != 2 {
			t.Errorf("fills %v: cache holds %+v (%v), want version 2", order, v, ok)
		}
	}
}

// A refused fill still counts as a version seen. Reader 1 misses; a late notification moves the
// shard; reader 2 misses; another replica commits version 2; reader 1 reads 2 from the
// database (its caller sees 2) but its fill is refused for the notification; reader 2, which
// read version 1 before that commit, fills last with a token the notification did not touch.
// Serving version 1 now would take reader 1's caller back in time.
func TestCacheNeverServesWhatIsOlderThanARefusedFill(t *testing.T) {
	c := newTestCache(time.Minute)
	_, tok1, _ := c.get("a")
	c.invalidate("a")
	_, tok2, _ := c.get("a")
	c.put("a", version{2}, tok1)
	c.put("a", version{1}, tok2)
	if v, _, ok := c.get("a"); ok && v.n < 2 {
		t.Errorf("cache serves version %d after version 2 was read", v.n)
	}
	// A later fill of the newer version is served again.
	_, tok3, _ := c.get("a")
	c.put("a", version{2}, tok3)
	if v, _, ok := c.get("a"); !ok || v.n != 2 {
		t.Errorf("after a quiet fill of version 2: %+v (%v), want version 2 served", v, ok)
	}
}

// On virtual time (synctest) the ttl's edge is exact and costs no wall time.
func TestCacheEntriesExpireAfterTheirTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newTestCache(50 * time.Millisecond)
		_, tok, _ := c.get("a")
		c.put("a", version{1}, tok)
		if _, _, ok := c.get("a"); !ok {
			t.Fatal("fresh entry missed")
		}
		time.Sleep(50*time.Millisecond - time.Nanosecond) // fixed: to a nanosecond before the ttl runs out
		if _, _, ok := c.get("a"); !ok {
			t.Fatal("entry missed a nanosecond before its ttl ran out")
		}
		time.Sleep(time.Nanosecond) // fixed: to the ttl's exact end
		if _, _, ok := c.get("a"); ok {
			t.Error("entry served after its ttl")
		}
	})
}

func TestCacheStaysBounded(t *testing.T) {
	c := newTestCache(0)
	for i := range 10_000 {
		id := string(rune('a'+i%26)) + time.Duration(i).String()
		_, tok, _ := c.get(id)
		c.put(id, version{i}, tok)
	}
	if n := c.len(); n > 64*4 {
		t.Errorf("%d entries held, bound %d", n, 64*4)
	}
}
