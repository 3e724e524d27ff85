package adminapi

import (
	"context"
	"net/http"
	"testing"
	"time"

	"mediagen/internal/store"
)

// seedWebhook writes an endpoint of the demo tenant with one failed delivery.
func (e *env) seedWebhook() (endpoint, delivery string) {
	e.t.Helper()
	ctx := context.Background()
	at := e.clock.Now().Add(-time.Hour)
	ep := store.WebhookEndpoint{ID: "whe_admin1", TenantID: "demo", Name: "prod", URL: "https://hooks.example.com/a",
		EventTypes: []string{"video.completed"}, Secret: "whsec_c2VjcmV0c2VjcmV0", Status: store.WebhookEnabled, CreatedAt: at, UpdatedAt: at}
	d := store.WebhookDelivery{ID: "evt_admin1.whe_admin1", EventID: "evt_admin1", EndpointID: ep.ID, TenantID: "demo",
		EventType: "video.completed", Payload: []byte(`{"id":"evt_admin1"}`), Status: store.DeliveryPending, CreatedAt: at, UpdatedAt: at}
	err := e.st.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, ep, 3); err != nil {
			return err
		}
		if err := tx.CreateWebhookDelivery(ctx, d); err != nil {
			return err
		}
		return tx.RecordWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: d.ID, N: 1, At: at, StatusCode: 500, Latency: 40 * time.Millisecond,
			Error: "answered HTTP 500"}, store.DeliveryFailed)
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return ep.ID, d.ID
}

// A viewer reads any tenant's endpoints and their log; the writes need the operator and are
// refused for a viewer with nothing written.
func TestWebhookAdminReadsForAViewerWritesForAnOperator(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ep, d := e.seedWebhook()
		for _, path := range []string{"/admin/v1/webhook_endpoints?tenant=demo", "/admin/v1/webhook_endpoints/" + ep,
			"/admin/v1/webhook_endpoints/" + ep + "/deliveries?status=failed&event_type=video.completed&since=2020-01-01T00:00:00Z",
			"/admin/v1/webhook_endpoints/" + ep + "/deliveries/" + d} {
			if r := e.do("GET", path, e.viewer, "", ""); r.status != http.StatusOK {
				t.Errorf("GET %s as viewer: %d %s", path, r.status, r.body)
			}
		}
		m := e.do("GET", "/admin/v1/webhook_endpoints/"+ep+"/deliveries/"+d, e.viewer, "", "").json(t)
		if as, _ := m["attempts"].([]any); len(as) != 1 || as[0].(map[string]any)["status_code"] != 500.0 || m["tenant"] != "demo" {
			t.Errorf("one delivery: %v", m)
		}
		snap := e.snap()
		for _, path := range []string{"/admin/v1/webhook_endpoints/" + ep + "/disable", "/admin/v1/webhook_endpoints/" + ep + "/enable",
			"/admin/v1/webhook_endpoints/" + ep + "/deliveries/" + d + "/redeliver"} {
			r := e.write(path, e.viewer, "")
			if code, _ := r.errCodeParam(t); r.status != http.StatusForbidden || code != "insufficient_role" {
				t.Errorf("POST %s as viewer: %d %s", path, r.status, r.body)
			}
		}
		if after := e.snap(); after != snap {
			t.Errorf("refused writes changed the store: %+v → %+v", snap, after)
		}
		if list, _ := e.st.WebhookDeliveries(context.Background(), store.WebhookDeliveryQuery{TenantID: "demo", EndpointID: ep, Limit: 10}); len(list) != 1 {
			t.Errorf("%d deliveries after a viewer's redeliver; want 1", len(list))
		}
	})
}

// The operator disables, enables and redelivers; each write is one audit entry with its
// before and after, and a redelivery is refused (nothing written, nothing audited) while the
// endpoint is disabled.
func TestWebhookAdminWritesAudited(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		ep, d := e.seedWebhook()
		r := e.write("/admin/v1/webhook_endpoints/"+ep+"/disable", e.oper, "")
		if r.status != http.StatusOK || r.json(t)["status"] != "disabled" {
			t.Fatalf("disable: %d %s", r.status, r.body)
		}
		n := e.auditCount()
		r = e.write("/admin/v1/webhook_endpoints/"+ep+"/deliveries/"+d+"/redeliver", e.oper, "")
		if code, param := r.errCodeParam(t); r.status != http.StatusBadRequest || code != "webhook_endpoint_disabled" || param == "" {
			t.Fatalf("redeliver to a disabled endpoint: %d %s", r.status, r.body)
		}
		if e.auditCount() != n {
			t.Fatal("a refused redelivery was audited")
		}
		if r := e.write("/admin/v1/webhook_endpoints/"+ep+"/enable", e.oper, ""); r.status != http.StatusOK || r.json(t)["status"] != "enabled" {
			t.Fatalf("enable: %d %s", r.status, r.body)
		}
		r = e.write("/admin/v1/webhook_endpoints/"+ep+"/deliveries/"+d+"/redeliver", e.oper, "")
		if r.status != http.StatusCreated || r.json(t)["event_id"] != "evt_admin1" || r.json(t)["status"] != "pending" {
			t.Fatalf("redeliver: %d %s", r.status, r.body)
		}
		newID := r.json(t)["id"].(string)
		if got, err := e.st.WebhookDelivery(ctx, newID); err != nil || got.EventID != "evt_admin1" || string(got.Payload) != `{"id":"evt_admin1"}` {
			t.Fatalf("the redelivery in the store: %+v, %v", got, err)
		}
		entries, err := e.st.Audit(ctx, store.AuditQuery{Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"webhook_delivery.redeliver", "webhook_endpoint.enable", "webhook_endpoint.disable"}
		for i, action := range want {
			if i >= len(entries) || entries[i].Action != action {
				t.Fatalf("audit entries %+v; want the newest to be %v", entries, want)
			}
		}
		if en := entries[2]; en.TargetType != "webhook_endpoint" || en.TargetID != ep || len(en.Before) == 0 || len(en.After) == 0 {
			t.Errorf("disable's entry %+v", en)
		}
		if en := entries[0]; en.TargetType != "webhook_delivery" || en.TargetID != d || len(en.After) == 0 {
			t.Errorf("redeliver's entry %+v", en)
		}
	})
}

// Refusals name their parameter; unknown ids are 404s.
func TestWebhookAdminRefusals(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ep, _ := e.seedWebhook()
		for _, tc := range []struct{ path, param string }{
			{"/admin/v1/webhook_endpoints", "tenant"},
			{"/admin/v1/webhook_endpoints?tenant=nobody", "tenant"},
			{"/admin/v1/webhook_endpoints?tenant=demo&limit=1000", "limit"},
			{"/admin/v1/webhook_endpoints/" + ep + "/deliveries?status=lost", "status"},
			{"/admin/v1/webhook_endpoints/" + ep + "/deliveries?since=yesterday", "since"},
			{"/admin/v1/webhook_endpoints/" + ep + "/deliveries?cursor=evt_gone." + ep, "cursor"},
		} {
			r := e.do("GET", tc.path, e.viewer, "", "")
			if _, param := r.errCodeParam(t); r.status != http.StatusBadRequest || param != tc.param {
				t.Errorf("%s: %d %s; want 400 naming %s", tc.path, r.status, r.body, tc.param)
			}
		}
		for _, path := range []string{"/admin/v1/webhook_endpoints/whe_none", "/admin/v1/webhook_endpoints/" + ep + "/deliveries/evt_none." + ep} {
			if r := e.do("GET", path, e.viewer, "", ""); r.status != http.StatusNotFound {
				t.Errorf("%s: %d %s; want 404", path, r.status, r.body)
			}
		}
		if r := e.write("/admin/v1/webhook_endpoints/whe_none/disable", e.oper, ""); r.status != http.StatusNotFound {
			t.Errorf("disable an unknown endpoint: %d %s", r.status, r.body)
		}
	})
}

// webhookSweep makes one exchange of each webhook route and of its refusals, for
// TestTrafficMatchesAdminOpenAPI (this file's tests run after it).
func webhookSweep(e *env) {
	ep, d := e.seedWebhook()
	base := "/admin/v1/webhook_endpoints/" + ep
	for _, c := range []struct{ method, path, token string }{
		{"GET", "/admin/v1/webhook_endpoints?tenant=demo&limit=1", e.viewer},
		{"GET", "/admin/v1/webhook_endpoints", e.viewer},
		{"GET", base, e.viewer},
		{"GET", "/admin/v1/webhook_endpoints/whe_none", e.viewer},
		{"GET", base + "/deliveries?status=failed&since=2000-01-01T00:00:00Z&limit=5", e.viewer},
		{"GET", base + "/deliveries?status=lost", e.viewer},
		{"GET", base + "/deliveries/" + d, e.viewer},
		{"POST", base + "/disable", e.viewer},
		{"POST", base + "/disable", e.oper},
		{"POST", base + "/deliveries/" + d + "/redeliver", e.oper},
		{"POST", base + "/enable", e.oper},
		{"POST", base + "/deliveries/" + d + "/redeliver", e.oper},
	} {
		idem := ""
		if c.method == "POST" {
			idem = newIdem()
		}
		e.do(c.method, c.path, c.token, idem, "")
	}
}
