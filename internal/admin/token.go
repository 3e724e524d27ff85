package admin

import (
	"crypto/sha256"

	"mediagen/internal/idgen"
)

// TokenPrefix starts every admin token, so a leaked one is recognisable by secret scanners
// and never mistaken for an API key (mg_).
const TokenPrefix = "mga_"

// tokenLen is the length of a token GenerateToken makes: the prefix and 32 bytes in base32.
const tokenLen = len(TokenPrefix) + 52

// GenerateToken returns a new secret, its display prefix and its SHA-256 hash. The secret is
// shown once and never stored.
func GenerateToken() (secret, display string, hash []byte) {
	secret = TokenPrefix + idgen.Secret(32) // 256 random bits
	return secret, secret[:12], HashToken(secret)
}

// TokenWellFormed reports whether s has the shape of a token GenerateToken makes; anything
// else is refused without a database read.
func TokenWellFormed(s string) bool {
	if len(s) != tokenLen || s[:len(TokenPrefix)] != TokenPrefix {
		return false
	}
	for i := len(TokenPrefix); i < len(s); i++ {
		if c := s[i]; (c < 'a' || c > 'z') && (c < '2' || c > '7') {
			return false
		}
	}
	return true
}

// HashToken is how a presented token is looked up.
func HashToken(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}
