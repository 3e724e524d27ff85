// Package fakekit is what the vendor fakes (internal/provider/*/*fake) share: a loopback TLS
// server, one lock over the fake's state, the seeded draw of injected faults, the record of
// requests that broke a vendor's wire format, the counters a test reads, and the small
// answers every fake writes (JSON, a dropped connection). A fake embeds a Kit and keeps only
// its vendor's wire format: its routes, its fields, its error bodies, its faults.
//
// The kit changes nothing a fake does: the same lock is taken around the same state, and the
// faults are drawn from the same seeded stream as when each fake carried its own copy, so a
// test that loses "the first create" still loses that one.
package fakekit

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
)

// Kit is embedded in a fake's Server. Start it with Serve before the first request.
type Kit struct {
	// Mu guards the fake's state and the kit's own (the fault draw, the violations): one lock,
	// so a fake's critical sections read the same as they did with a lock of its own.
	Mu sync.Mutex

	srv          *httptest.Server
	rng          *rand.Rand
	faultPercent int
	violations   []string
}

// Serve starts h (the fake embedding k) on loopback over TLS, as the real upstreams answer.
// faultPercent is the share of calls Fault fails; seed and stream seed its draw (a fake
// keeps the stream it always used, so its fault sequences stay the ones tests expect).
func (k *Kit) Serve(h http.Handler, faultPercent int, seed, stream uint64) {
	k.rng = rand.New(rand.NewPCG(seed, stream))
	k.faultPercent = faultPercent
	k.srv = httptest.NewTLSServer(h)
}

// Close stops the server.
func (k *Kit) Close() { k.srv.Close() }

// URL is the server's root, https://127.0.0.1:port.
func (k *Kit) URL() string { return k.srv.URL }

// Certificate is the server's TLS certificate, for a client that trusts several fakes.
func (k *Kit) Certificate() *x509.Certificate { return k.srv.Certificate() }

// TLS is a client configuration that trusts the server's certificate.
func (k *Kit) TLS() *tls.Config {
	return &tls.Config{RootCAs: k.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
}

// Client is an HTTP client that trusts the server.
func (k *Kit) Client() *http.Client { return k.srv.Client() }

// TLSClient is Client, by the name the video fakes' tests call it.
func (k *Kit) TLSClient() *http.Client { return k.srv.Client() }

// Violations are the requests that broke the wire format, described.
func (k *Kit) Violations() []string {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	return slices.Clone(k.violations)
}

// Violate records a request that broke the wire format. The caller must not hold Mu.
func (k *Kit) Violate(format string, args ...any) {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	k.violations = append(k.violations, fmt.Sprintf(format, args...))
}

// Fault picks one of n faults for this call, or -1 for none: a call fails at the fake's
// fault percent. The caller must not hold Mu.
func (k *Kit) Fault(n int) int {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	if k.faultPercent <= 0 || k.rng.IntN(100) >= k.faultPercent {
		return -1
	}
	return k.rng.IntN(n)
}

// Inc adds one to a counter of the fake's, under Mu. The caller must not hold Mu.
func (k *Kit) Inc(n *int) {
	k.Mu.Lock()
	*n++
	k.Mu.Unlock()
}

// Locked runs f under Mu. The caller must not hold Mu.
func (k *Kit) Locked(f func()) {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	f()
}

// Load reads a counter of the fake's, under Mu (a test reads while the fake serves).
func (k *Kit) Load(n *int) int {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	return *n
}

// Get reads m[key] under k's lock: a per-key count or record of the fake's.
func Get[K comparable, V any](k *Kit, m map[K]V, key K) V {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	return m[key]
}

// Len is len(m) under k's lock: how many jobs (tasks, tokens …) the fake holds.
func Len[K comparable, V any](k *Kit, m map[K]V) int {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	return len(m)
}

// Clone copies *s under k's lock: a list the fake appends to while a test reads it.
func Clone[T any](k *Kit, s *[]T) []T {
	k.Mu.Lock()
	defer k.Mu.Unlock()
	return slices.Clone(*s)
}

// WriteJSON answers status with v as JSON.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// Drop closes the connection without an answer: a request the upstream took (a job made)
// whose answer never arrives. false when w cannot be taken over; the fake answers instead.
func Drop(w http.ResponseWriter) bool {
	hj, ok := w.(http.Hijacker)
	if !ok {
		return false
	}
	conn, _, err := hj.Hijack()
	if err != nil {
		return false
	}
	_ = conn.Close()
	return true
}

// HasType reports whether a decoded JSON value v is of the schema type typ: string, bool,
// number, integer (a number with no fraction), object or array. Any other name is false.
func HasType(v any, typ string) bool {
	switch typ {
	case "string":
		_, ok := v.(string)
		return ok
	case "bool":
		_, ok := v.(bool)
		return ok
	case "number":
		_, ok := v.(float64)
		return ok
	case "integer":
		f, ok := v.(float64)
		return ok && f == float64(int64(f))
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	}
	return false
}
