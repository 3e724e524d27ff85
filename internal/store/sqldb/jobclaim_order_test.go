package sqldb

import (
	"fmt"
	"testing"
)

// TestAllotGivesSlotsByLoadThenPassThenAge checks stage 1's allotment between tenants (the
// conformance suite checks the whole claim on both stores).
func TestAllotGivesSlotsByLoadThenPassThenAge(t *testing.T) {
	tenant := func(id string, oldest int64, pass float64, weight, leased int) *dueTenant {
		return &dueTenant{id: id, oldest: oldest, pass: pass, weight: weight, leased: leased}
	}
	tests := []struct {
		name    string
		tenants []*dueTenant
		limit   int
		// cands, for a tenant already read by stage 2, is how many candidates it has.
		cands map[string]int
		want  string
	}{
		{"equal tenants: the one with the older job", []*dueTenant{tenant("a", 2, 0, 1, 0), tenant("b", 1, 0, 1, 0)}, 1, nil, "a:0 b:1"},
		{"fewer leased jobs beats an older job", []*dueTenant{tenant("a", 2, 0, 1, 0), tenant("b", 1, 0, 1, 1)}, 1, nil, "a:1 b:0"},
		{"lower pass beats an older job", []*dueTenant{tenant("a", 2, 0, 1, 0), tenant("b", 1, 0.5, 1, 0)}, 1, nil, "a:1 b:0"},
		{"a batch interleaves by weight", []*dueTenant{tenant("a", 2, 0, 3, 0), tenant("b", 1, 0, 1, 0)}, 8, nil, "a:6 b:2"},
		{"a batch is bounded by each share", []*dueTenant{tenant("a", 1, 0, 1, 0), tenant("b", 2, 0, 1, 5)}, 4, nil, "a:2 b:2"},
		{"a tenant short of candidates leaves its slots to the others", []*dueTenant{tenant("a", 1, 0, 1, 0), tenant("b", 2, 0, 1, 0), tenant("c", 3, 0, 1, 0)}, 3,
			map[string]int{"a": 0, "b": 1}, "a:0 b:1 c:1"},
		{"candidates beyond the share are offered", []*dueTenant{tenant("a", 1, 0, 1, 0), tenant("b", 2, 0, 1, 0)}, 4,
			map[string]int{"a": 3, "b": 1}, "a:3 b:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setShares(tt.tenants, tt.limit)
			for _, d := range tt.tenants {
				if n, ok := tt.cands[d.id]; ok {
					d.fetched, d.cands = true, make([]candidate, n)
				}
			}
			allot(tt.tenants, tt.limit)
			got := ""
			for i, d := range tt.tenants {
				if i > 0 {
					got += " "
				}
				got += fmt.Sprintf("%s:%d", d.id, d.take)
			}
			if got != tt.want {
				t.Fatalf("allotted %s; want %s", got, tt.want)
			}
		})
	}
}

// TestOrderKeysTakesTurns checks the order within a tenant: the key with the fewest leased
// jobs, then the lowest pass, then priority and age.
func TestOrderKeysTakesTurns(t *testing.T) {
	cand := func(id, key string, priority int, runAt int64, pass float64) candidate {
		return candidate{id: id, tenant: "t", key: key, priority: priority, runAt: runAt, keyPass: pass}
	}
	tests := []struct {
		name   string
		cands  []candidate
		leased map[tenantKey]int
		want   string
	}{
		{"keys alternate, oldest first", []candidate{cand("a1", "a", 0, 1, 0), cand("a2", "a", 0, 2, 0), cand("b1", "b", 0, 3, 0), cand("b2", "b", 0, 4, 0)}, nil,
			"[a1 b1 a2 b2]"},
		{"the key with fewer leased jobs first", []candidate{cand("a1", "a", 0, 1, 0), cand("a2", "a", 0, 2, 0), cand("b1", "b", 0, 3, 0)},
			map[tenantKey]int{{"t", "a"}: 1}, "[b1 a1 a2]"},
		{"the key with the lower pass first", []candidate{cand("a1", "a", 0, 1, 1), cand("b1", "b", 0, 3, 0)}, nil, "[b1 a1]"},
		{"within a key priority, then age", []candidate{cand("a1", "a", 0, 1, 0), cand("a2", "a", -1, 2, 0)}, nil, "[a2 a1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			orderKeys(tt.cands, tt.leased)
			var ids []string
			for i, c := range tt.cands {
				if c.rank != i+1 {
					t.Fatalf("%s ranked %d at place %d", c.id, c.rank, i+1)
				}
				ids = append(ids, c.id)
			}
			if got := fmt.Sprint(ids); got != tt.want {
				t.Fatalf("ordered %s; want %s", got, tt.want)
			}
		})
	}
}
