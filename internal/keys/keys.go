// Package keys makes API keys, recognises them, and names who a request is from (Caller).
package keys

import (
	"crypto/sha256"

	"mediagen/internal/catalog"
	"mediagen/internal/idgen"
	"mediagen/internal/store"
)

// Prefix starts every key, so a leaked key is recognisable by secret scanners.
const Prefix = "mg_"

// Generate returns a new secret and what is stored of it: its SHA-256 hash and a short
// display prefix. The secret itself is shown once and never stored.
func Generate() (secret, display string, hash []byte) {
	secret = Prefix + idgen.Secret(25) // 200 random bits
	return secret, secret[:10], Hash(secret)
}

// secretLen is the length of a key Generate makes: the prefix and 25 bytes in base32.
const secretLen = len(Prefix) + 40

// WellFormed reports whether s has the shape of a key Generate makes. Anything else cannot
// be a key, and is refused without a database read: an unauthenticated client sending
// garbage tokens costs the service no query.
func WellFormed(s string) bool {
	if len(s) != secretLen || s[:len(Prefix)] != Prefix {
		return false
	}
	for i := len(Prefix); i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// Hash is how a presented key is looked up.
func Hash(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// Caller is who a request is from: its authenticated key and the key's tenant. The edge makes
// it once per request (internal/httpapi); every use case takes it as it is.
type Caller struct {
	Key    store.Key
	Tenant *catalog.Tenant
	// Catalog is the catalog in force when the request began, Tenant's own: every other
	// lookup of the request (upstream accounts) reads it, so a reload in the middle of a
	// request never mixes two catalogs (nil: the service's own lookups).
	Catalog *catalog.Catalog
}
