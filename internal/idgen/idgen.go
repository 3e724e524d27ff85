// Package idgen makes opaque identifiers with a readable type prefix.
package idgen

import (
	"crypto/rand"
	"encoding/base32"
	"strings"
	"time"
)

// The alphabet is the usual lower-case base32 set in ASCII order, so that ids sort like the
// numbers they encode.
const alphabet = "234567abcdefghijklmnopqrstuvwxyz"

var enc = base32.NewEncoding(alphabet).WithPadding(base32.NoPadding)

// New returns prefix_ followed by 26 characters: 10 encode the creation time in milliseconds,
// 16 are random (80 bits, so ids cannot be guessed or collide).
//
// The time comes first so that ids sort by creation: a row inserted under a fresh id lands at
// the end of its primary-key index instead of on a random page, which keeps the pages a burst
// of task creations touches few and shared (random ids dirtied one more page per index per
// row, and every dirty page is written to the WAL at commit).
func New(prefix string) string {
	return newAt(prefix, time.Now())
}

func newAt(prefix string, now time.Time) string {
	var b [26]byte
	ms := uint64(now.UnixMilli())
	// 10 characters × 5 bits = 50 bits of milliseconds: good until the year 37648.
	for i := 9; i >= 0; i-- {
		b[i] = alphabet[ms&31]
		ms >>= 5
	}
	var r [10]byte
	_, _ = rand.Read(r[:]) // crypto/rand.Read never fails on supported platforms
	enc.Encode(b[10:], r[:])
	return prefix + "_" + string(b[:])
}

// Secret returns n random bytes encoded in lower-case base32.
func Secret(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return strings.ToLower(enc.EncodeToString(b))
}

// MaxLen is the longest id Plausible accepts. Ours are far shorter; operator-chosen ids
// (asset group ids of the catalog and of `admin asset-group grant --id`) go up to it.
const MaxLen = 128

// Plausible reports whether s could be an id the service handed out: 1 to MaxLen ASCII
// letters, digits, '.', '_' or '-'. Every id New makes fits (a lower-case prefix, '_' and
// the base32 alphabet), and so does every id the operator may choose. A string that does not
// fit names nothing, so a lookup answers "not found" without asking the store. That is more
// than a shortcut: PostgreSQL refuses a text parameter holding NUL or invalid UTF-8 with an
// error (SQLSTATE 22021), not with "no rows", so without this check such an id in a path or
// body became a 500 there while SQLite answered 404.
func Plausible(s string) bool {
	if s == "" || len(s) > MaxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}
