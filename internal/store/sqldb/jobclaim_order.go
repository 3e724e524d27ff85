package sqldb

import (
	"cmp"
	"slices"
)

// The order of a claim (jobclaim.go), computed in Go from what stages 1 and 2 read.

// maxWeight bounds a tenant's weight in the claim (the catalog validates the same range): a
// weight is a share of the workers, and a share beyond 100 to 1 is no longer sharing.
const maxWeight = 100

// weightOf is the tenant's weight in the claim: its catalog weight within [1, maxWeight],
// 1 for the unnamed tenant and for tenants the catalog does not weigh.
func weightOf(weights map[string]int, tenant string) int {
	w, ok := weights[tenant]
	if tenant == "" || !ok {
		return 1
	}
	return min(max(w, 1), maxWeight)
}

// dueTenant is a tenant with a due job, as stage 1 read it, and what the claim found for it.
type dueTenant struct {
	id     string
	oldest int64   // run_at of its oldest job: the tie-break between equal tenants
	pass   float64 // its pass, floored (passFloor)
	weight int
	leased int // its leased jobs of the kind
	share  int // its weight's share of the batch, at least one
	// Stage 2's answer, once fetched: its candidates in the order its keys take turns.
	fetched bool
	cands   []candidate
	take    int // jobs the claim gives it
}

// candidate is one due job stage 2 read.
type candidate struct {
	id, tenant, key string
	priority        int
	runAt           int64
	keyPass         float64 // its key's pass, floored
	rank            int     // its place in its tenant's order, from 1
}

// tenantKey is a key of a tenant.
type tenantKey struct{ tenant, key string }

// passFloor is the floor of the passes: one job behind the most-served (0 if none has one),
// so that a tenant (key) back from idle gets its turn, not a burst.
func passFloor(passes []*float64) float64 {
	var most *float64
	for _, p := range passes {
		if p != nil && (most == nil || *p > *most) {
			most = p
		}
	}
	if most == nil {
		return 0
	}
	return *most - 1
}

// floored is the pass, or the floor if it is lower or missing.
func floored(pass *float64, floor float64) float64 {
	if pass != nil && *pass > floor {
		return *pass
	}
	return floor
}

// setShares gives each tenant its weight's share of limit, rounded up.
func setShares(tenants []*dueTenant, limit int) {
	total := 0
	for _, t := range tenants {
		total += t.weight
	}
	for _, t := range tenants {
		t.share = (limit*t.weight + total - 1) / total
	}
}

// slot is a tenant's n-th job of the claim, scored as the claim orders them: fewest leased
// jobs relative to weight (counting the jobs this claim gave it before), then lowest pass
// (advanced 1/weight per job), then tie-breaks.
type slot struct {
	t    *dueTenant
	n    int
	load float64
	pass float64
}

func newSlot(t *dueTenant, n int) slot {
	w := float64(t.weight)
	return slot{t: t, n: n, load: float64(t.leased+n-1) / w, pass: t.pass + float64(n)/w}
}

// compareSlots orders slots; between equal tenants the one with the older due job goes first
// (its candidate's priority and age once fetched, see compareTaken).
func compareSlots(a, b slot) int {
	return cmp.Or(cmp.Compare(a.load, b.load), cmp.Compare(a.pass, b.pass),
		cmp.Compare(a.t.oldest, b.t.oldest), cmp.Compare(a.t.id, b.t.id), cmp.Compare(a.n, b.n))
}

// allot sets each tenant's take: the best limit slots, each tenant offering as many as it has
// candidates (its share until stage 2 has counted them).
func allot(tenants []*dueTenant, limit int) {
	var slots []slot
	for _, t := range tenants {
		offer := t.share
		if t.fetched {
			offer = len(t.cands)
		}
		for n := 1; n <= min(offer, limit); n++ {
			slots = append(slots, newSlot(t, n))
		}
		t.take = 0
	}
	slices.SortFunc(slots, compareSlots)
	for _, s := range slots[:min(limit, len(slots))] {
		s.t.take++
	}
}

// orderKeys orders a tenant's candidates as its keys take turns: the key with the fewest
// leased jobs first (counting the ones before it in this order), then the lowest pass
// (advanced 1 per job), then priority and age. leased counts each key's leased jobs.
func orderKeys(cands []candidate, leased map[tenantKey]int) {
	slices.SortFunc(cands, compareInKey)
	type keyed struct {
		c          candidate
		load, pass float64
	}
	inKey := map[string]int{}
	ks := make([]keyed, len(cands))
	for i, c := range cands {
		inKey[c.key]++
		n := inKey[c.key]
		ks[i] = keyed{c: c, load: float64(leased[tenantKey{c.tenant, c.key}] + n - 1), pass: c.keyPass + float64(n)}
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.load, b.load), cmp.Compare(a.pass, b.pass), compareInKey(a.c, b.c))
	})
	for i, k := range ks {
		cands[i] = k.c
		cands[i].rank = i + 1
	}
}

// compareInKey orders jobs by priority, then age.
func compareInKey(a, b candidate) int {
	return cmp.Or(cmp.Compare(a.priority, b.priority), cmp.Compare(a.runAt, b.runAt), cmp.Compare(a.id, b.id))
}

// taken is the candidates the claim takes, in the order a run of one-job claims would take
// them: by their tenant's slot, ties by priority and age.
func taken(tenants []*dueTenant) []candidate {
	type ranked struct {
		c candidate
		s slot
	}
	var out []ranked
	for _, t := range tenants {
		for _, c := range t.cands[:min(t.take, len(t.cands))] {
			out = append(out, ranked{c: c, s: newSlot(t, c.rank)})
		}
	}
	slices.SortFunc(out, func(a, b ranked) int {
		return cmp.Or(cmp.Compare(a.s.load, b.s.load), cmp.Compare(a.s.pass, b.s.pass), compareInKey(a.c, b.c))
	})
	cands := make([]candidate, len(out))
	for i, r := range out {
		cands[i] = r.c
	}
	return cands
}
