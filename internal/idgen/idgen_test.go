package idgen

import (
	"regexp"
	"sort"
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
