package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"mediagen/internal/store"
)

// Endpoints are the tenant's own: another tenant reads, updates and deletes nothing of them;
// the tenant's bound holds; the list is newest first with a cursor; a rotation keeps the old
// secret with its expiry; delete frees a place.
func testWebhookEndpoints(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	mk := func(id string) store.WebhookEndpoint {
		return store.WebhookEndpoint{ID: id, TenantID: "acme", Name: "n " + id, URL: "https://hooks.example.com/" + id,
			EventTypes: []string{"video.completed", "video.failed"}, Secret: "whsec_c2VjcmV0" + id, Status: store.WebhookEnabled,
			CreatedAt: at, UpdatedAt: at}
	}
	for _, id := range []string{"whe_01", "whe_02", "whe_03"} {
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateWebhookEndpoint(ctx, mk(id), 3) }); err != nil {
			t.Fatalf("create %s: %v", id, err)
		}
	}
	err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateWebhookEndpoint(ctx, mk("whe_04"), 3) })
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("fourth endpoint with a bound of 3: %v; want ErrConflict", err)
	}
	if _, err := s.WebhookEndpoint(ctx, "acme", "whe_04"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("refused endpoint readable: %v", err)
	}
	got, err := s.WebhookEndpoint(ctx, "acme", "whe_02")
	if err != nil || !reflect.DeepEqual(got, mk("whe_02")) {
		t.Fatalf("read back:\n%+v, %v\nwant\n%+v", got, err, mk("whe_02"))
	}
	if _, err := s.WebhookEndpoint(ctx, "other", "whe_02"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant reads it: %v", err)
	}
	if got, err := s.WebhookEndpointByID(ctx, "whe_02"); err != nil || got.TenantID != "acme" {
		t.Fatalf("the operator's read by id: %+v, %v", got, err)
	}
	if _, err := s.WebhookEndpointByID(ctx, "whe_04"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the operator reads a refused endpoint: %v", err)
	}
	page, err := s.WebhookEndpoints(ctx, "acme", "", 2)
	if err != nil || len(page) != 2 || page[0].ID != "whe_03" || page[1].ID != "whe_02" {
		t.Fatalf("first page %+v, %v; want whe_03, whe_02", page, err)
	}
	page, err = s.WebhookEndpoints(ctx, "acme", "whe_02", 2)
	if err != nil || len(page) != 1 || page[0].ID != "whe_01" {
		t.Fatalf("second page %+v, %v; want whe_01", page, err)
	}
	if page, _ := s.WebhookEndpoints(ctx, "other", "", 10); len(page) != 0 {
		t.Fatalf("another tenant lists %+v", page)
	}
	// Rotation keeping the old secret, and a disable: both read back.
	err = s.Transact(ctx, func(tx store.Tx) error {
		e, err := tx.WebhookEndpointForUpdate(ctx, "acme", "whe_01")
		if err != nil {
			return err
		}
		e.PrevSecret, e.PrevUntil, e.Secret = e.Secret, at.Add(24*time.Hour), "whsec_bmV3"
		e.Status, e.FailureRun, e.UpdatedAt = store.WebhookDisabled, 20, at.Add(time.Minute)
		return tx.UpdateWebhookEndpoint(ctx, e)
	})
	if err != nil {
		t.Fatal(err)
	}
	got, _ = s.WebhookEndpoint(ctx, "acme", "whe_01")
	if got.Secret != "whsec_bmV3" || got.PrevSecret != mk("whe_01").Secret || !got.PrevUntil.Equal(at.Add(24*time.Hour)) ||
		got.Status != store.WebhookDisabled || got.FailureRun != 20 || !got.UpdatedAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("after rotation and disable: %+v", got)
	}
	// Subscribers are the enabled endpoints that take the type.
	other := mk("whe_05")
	other.TenantID, other.EventTypes = "other", []string{"video.failed"}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateWebhookEndpoint(ctx, other, 3) }); err != nil {
		t.Fatal(err)
	}
	var subs []store.WebhookEndpoint
	if err := s.Transact(ctx, func(tx store.Tx) (err error) {
		subs, err = tx.WebhookSubscribers(ctx, "acme", "video.completed")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if len(subs) != 2 || subs[0].ID != "whe_02" || subs[1].ID != "whe_03" {
		t.Fatalf("subscribers %+v; want whe_02, whe_03 (whe_01 is disabled, whe_05 another tenant's)", subs)
	}
	// Another tenant cannot delete it; deleting frees a place under the bound.
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.DeleteWebhookEndpoint(ctx, "other", "whe_02") }); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("another tenant deletes it: %v", err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.DeleteWebhookEndpoint(ctx, "acme", "whe_02") }); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateWebhookEndpoint(ctx, mk("whe_06"), 3) }); err != nil {
		t.Fatalf("create after a delete: %v", err)
	}
}

// Concurrent creates never pass the tenant's bound.
func testWebhookEndpointBoundUnderConcurrency(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	for i := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := store.WebhookEndpoint{ID: fmt.Sprintf("whe_c%02d", i), TenantID: "acme", Name: "x", URL: "https://x.example.com/",
				EventTypes: []string{"video.completed"}, Secret: "whsec_eA==", Status: store.WebhookEnabled, CreatedAt: at, UpdatedAt: at}
			_ = s.Transact(ctx, func(tx store.Tx) error { return tx.CreateWebhookEndpoint(ctx, e, 4) })
		}()
	}
	wg.Wait()
	if got, err := s.WebhookEndpoints(ctx, "acme", "", 50); err != nil || len(got) != 4 {
		t.Fatalf("%d endpoints, %v; want exactly the bound, 4", len(got), err)
	}
}

// A delivery is written once whatever the number of inserts; its attempts log in order and
// set its status.
func testWebhookDeliveries(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	d := store.WebhookDelivery{ID: "evt_1/whe_1", EventID: "evt_1", EndpointID: "whe_1", TenantID: "acme", EventType: "video.completed",
		Payload: []byte(`{"id":"evt_1"}`), Status: store.DeliveryPending, CreatedAt: at, UpdatedAt: at}
	for range 2 {
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateWebhookDelivery(ctx, d) }); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.WebhookDelivery(ctx, d.ID)
	if err != nil || !reflect.DeepEqual(got, d) {
		t.Fatalf("read back:\n%+v, %v\nwant\n%+v", got, err, d)
	}
	attempts := []store.WebhookAttempt{
		{DeliveryID: d.ID, N: 1, At: at.Add(time.Second), StatusCode: 0, Latency: 3 * time.Millisecond, Error: "connection refused"},
		{DeliveryID: d.ID, N: 2, At: at.Add(time.Minute), StatusCode: 204, Latency: 12 * time.Millisecond},
	}
	for i, a := range attempts {
		status := store.DeliveryPending
		if i == 1 {
			status = store.DeliveryDelivered
		}
		if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RecordWebhookAttempt(ctx, a, status) }); err != nil {
			t.Fatal(err)
		}
	}
	err = s.Transact(ctx, func(tx store.Tx) error { return tx.RecordWebhookAttempt(ctx, attempts[1], store.DeliveryDelivered) })
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("an attempt recorded twice: %v; want ErrConflict", err)
	}
	log, err := s.WebhookAttempts(ctx, d.ID)
	if err != nil || !reflect.DeepEqual(log, attempts) {
		t.Fatalf("log:\n%+v, %v\nwant\n%+v", log, err, attempts)
	}
	got, _ = s.WebhookDelivery(ctx, d.ID)
	if got.Status != store.DeliveryDelivered || got.Attempts != 2 || !got.UpdatedAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("after the log: %+v", got)
	}
	if _, err := s.WebhookDelivery(ctx, "evt_none/whe_1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("missing delivery: %v", err)
	}
}
