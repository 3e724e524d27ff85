package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"mediagen/internal/store"
)

// seedDeliveries writes n deliveries of the endpoint, one a minute from at; every third is
// video.failed, statuses cycle pending, delivered, failed; each has one attempt.
func seedDeliveries(t *testing.T, s store.Store, tenant, endpoint string, n int, at time.Time) []store.WebhookDelivery {
	t.Helper()
	ctx := context.Background()
	statuses := []string{store.DeliveryPending, store.DeliveryDelivered, store.DeliveryFailed}
	var out []store.WebhookDelivery
	for i := range n {
		typ := "video.completed"
		if i%3 == 0 {
			typ = "video.failed"
		}
		created := at.Add(time.Duration(i) * time.Minute)
		d := store.WebhookDelivery{ID: fmt.Sprintf("evt_%03d.%s", i, endpoint), EventID: fmt.Sprintf("evt_%03d", i), EndpointID: endpoint,
			TenantID: tenant, EventType: typ, Payload: []byte(`{}`), Status: store.DeliveryPending, CreatedAt: created, UpdatedAt: created}
		status := statuses[i%3]
		err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateWebhookDelivery(ctx, d); err != nil {
				return err
			}
			return tx.RecordWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: d.ID, N: 1, At: created.Add(time.Second), StatusCode: 500}, status)
		})
		if err != nil {
			t.Fatal(err)
		}
		d.Status, d.Attempts, d.UpdatedAt = status, 1, created.Add(time.Second)
		out = append(out, d)
	}
	return out
}

func deliveryIDs(ds []store.WebhookDelivery) []string {
	out := []string{}
	for _, d := range ds {
		out = append(out, d.ID)
	}
	return out
}

// The log is one endpoint's of one tenant, newest first, filtered by status, event type,
// event id and creation time, and paged by a (created_at, id) cursor without gaps or repeats,
// also when two deliveries share a creation time (a redelivery of the same instant).
func testWebhookDeliverySearch(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
	all := seedDeliveries(t, s, "acme", "whe_a", 9, at)
	seedDeliveries(t, s, "acme", "whe_b", 2, at)
	twin := all[8]
	twin.ID, twin.Status, twin.Attempts = twin.ID+".r1", store.DeliveryPending, 0
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateWebhookDelivery(ctx, twin) }); err != nil {
		t.Fatal(err)
	}
	q := func(mod func(*store.WebhookDeliveryQuery)) []string {
		t.Helper()
		wq := store.WebhookDeliveryQuery{TenantID: "acme", EndpointID: "whe_a", Limit: 100}
		mod(&wq)
		got, err := s.WebhookDeliveries(ctx, wq)
		if err != nil {
			t.Fatal(err)
		}
		return deliveryIDs(got)
	}
	id := func(i int) string { return all[i].ID }
	for _, tc := range []struct {
		name string
		mod  func(*store.WebhookDeliveryQuery)
		want []string
	}{
		{"all newest first", func(*store.WebhookDeliveryQuery) {}, []string{twin.ID, id(8), id(7), id(6), id(5), id(4), id(3), id(2), id(1), id(0)}},
		{"another tenant sees none", func(q *store.WebhookDeliveryQuery) { q.TenantID = "other" }, []string{}},
		{"failed only", func(q *store.WebhookDeliveryQuery) { q.Status = store.DeliveryFailed }, []string{id(8), id(5), id(2)}},
		{"video.failed only", func(q *store.WebhookDeliveryQuery) { q.EventType = "video.failed" }, []string{id(6), id(3), id(0)}},
		{"one event id", func(q *store.WebhookDeliveryQuery) { q.EventID = all[8].EventID }, []string{twin.ID, id(8)}},
		{"time range", func(q *store.WebhookDeliveryQuery) { q.Since, q.Until = at.Add(2*time.Minute), at.Add(4*time.Minute) }, []string{id(3), id(2)}},
		{"limit", func(q *store.WebhookDeliveryQuery) { q.Limit = 2 }, []string{twin.ID, id(8)}},
		{"after the twin", func(q *store.WebhookDeliveryQuery) { q.BeforeAt, q.BeforeID, q.Limit = twin.CreatedAt, twin.ID, 2 }, []string{id(8), id(7)}},
		{"after the last", func(q *store.WebhookDeliveryQuery) { q.BeforeAt, q.BeforeID = all[0].CreatedAt, id(0) }, []string{}},
	} {
		if got := q(tc.mod); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v; want %v", tc.name, got, tc.want)
		}
	}
}

// The sweep deletes ended deliveries last touched before the cutoff with their attempts, at
// most a batch at a time, oldest first; pending ones and newer ones stay.
func testWebhookDeliverySweep(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 10, 1, 9, 0, 0, 0, time.UTC)
	all := seedDeliveries(t, s, "acme", "whe_a", 9, at) // 0,3,6 pending; the rest ended
	cutoff := at.Add(6 * time.Minute)                   // 1, 2, 4, 5 ended before it; 7, 8 after
	n, err := s.SweepWebhookDeliveries(ctx, cutoff, 3)
	if err != nil || n != 3 {
		t.Fatalf("first batch: %d, %v; want 3", n, err)
	}
	if _, err := s.WebhookDelivery(ctx, all[5].ID); err != nil {
		t.Fatalf("the newest ended one before the cutoff went in the first batch of 3 (oldest first): %v", err)
	}
	n, err = s.SweepWebhookDeliveries(ctx, cutoff, 3)
	if err != nil || n != 1 {
		t.Fatalf("second batch: %d, %v; want 1", n, err)
	}
	if n, err := s.SweepWebhookDeliveries(ctx, cutoff, 3); err != nil || n != 0 {
		t.Fatalf("third batch: %d, %v; want 0", n, err)
	}
	left, err := s.WebhookDeliveries(ctx, store.WebhookDeliveryQuery{TenantID: "acme", EndpointID: "whe_a", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{all[8].ID, all[7].ID, all[6].ID, all[3].ID, all[0].ID}
	if got := deliveryIDs(left); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("left %v; want %v (pending and recent)", got, want)
	}
	for _, i := range []int{1, 2, 4, 5} {
		if log, err := s.WebhookAttempts(ctx, all[i].ID); err != nil || len(log) != 0 {
			t.Errorf("attempts of swept %s: %v, %v", all[i].ID, log, err)
		}
	}
	if log, _ := s.WebhookAttempts(ctx, all[0].ID); len(log) != 1 {
		t.Errorf("attempts of a pending delivery: %v; want its one", log)
	}
}
