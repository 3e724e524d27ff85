package storetest

import (
	"fmt"
	"testing"
	"time"

	"mediagen/internal/store"
)

// The fair-share cases (docs/architecture.md#priority-and-fair-share): a claim takes a waiting tenant's job at the next
// free slot whatever another tenant has queued, the same between keys of one tenant, and
// weighted tenants get their share. Each drives the store as the engine does: a pool of
// workers, each slot claimed as soon as it frees.

// backlog is n due jobs of one kind, tenant and key, the first due at due, one a millisecond.
func backlog(kind, prefix, tenant, key string, n int, due time.Time) []store.Job {
	jobs := make([]store.Job, n)
	for i := range jobs {
		jobs[i] = store.Job{ID: fmt.Sprintf("%s:%s-%03d", kind, prefix, i), Kind: kind, Ref: fmt.Sprint(i),
			TenantID: tenant, KeyID: key, RunAt: due.Add(time.Duration(i) * time.Millisecond)}
	}
	return jobs
}

// pool is the workers of one process on one kind: the jobs it holds, freed oldest claim first.
type pool struct {
	t       *testing.T
	s       store.Store
	kind    string
	now     time.Time
	weights map[string]int
	held    []store.Job
}

// claim fills n free slots.
func (p *pool) claim(n int) []store.Job {
	p.t.Helper()
	got, err := p.s.ClaimJobs(p.t.Context(), p.kind, "", p.now, time.Hour, n, p.weights)
	if err != nil {
		p.t.Fatalf("claim: %v", err)
	}
	p.held = append(p.held, got...)
	return got
}

// free ends the job held longest (done), freeing its slot.
func (p *pool) free() {
	p.t.Helper()
	j := p.held[0]
	p.held = p.held[1:]
	if err := updateJob(p.s, store.JobUpdate{ID: j.ID, Token: j.Token, Done: true}); err != nil {
		p.t.Fatalf("finish %s: %v", j.ID, err)
	}
}

// testJobsWaitingTenantStartsAtNextFreeSlot: one tenant has 100 queued jobs and its jobs in
// every worker; another enqueues one job after them. The next slot that frees takes it.
func testJobsWaitingTenantStartsAtNextFreeSlot(t *testing.T, s store.Store) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			now := time.Now()
			p := &pool{t: t, s: s, kind: fmt.Sprintf("tenants-%d", workers), now: now}
			enqueue(t, s, backlog(p.kind, "acme", "acme", "key_a", 100, now.Add(-time.Hour))...)
			if got := p.claim(workers); len(got) != workers {
				t.Fatalf("the first claim took %d jobs; want %d", len(got), workers)
			}
			enqueue(t, s, store.Job{ID: p.kind + ":bolt", Kind: p.kind, TenantID: "bolt", KeyID: "key_b", RunAt: now.Add(-time.Second)})
			p.free()
			if got := p.claim(1); len(got) != 1 || got[0].TenantID != "bolt" {
				t.Fatalf("at the first free slot the claim took %+v; want bolt's job, waiting behind acme's 100", got)
			}
		})
	}
}

// testJobsWaitingKeyStartsAtNextFreeSlot: the same between two keys of one tenant.
func testJobsWaitingKeyStartsAtNextFreeSlot(t *testing.T, s store.Store) {
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			now := time.Now()
			p := &pool{t: t, s: s, kind: fmt.Sprintf("keys-%d", workers), now: now}
			enqueue(t, s, backlog(p.kind, "a", "acme", "key_a", 100, now.Add(-time.Hour))...)
			if got := p.claim(workers); len(got) != workers {
				t.Fatalf("the first claim took %d jobs; want %d", len(got), workers)
			}
			enqueue(t, s, store.Job{ID: p.kind + ":b", Kind: p.kind, TenantID: "acme", KeyID: "key_b", RunAt: now.Add(-time.Second)})
			p.free()
			if got := p.claim(1); len(got) != 1 || got[0].KeyID != "key_b" {
				t.Fatalf("at the first free slot the claim took %+v; want key_b's job, waiting behind key_a's 100", got)
			}
		})
	}
}

// testJobsWeightedTenantsShareByWeight: tenants of weight 3 and 1, each with a long backlog,
// get about 3:1 of the slots over a run, with one worker and with several.
func testJobsWeightedTenantsShareByWeight(t *testing.T, s store.Store) {
	const claims = 80 // slots handed out over the run; 3:1 of them is 60:20
	for _, workers := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d workers", workers), func(t *testing.T) {
			now := time.Now()
			p := &pool{t: t, s: s, kind: fmt.Sprintf("weights-%d", workers), now: now, weights: map[string]int{"acme": 3}}
			// bolt's backlog is the older: age alone would give bolt every slot.
			enqueue(t, s, backlog(p.kind, "bolt", "bolt", "key_b", 100, now.Add(-2*time.Hour))...)
			enqueue(t, s, backlog(p.kind, "acme", "acme", "key_a", 100, now.Add(-time.Hour))...)
			got := map[string]int{}
			count := func(jobs []store.Job) {
				for _, j := range jobs {
					got[j.TenantID]++
				}
			}
			count(p.claim(workers))
			for got["acme"]+got["bolt"] < claims {
				p.free()
				count(p.claim(1))
			}
			// Within two jobs of 3:1 either way (which tenant starts decides the rounding).
			if got["acme"] < 3*claims/4-2 || got["acme"] > 3*claims/4+2 {
				t.Fatalf("over %d slots acme (weight 3) got %d and bolt (weight 1) %d; want about 3:1", claims, got["acme"], got["bolt"])
			}
		})
	}
}
