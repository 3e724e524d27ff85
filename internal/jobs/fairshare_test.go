package jobs_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/jobs"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// The engine passes the catalog's weights to every claim: with one worker, a tenant of weight
// 3 runs about three jobs for each one of a tenant of weight 1, though the other's backlog is
// the older (age alone would run all of it first); without weights they alternate.
func TestEngineSharesTheWorkersByTenantWeight(t *testing.T) {
	t.Parallel()
	const first = 40 // runs looked at: 30:10 by weight, 20:20 without
	for _, tc := range []struct {
		name     string
		weights  map[string]int
		min, max int // acme's runs among the first 40
	}{
		{"weights 3 and 1", map[string]int{"acme": 3}, 28, 32},
		{"no weights", nil, 18, 22},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			db := openDB(t)
			now := time.Now()
			for i := range 60 {
				enqueue(t, db, store.Job{ID: fmt.Sprintf("k:bolt-%02d", i), Kind: "k", TenantID: "bolt", KeyID: "key_b",
					RunAt: now.Add(time.Duration(i-1000) * time.Millisecond)})
				enqueue(t, db, store.Job{ID: fmt.Sprintf("k:acme-%02d", i), Kind: "k", TenantID: "acme", KeyID: "key_a",
					RunAt: now.Add(time.Duration(i-500) * time.Millisecond)})
			}
			var mu sync.Mutex
			var ran []string
			h := &handler{run: func(_ context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
				mu.Lock()
				ran = append(ran, j.TenantID)
				mu.Unlock()
				return jobs.Outcome{Done: true}, nil
			}}
			weights := tc.weights
			e := jobs.New(jobs.Config{Store: db, Logger: quiet(), Weights: func() map[string]int { return weights }})
			if err := e.Register(jobs.Kind{Name: "k", Handler: h, Workers: 1, Poll: 5 * time.Millisecond}); err != nil {
				t.Fatal(err)
			}
			if err := e.Start(t.Context()); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(e.Stop)
			testkit.WaitFor(t, 10*time.Second, "still waiting for 40 runs", func() bool { mu.Lock(); defer mu.Unlock(); return len(ran) >= first })
			mu.Lock()
			acme := 0
			for _, tenant := range ran[:first] {
				if tenant == "acme" {
					acme++
				}
			}
			mu.Unlock()
			if acme < tc.min || acme > tc.max {
				t.Fatalf("acme ran %d of the first %d jobs; want %d to %d", acme, first, tc.min, tc.max)
			}
		})
	}
}
