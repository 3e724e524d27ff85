package sandbox

import (
	"cmp"
	"context"
	"sync"
)

// renderSlots bounds the renders running at once (Config.MaxConcurrent) and hands a freed
// slot to the waiting render whose tenant has the fewest renders running, then whose key has
// the fewest; between equals, to the tenant (then key) served least recently, then to the
// one waiting longest: a tenant that submitted sixty jobs does not make another tenant's one
// wait behind all of them (docs/architecture.md#priority-and-fair-share). With one slot every
// tenant has none running when it frees, so "served least recently" is what takes turns. A
// buffered channel, which it replaces, serves waiters in arrival order.
type renderSlots struct {
	mu      sync.Mutex
	free    int
	seq     uint64
	tenants map[string]int    // renders running, by tenant
	keys    map[[2]string]int // renders running, by tenant and key
	// lastT and lastK are the grant (seq) each tenant and key last got; an entry goes when
	// its tenant has nothing running or waiting, so they hold only tenants with work here.
	lastT   map[string]uint64
	lastK   map[[2]string]uint64
	waiting []*renderWaiter
}

type renderWaiter struct {
	tenant, key string
	seq         uint64
	ready       chan struct{} // closed when the slot is granted
}

func newRenderSlots(n int) *renderSlots {
	return &renderSlots{free: n, tenants: map[string]int{}, keys: map[[2]string]int{},
		lastT: map[string]uint64{}, lastK: map[[2]string]uint64{}}
}

// acquire waits for a slot for a render of tenant's key; the returned func gives it back.
func (s *renderSlots) acquire(ctx context.Context, tenant, key string) (release func(), err error) {
	s.mu.Lock()
	s.seq++
	w := &renderWaiter{tenant: tenant, key: key, seq: s.seq, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.grantLocked()
	s.mu.Unlock()
	release = func() { s.release(w) }
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

func (s *renderSlots) release(w *renderWaiter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(w)
}

func (s *renderSlots) releaseLocked(w *renderWaiter) {
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

// forgetLocked drops a tenant's turn records once it has nothing running or waiting.
func (s *renderSlots) forgetLocked(tenant string) {
	if s.tenants[tenant] > 0 {
		return
	}
	for _, o := range s.waiting {
		if o.tenant == tenant {
			return
		}
	}
	delete(s.lastT, tenant)
	for k := range s.lastK {
		if k[0] == tenant {
			delete(s.lastK, k)
		}
	}
}

// grantLocked gives free slots to the first waiters in fair order.
func (s *renderSlots) grantLocked() {
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

func (s *renderSlots) before(a, b *renderWaiter) bool {
	ka, kb := [2]string{a.tenant, a.key}, [2]string{b.tenant, b.key}
	return cmp.Or(
		cmp.Compare(s.tenants[a.tenant], s.tenants[b.tenant]),
		cmp.Compare(s.keys[ka], s.keys[kb]),
		cmp.Compare(s.lastT[a.tenant], s.lastT[b.tenant]),
		cmp.Compare(s.lastK[ka], s.lastK[kb]),
		cmp.Compare(a.seq, b.seq)) < 0
}
