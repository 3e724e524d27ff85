package video

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"mediagen/internal/jobs"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// recordingEvents writes each event as a delivery row in the transaction it is given, as
// webhook.Service does, and can fail its first n calls.
type recordingEvents struct {
	mu     sync.Mutex
	events []webhook.Event
	failN  atomic.Int64
	wakes  atomic.Int64
}

func (r *recordingEvents) Announce(ctx context.Context, tx store.Tx, e webhook.Event) (string, error) {
	if r.failN.Add(-1) >= 0 {
		return "", errors.New("announce failed")
	}
	id := "evt_" + e.ObjectID
	if err := tx.CreateWebhookDelivery(ctx, store.WebhookDelivery{ID: id, EventID: id, EndpointID: "whe", TenantID: e.TenantID,
		EventType: e.Type, Payload: []byte(`{}`), Status: store.DeliveryPending, CreatedAt: e.At, UpdatedAt: e.At}); err != nil {
		return "", err
	}
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	return id, nil
}

func (r *recordingEvents) Wake() { r.wakes.Add(1) }

// A terminal state is announced once, in its settlement's transaction: completed as
// video.completed, failed and expired as video.failed; when writing the event fails, the
// terminal state is not written either and the step runs again.
func TestTerminalStateAnnouncedInItsTransaction(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ev := &recordingEvents{}
		ev.failN.Store(1)
		h := &scripted{script: []string{"done", "done"}, charge: 100, calls: map[string]int{}}
		eng := jobs.New(jobs.Config{Store: e.db, Logger: quiet()})
		k := jobs.Kind{Name: TaskKind, Handler: &Tasks{Store: e.db, Steps: h, Logger: quiet(), Events: ev},
			Poll: 5 * time.Millisecond, Backoff: jobs.Exponential(time.Millisecond, 2*time.Millisecond)}
		if err := eng.Register(k); err != nil {
			t.Fatal(err)
		}
		if err := eng.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		defer eng.Stop()
		done := e.task(1_000, time.Now())
		if got := e.waitTerminal(done); got.Status != store.StatusCompleted {
			t.Fatalf("task %+v", got)
		}
		h.mu.Lock()
		n := h.calls[done]
		h.mu.Unlock()
		if n != 2 {
			t.Fatalf("steps %d: the failed announce should have rolled the final state back once", n)
		}
		failed := e.task(1_000, time.Now())
		h.mu.Lock()
		h.calls[failed] = 0
		h.script = []string{"fail"}
		h.mu.Unlock()
		if got := e.waitTerminal(failed); got.Status != store.StatusFailed {
			t.Fatalf("task %+v", got)
		}
		ev.mu.Lock()
		defer ev.mu.Unlock()
		if len(ev.events) != 2 || ev.events[0].Type != webhook.VideoCompleted || ev.events[0].ObjectID != done ||
			ev.events[1].Type != webhook.VideoFailed || ev.events[1].ObjectID != failed || ev.events[0].TenantID != "acme" {
			t.Fatalf("events %+v", ev.events)
		}
		for _, id := range []string{done, failed} {
			if d, err := e.db.WebhookDelivery(context.Background(), "evt_"+id); err != nil || d.EventType == "" {
				t.Fatalf("delivery of %s: %+v, %v", id, d, err)
			}
		}
		if ev.wakes.Load() != 2 {
			t.Fatalf("wakes %d, want 2", ev.wakes.Load())
		}
	})
}
