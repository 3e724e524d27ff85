package asset

import (
	"strings"
	"testing"
)

func TestOutsideLibraryLimits(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		w, h int
		n    int64
		want string // "" inside the limits; else a word of the reason
	}{
		{"a 640×480 image is inside", 640, 480, 1 << 20, ""},
		{"300 px sides are inside", 300, 300, 0, ""},
		{"6000×3000 is inside", 6000, 3000, 0, ""},
		{"a 0.4 ratio is inside", 400, 1000, 0, ""},
		{"a 2.5 ratio is inside", 1000, 400, 0, ""},
		{"a 299 px side is outside", 299, 400, 0, "sides"},
		{"a 6001 px side is outside", 6001, 4000, 0, "sides"},
		{"a ratio over 2.5 is outside", 1300, 400, 0, "ratio"},
		{"a ratio under 0.4 is outside", 399, 1000, 0, "ratio"},
		{"30 MiB is outside", 1000, 1000, 30<<20 + 1, "MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := outsideLimits(tc.w, tc.h, tc.n)
			if (got == "") != (tc.want == "") || !strings.Contains(got, tc.want) {
				t.Errorf("outsideLimits(%d, %d, %d) = %q, want %q", tc.w, tc.h, tc.n, got, tc.want)
			}
		})
	}
}
