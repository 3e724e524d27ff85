package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/store"
)

type deliveryBody struct {
	ID           string `json:"id"`
	Object       string `json:"object"`
	EventID      string `json:"event_id"`
	Status       string `json:"status"`
	AttemptCount int    `json:"attempt_count"`
	Attempts     []struct {
		Attempt    int    `json:"attempt"`
		StatusCode int    `json:"status_code"`
		Error      string `json:"error"`
	} `json:"attempts"`
}

// The delivery log routes (ours): a filtered cursor page newest first, one delivery with its
// attempts, a redelivery of the same event, each scoped to the caller's tenant and endpoint;
// refusals name their parameter.
func TestWebhookDeliveryLogRoutes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := webhookEnv(t, true)
	key, _ := e.newKey("acme", 0, false)
	ep := decodeEndpoint(t, e.wh("POST", "/v1/webhook_endpoints", key, `{"name":"n","url":"https://example.com/","event_types":["video.completed","video.failed"]}`))
	at := time.Now().Add(-time.Hour)
	for i, typ := range []string{"video.completed", "video.failed"} {
		d := store.WebhookDelivery{ID: "evt_" + typ[6:] + "." + ep.ID, EventID: "evt_" + typ[6:], EndpointID: ep.ID, TenantID: "acme",
			EventType: typ, Payload: []byte(`{}`), Status: store.DeliveryPending, CreatedAt: at.Add(time.Duration(i) * time.Minute), UpdatedAt: at}
		if err := e.store.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateWebhookDelivery(ctx, d); err != nil {
				return err
			}
			return tx.RecordWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: d.ID, N: 1, At: at, StatusCode: 500, Error: "answered HTTP 500"}, store.DeliveryFailed)
		}); err != nil {
			t.Fatal(err)
		}
	}
	base := "/v1/webhook_endpoints/" + ep.ID + "/deliveries"
	var page struct {
		Object  string         `json:"object"`
		Data    []deliveryBody `json:"data"`
		HasMore bool           `json:"has_more"`
	}
	r := e.wh("GET", base+"?limit=1", key, "")
	if err := json.Unmarshal(r.body, &page); err != nil || r.status != 200 || len(page.Data) != 1 || page.Data[0].ID != "evt_failed."+ep.ID || !page.HasMore {
		t.Fatalf("first page %d %s (%v)", r.status, r.body, err)
	}
	r = e.wh("GET", base+"?limit=1&after=evt_failed."+ep.ID, key, "")
	if err := json.Unmarshal(r.body, &page); err != nil || len(page.Data) != 1 || page.Data[0].ID != "evt_completed."+ep.ID || page.HasMore {
		t.Fatalf("second page %s (%v)", r.body, err)
	}
	r = e.wh("GET", base+"?event_type=video.completed&status=failed", key, "")
	if err := json.Unmarshal(r.body, &page); err != nil || len(page.Data) != 1 || page.Data[0].EventID != "evt_completed" {
		t.Fatalf("filtered %s (%v)", r.body, err)
	}
	var one deliveryBody
	r = e.wh("GET", base+"/evt_failed."+ep.ID, key, "")
	if err := json.Unmarshal(r.body, &one); err != nil || one.Object != "webhook_delivery" || len(one.Attempts) != 1 || one.Attempts[0].StatusCode != 500 {
		t.Fatalf("one delivery %s (%v)", r.body, err)
	}
	r = e.wh("POST", base+"/evt_failed."+ep.ID+"/redeliver", key, "")
	if err := json.Unmarshal(r.body, &one); err != nil || r.status != 200 || one.EventID != "evt_failed" || one.Status != "pending" ||
		!strings.HasPrefix(one.ID, "evt_failed."+ep.ID+".") {
		t.Fatalf("redeliver %d %s (%v)", r.status, r.body, err)
	}
	// The event is now pending again to this endpoint: a second click is refused.
	if p := checkEnvelopeParam(t, "again", e.wh("POST", base+"/evt_failed."+ep.ID+"/redeliver", key, "")); p != "delivery_id" {
		t.Errorf("redeliver while pending: param %q", p)
	}
	if p := checkEnvelopeParam(t, "body", e.wh("POST", base+"/evt_completed."+ep.ID+"/redeliver", key, `{"force":true}`)); p != "force" {
		t.Errorf("redeliver with a member: param %q", p)
	}
	for _, q := range []string{"status=lost", "limit=0", "since=soon", "after=evt_none." + ep.ID, "sort=asc"} {
		param, _, _ := strings.Cut(q, "=")
		if p := checkEnvelopeParam(t, q, e.wh("GET", base+"?"+q, key, "")); p != param {
			t.Errorf("%s: param %q", q, p)
		}
	}
	// Another tenant, its switch on too, sees none of it.
	stranger, _ := e.newKey("limited", 0, false)
	for _, tn := range e.srv.catalogs.Current().Tenants {
		if tn.ID == "limited" {
			tn.WebhooksSetting.Enabled = true
		}
	}
	checkEnvelope(t, e.wh("GET", base, stranger, ""), 404, "not_found_error", "webhook_endpoint_not_found")
	checkEnvelope(t, e.wh("GET", base+"/evt_failed."+ep.ID, stranger, ""), 404, "not_found_error", "webhook_delivery_not_found")
	checkEnvelope(t, e.wh("POST", base+"/evt_completed."+ep.ID+"/redeliver", stranger, ""), 404, "not_found_error", "webhook_endpoint_not_found")
}

// With the switch off the log routes are absent like the others.
func TestWebhookDeliveryLogRoutesAbsentWhenSwitchedOff(t *testing.T) {
	t.Parallel()
	off := webhookEnv(t, false)
	key, _ := off.newKey("acme", 0, false)
	unknown := off.wh("GET", "/v1/no_such_route", key, "")
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/webhook_endpoints/whe_x/deliveries"},
		{"GET", "/v1/webhook_endpoints/whe_x/deliveries/evt_a.whe_x"},
		{"POST", "/v1/webhook_endpoints/whe_x/deliveries/evt_a.whe_x/redeliver"},
	} {
		r := off.wh(tc.method, tc.path, key, "")
		if r.status != unknown.status || string(r.body) != string(unknown.body) {
			t.Errorf("%s %s: %d %s; want the unknown route's", tc.method, tc.path, r.status, r.body)
		}
	}
}
