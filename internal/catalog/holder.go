package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"
	"time"
)

// Loaded is one catalog as a process loaded it: the checked catalog, the short hash of the
// file's bytes (its version, the same on every replica that loaded the same bytes), and when.
type Loaded struct {
	Catalog  *Catalog
	Hash     string
	LoadedAt time.Time
}

// HashLen is the length of a catalog's short hash, in hex digits: 48 bits, enough that two
// versions of one operator's file never share one.
const HashLen = 12

// Hash is the version of a catalog file: the first HashLen hex digits of the sha256 of its
// bytes.
func Hash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:HashLen]
}

// Holder holds the catalog in force. Readers take one *Catalog with Current and use it to the
// end of their request or job step: a catalog is never modified once loaded, so a reload
// swaps in a new one and a reader keeps a consistent view without locks.
type Holder struct {
	p atomic.Pointer[Loaded]
}

// NewHolder returns a holder of l.
func NewHolder(l *Loaded) *Holder {
	h := &Holder{}
	h.p.Store(l)
	return h
}

// Static returns a holder of c that is never swapped (tests, and the admin commands).
func Static(c *Catalog) *Holder { return NewHolder(&Loaded{Catalog: c}) }

// Current is the catalog in force.
func (h *Holder) Current() *Catalog { return h.p.Load().Catalog }

// Loaded is the catalog in force with its version.
func (h *Holder) Loaded() *Loaded { return h.p.Load() }

// Swap puts l in force and returns the catalog it replaces.
func (h *Holder) Swap(l *Loaded) *Loaded { return h.p.Swap(l) }

// Upstream is Current().Upstream: the account of a name in the catalog in force.
func (h *Holder) Upstream(name string) (UpstreamAccount, bool) { return h.Current().Upstream(name) }
