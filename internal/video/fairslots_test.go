package video

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"mediagen/internal/billing"
	"mediagen/internal/jobs"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/provider"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// gatedGenerator records the order of submits (by task) and keeps every job running until the
// test ends it: each slot frees when the test says.
type gatedGenerator struct {
	mu      sync.Mutex
	submits []string        // task ids, in submit order
	ended   map[string]bool // job ids the test ended
}

func (g *gatedGenerator) SubmitGeneration(_ context.Context, r provider.GenerateRequest) (string, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	task, _, _ := strings.Cut(r.IdempotencyKey, ":")
	g.submits = append(g.submits, task)
	return "job-" + task, nil
}

func (g *gatedGenerator) PollGeneration(_ context.Context, job string) (provider.Job, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ended[job] {
		return provider.Job{Status: provider.StatusFailed, ErrorCode: "ended", ErrorMessage: "ended by the test"}, nil
	}
	return provider.Job{Status: provider.StatusRunning, Progress: 50}, nil
}

func (g *gatedGenerator) submitted() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.submits...)
}

func (g *gatedGenerator) end(task string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ended["job-"+task] = true
}

// taskOf creates a queued native task on slotAccount for key k, with its job.
func (e *env) taskOf(k store.Key, n int) string {
	e.t.Helper()
	ctx := context.Background()
	st := nativeTask("fair", 4)
	body, err := json.Marshal(st.req)
	if err != nil {
		e.t.Fatal(err)
	}
	pricing, _ := json.Marshal(st.quote)
	now := time.Now()
	task := store.Task{ID: fmt.Sprintf("video_%s_%03d", k.ID, n), KeyID: k.ID, TenantID: k.TenantID, Route: "native", Model: "m",
		Status: store.StatusQueued, PayloadHash: []byte{1}, Request: body, Pricing: pricing, Reserved: 1_000, CreatedAt: now, UpdatedAt: now}
	err = e.db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateTask(ctx, task); err != nil {
			return err
		}
		if err := tx.EnqueueJob(ctx, TaskJob(task)); err != nil {
			return err
		}
		return billing.Reserve(ctx, tx, keys.Caller{Key: k}, task.ID, 1_000, now)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return task.ID
}

// keyOf makes a funded key of a tenant.
func (e *env) keyOf(id, tenant string) store.Key {
	e.t.Helper()
	ctx := context.Background()
	k := store.Key{ID: id, TenantID: tenant, Prefix: "mg_" + id, Hash: []byte(id), CreatedAt: time.Now()}
	err := e.db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateKey(ctx, k, "USD"); err != nil {
			return err
		}
		_, err := billing.Credit(ctx, tx, k, "USD", money.Micros(10_000_000), "", time.Now())
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// inLine is how many tasks wait in slotAccount's line (still asking).
func (e *env) inLine() int {
	e.t.Helper()
	stats, err := e.db.UpstreamSlotStats(context.Background(), time.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range stats {
		if s.Account == slotAccount {
			return s.Waiting
		}
	}
	return 0
}

// counted is the counter's value for slotAccount.
func counted(c *prometheus.CounterVec) float64 {
	var m dto.Metric
	if err := c.WithLabelValues(slotAccount).Write(&m); err != nil {
		return 0
	}
	return m.GetCounter().GetValue()
}

// A key of one tenant fills its upstream account's two slots and has 18 more tasks waiting
// for them; then another tenant (or another key of the same tenant) creates one task. The
// next slot that frees goes to that task, not to the oldest waiting: the probe saw
// tenant B's one task finish after 59 of key A's 60.
func TestFreedUpstreamSlotGoesToTheTaskWhoseSideHoldsNone(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, keyID, tenant string }{
		{"another tenant", "key_b", "bolt"},
		{"another key of the tenant", "key_a2", "acme"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			a := e.keyOf("key_a", "acme")
			b := e.keyOf(tc.keyID, tc.tenant)
			gen := &gatedGenerator{ended: map[string]bool{}}
			waits := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "waits"}, []string{"upstream"})
			waits.WithLabelValues(slotAccount) // counted from zero
			p := &Pipeline{Upstreams: map[string]Upstream{slotAccount: {Generator: gen}}, Logger: quiet(),
				PollMin: 5 * time.Millisecond, PollMax: 10 * time.Millisecond, SlotWait: 50 * time.Millisecond, UpstreamWaits: waits,
				MaxInFlight: func(string) int { return 2 }}
			r := e.runTasks(p, jobs.Kind{Poll: 5 * time.Millisecond, Workers: 4, Backoff: jobs.Exponential(5*time.Millisecond, 20*time.Millisecond)})
			defer r.Stop()

			var as []string
			for i := range 20 {
				as = append(as, e.taskOf(a, i))
			}
			testkit.WaitFor(t, 20*time.Second, "still waiting for key A's tasks to fill both slots and wait for more", func() bool {
				return len(gen.submitted()) == 2 && e.inLine() == 18
			})
			bt := e.taskOf(b, 0)
			// The line itself, not a count of refusals: A's 18 asking again can add up to any
			// count before B's task has asked once on a loaded machine.
			testkit.WaitFor(t, 20*time.Second, "still waiting for the other side's task to ask for a slot", func() bool { return e.inLine() == 19 })
			gen.end(gen.submitted()[0])
			testkit.WaitFor(t, 20*time.Second, "still waiting for a third submit", func() bool { return len(gen.submitted()) >= 3 })
			if got := gen.submitted()[2]; got != bt {
				t.Fatalf("the freed slot went to %s; want %s (its side holds no slot; key A holds the other one and has 18 waiting)", got, bt)
			}
			if n := counted(waits); n < 19 {
				t.Errorf("%v submits counted as waiting for a slot; want at least 19 (each task in the line was refused once)", n)
			}
			for _, id := range append(as, bt) {
				gen.end(id)
			}
			for _, id := range append(as, bt) {
				e.waitTerminal(id)
			}
			if err := e.db.CheckLedger(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}
