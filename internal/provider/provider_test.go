package provider

import (
	"errors"
	"io"
	"strings"
	"testing"
)

func TestCappedFailsOverItsBoundAndPassesUpToIt(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		size  int
		bound int64
		fails bool
	}{
		{"under the bound passes", 10, 11, false},
		{"exactly the bound passes", 11, 11, false},
		{"one byte over fails", 12, 11, true},
		{"far over fails", 100000, 11, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := io.ReadAll(Capped(strings.NewReader(strings.Repeat("x", tc.size)), tc.bound))
			if tc.fails != errors.Is(err, ErrTooLarge) || (!tc.fails && len(b) != tc.size) {
				t.Errorf("read %d bytes, err %v", len(b), err)
			}
		})
	}
}
