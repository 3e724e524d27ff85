package idgen

import (
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"
)

var idShape = regexp.MustCompile(`^video_[2-7a-z]{26}$`)

func TestIDsSortByCreationTimeAndNeverRepeat(t *testing.T) {
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var ids []string
	seen := map[string]bool{}
	for i := range 2000 {
		id := newAt("video", base.Add(time.Duration(i)*time.Millisecond))
		if !idShape.MatchString(id) {
			t.Fatalf("id %q has the wrong shape", id)
		}
		if seen[id] {
			t.Fatalf("id %q repeated", id)
		}
		seen[id] = true
		ids = append(ids, id)
	}
	if !sort.StringsAreSorted(ids) {
		t.Fatal("ids made one millisecond apart do not sort in creation order")
	}
	// Ids made in the same millisecond still differ in their random part.
	a, b := newAt("video", base), newAt("video", base)
	if a == b || a[:16] != b[:16] {
		t.Fatalf("same-millisecond ids %q %q", a, b)
	}
}

func TestNewUsesTheClock(t *testing.T) {
	before := newAt("x", time.Now().Add(-time.Second))
	if now := New("x"); now <= before {
		t.Fatalf("New() = %q sorts before an id from a second ago (%q)", now, before)
	}
}

func TestPlausibleAcceptsEveryIdWeMakeAndRefusesWhatNoIdIs(t *testing.T) {
	for _, s := range []string{New("video"), New("asset"), New("grp"), "vt_" + Secret(20), "brand.assets-1", "Stock_2", strings.Repeat("a", MaxLen)} {
		if !Plausible(s) {
			t.Errorf("Plausible(%q) = false, want true", s)
		}
	}
	for _, s := range []string{"", "\x00", "video_\x00", "\xff", "caf\xe9", "café", "a b", "a/b", "a\nb", "a%00", "\u200b", strings.Repeat("a", MaxLen+1)} {
		if Plausible(s) {
			t.Errorf("Plausible(%q) = true, want false", s)
		}
	}
}
