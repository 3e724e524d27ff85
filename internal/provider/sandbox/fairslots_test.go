package sandbox

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/testkit"
)

// One tenant's job renders in the engine's only slot and five more of its jobs wait; another
// tenant (or another key of the tenant) submits one job after them. The slot, once free, goes
// to that job: the render slots are shared fairly, not first come first served.
func TestFreedRenderSlotGoesToTheSideWithNoneRunning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, tenant, key string }{
		{"another tenant", "bolt", "key_b"},
		{"another key of the tenant", "acme", "key_a2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEngine(t, "", withPace(-1))
			ctx := context.Background()
			var mu sync.Mutex
			var order []string
			gate := make(chan struct{})
			e.beforeRender = func(ctx context.Context, id string) {
				mu.Lock()
				first := len(order) == 0
				order = append(order, id)
				mu.Unlock()
				if first {
					select {
					case <-gate:
					case <-ctx.Done():
					}
				}
			}
			rendered := func() []string {
				mu.Lock()
				defer mu.Unlock()
				return append([]string(nil), order...)
			}
			waiting := func() int {
				return e.slots.Usage().Waiting
			}
			submit := func(tenant, key, idem string) string {
				t.Helper()
				id, err := e.SubmitGeneration(ctx, provider.GenerateRequest{IdempotencyKey: idem, Tenant: tenant, Key: key,
					Width: 160, Height: 90, Duration: 1})
				if err != nil {
					t.Fatal(err)
				}
				return id
			}
			submit("acme", "key_a", "a0")
			testkit.WaitFor(t, 20*time.Second, "still waiting for the first render", func() bool { return len(rendered()) == 1 })
			var ids []string
			for i := 1; i <= 5; i++ {
				ids = append(ids, submit("acme", "key_a", fmt.Sprintf("a%d", i)))
			}
			testkit.WaitFor(t, 20*time.Second, "still waiting for five waiting renders", func() bool { return waiting() == 5 })
			other := submit(tc.tenant, tc.key, "other")
			testkit.WaitFor(t, 20*time.Second, "still waiting for six waiting renders", func() bool { return waiting() == 6 })
			close(gate)
			for _, id := range append(ids, other) {
				if j := wait(t, e.PollGeneration, id, 60*time.Second); j.Status != provider.StatusSucceeded {
					t.Fatalf("job %s: %+v", id, j)
				}
			}
			if got := rendered(); got[1] != other {
				t.Fatalf("renders in order %v; want %s second, as soon as the slot freed", got, other)
			}
		})
	}
}
