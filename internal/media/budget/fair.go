package budget

import (
	"cmp"
	"context"
	"sync"
)

// Fair bounds work running at once to a number of slots and hands a freed slot to the waiting
// work whose tenant holds the fewest slots, then whose key holds the fewest; between equals, to
// the tenant (then key) served least recently, then to the one waiting longest: a tenant that
// queued sixty pieces of work does not make another tenant's one wait behind all of them
// (docs/architecture.md#priority-and-fair-share). With one slot every tenant holds none when it
// frees, so "served least recently" is what takes turns. A buffered channel would serve waiters
// in arrival order.
//
// The sandbox engine's render slots and the process-wide media budget (Budget) are both a Fair.
type Fair struct {
	mu      sync.Mutex
	size    int
	free    int
	seq     uint64
	tenants map[string]int    // slots held, by tenant
	keys    map[[2]string]int // slots held, by tenant and key
	// lastT and lastK are the grant (seq) each tenant and key last got; an entry goes when
	// its tenant holds and waits for nothing, so they hold only tenants with work here.
	lastT   map[string]uint64
	lastK   map[[2]string]uint64
	waiting []*fairWaiter
}

type fairWaiter struct {
	tenant, key string
	seq         uint64
	first       bool          // AcquireFirst: goes before every waiter without it
	ready       chan struct{} // closed when the slot is granted
}

// NewFair makes n slots (at least 1).
func NewFair(n int) *Fair {
	n = max(n, 1)
	return &Fair{size: n, free: n, tenants: map[string]int{}, keys: map[[2]string]int{},
		lastT: map[string]uint64{}, lastK: map[[2]string]uint64{}}
}

// Acquire waits for a slot for work of tenant's key until ctx ends; the returned func gives
// it back (calling it again does nothing).
func (s *Fair) Acquire(ctx context.Context, tenant, key string) (release func(), err error) {
	return s.acquire(ctx, tenant, key, false)
}

// AcquireFirst is Acquire for work a client is waiting for: it is granted the next free slot
// before any waiting work acquired with Acquire, whoever holds the slots. Background work (a
// render whose job holds a lease and whose client polls) waits a moment longer; a request
// holding a connection open does not wait behind a queue of renders.
func (s *Fair) AcquireFirst(ctx context.Context, tenant, key string) (release func(), err error) {
	return s.acquire(ctx, tenant, key, true)
}

func (s *Fair) acquire(ctx context.Context, tenant, key string, first bool) (release func(), err error) {
	s.mu.Lock()
	s.seq++
	w := &fairWaiter{tenant: tenant, key: key, seq: s.seq, first: first, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.grantLocked()
	s.mu.Unlock()
	var once sync.Once
	release = func() { once.Do(func() { s.release(w) }) }
	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	select {
	case <-w.ready: // granted as the context ended: give it back
		s.releaseLocked(w)
	default:
		for i, o := range s.waiting {
			if o == w {
				s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
				break
			}
		}
		s.forgetLocked(w.tenant)
	}
	return nil, ctx.Err()
}

// Usage is a snapshot of a Fair.
type Usage struct {
	Size, InUse, Waiting int
	// WaitingFirst is how many of the waiting came through AcquireFirst.
	WaitingFirst int
	// Tenants is how many tenants hold or wait for a slot.
	Tenants int
}

// Usage reports the slots in use and the work waiting.
func (s *Fair) Usage() Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.usageLocked()
}

func (s *Fair) usageLocked() Usage {
	u := Usage{Size: s.size, InUse: s.size - s.free, Waiting: len(s.waiting), Tenants: len(s.tenants)}
	seen := map[string]bool{}
	for _, w := range s.waiting {
		if w.first {
			u.WaitingFirst++
		}
		if s.tenants[w.tenant] == 0 && !seen[w.tenant] {
			seen[w.tenant] = true
			u.Tenants++
		}
	}
	return u
}

// OverShare reports whether tenant holds at least its fair share of the slots: the size
// divided among the tenants holding or waiting (tenant counted among them), rounded up. A
// tenant alone is over its share only when it holds every slot.
func (s *Fair) OverShare(tenant string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.usageLocked()
	n := u.Tenants
	if s.tenants[tenant] == 0 && !s.waitsLocked(tenant) {
		n++
	}
	share := (s.size + n - 1) / n
	return s.tenants[tenant] >= share
}

func (s *Fair) waitsLocked(tenant string) bool {
	for _, o := range s.waiting {
		if o.tenant == tenant {
			return true
		}
	}
	return false
}

func (s *Fair) release(w *fairWaiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(w)
}

func (s *Fair) releaseLocked(w *fairWaiter) {
	s.free++
	s.tenants[w.tenant]--
	if s.tenants[w.tenant] == 0 {
		delete(s.tenants, w.tenant)
	}
	k := [2]string{w.tenant, w.key}
	s.keys[k]--
	if s.keys[k] == 0 {
		delete(s.keys, k)
	}
	s.grantLocked()
	s.forgetLocked(w.tenant)
}

// forgetLocked drops a tenant's turn records once it holds and waits for nothing.
func (s *Fair) forgetLocked(tenant string) {
	if s.tenants[tenant] > 0 || s.waitsLocked(tenant) {
		return
	}
	delete(s.lastT, tenant)
	for k := range s.lastK {
		if k[0] == tenant {
			delete(s.lastK, k)
		}
	}
}

// grantLocked gives free slots to the first waiters in fair order.
func (s *Fair) grantLocked() {
	for s.free > 0 && len(s.waiting) > 0 {
		best := 0
		for i, w := range s.waiting[1:] {
			if s.before(w, s.waiting[best]) {
				best = i + 1
			}
		}
		w := s.waiting[best]
		s.waiting = append(s.waiting[:best], s.waiting[best+1:]...)
		s.free--
		s.seq++
		s.tenants[w.tenant]++
		s.keys[[2]string{w.tenant, w.key}]++
		s.lastT[w.tenant], s.lastK[[2]string{w.tenant, w.key}] = s.seq, s.seq
		close(w.ready)
	}
}

func (s *Fair) before(a, b *fairWaiter) bool {
	ka, kb := [2]string{a.tenant, a.key}, [2]string{b.tenant, b.key}
	return cmp.Or(
		cmp.Compare(rank(a.first), rank(b.first)),
		cmp.Compare(s.tenants[a.tenant], s.tenants[b.tenant]),
		cmp.Compare(s.keys[ka], s.keys[kb]),
		cmp.Compare(s.lastT[a.tenant], s.lastT[b.tenant]),
		cmp.Compare(s.lastK[ka], s.lastK[kb]),
		cmp.Compare(a.seq, b.seq)) < 0
}

// rank orders work a client waits for (first) before the rest.
func rank(first bool) int {
	if first {
		return 0
	}
	return 1
}
