// Package idgen makes opaque random identifiers with a readable type prefix.
package idgen

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
)

var enc = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// New returns prefix_ followed by 20 characters of base32 (100 random bits): enough that ids
// never collide and cannot be guessed, short enough to paste.
func New(prefix string) string {
	var b [13]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return prefix + "_" + enc.EncodeToString(b[:])[:20]
}

// Secret returns n random bytes encoded in lower-case base32.
func Secret(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return strings.ToLower(enc.EncodeToString(b))
}
