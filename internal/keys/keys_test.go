package keys

import (
	"strings"
	"testing"
)

func TestWellFormedAcceptsOnlyGeneratedShapes(t *testing.T) {
	t.Parallel()
	secret, _, _ := Generate()
	cases := []struct {
		name string
		s    string
		want bool
	}{
		{"generated", secret, true},
		{"empty", "", false},
		{"prefix only", Prefix, false},
		{"one character short", secret[:len(secret)-1], false},
		{"one character long", secret + "a", false},
		{"other prefix", "sk_" + secret[len(Prefix):], false},
		{"upper case", Prefix + strings.ToUpper(secret[len(Prefix):]), false},
		{"digit outside base32", secret[:len(secret)-1] + "8", false},
		{"NUL", secret[:len(secret)-1] + "\x00", false},
		{"multi-byte rune", secret[:len(secret)-2] + "é", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := WellFormed(tc.s); got != tc.want {
				t.Fatalf("WellFormed(%q) = %v, want %v", tc.s, got, tc.want)
			}
		})
	}
	for range 100 {
		if s, _, _ := Generate(); !WellFormed(s) {
			t.Fatalf("Generate made %q, which WellFormed refuses", s)
		}
	}
}
