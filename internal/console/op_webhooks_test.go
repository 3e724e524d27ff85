package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"mediagen/internal/store"
)

// seedOpEndpoint writes an endpoint of the tenant with one failed delivery.
func seedOpEndpoint(t *testing.T, e *opEnv, tenant, id string) (delivery string) {
	t.Helper()
	ctx := context.Background()
	at := e.clock.Now().Add(-time.Hour)
	ep := store.WebhookEndpoint{ID: id, TenantID: tenant, Name: "receiver " + id, URL: "https://hooks.example.com/" + id,
		EventTypes: []string{"video.completed"}, Secret: "whsec_c2VjcmV0c2VjcmV0", Status: store.WebhookEnabled, CreatedAt: at, UpdatedAt: at}
	d := store.WebhookDelivery{ID: "evt_op." + id, EventID: "evt_op", EndpointID: id, TenantID: tenant, EventType: "video.completed",
		Payload: []byte(`{}`), Status: store.DeliveryPending, CreatedAt: at, UpdatedAt: at}
	err := e.st.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, ep, 10); err != nil {
			return err
		}
		if err := tx.CreateWebhookDelivery(ctx, d); err != nil {
			return err
		}
		return tx.RecordWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: d.ID, N: 1, At: at, Error: "connection refused"}, store.DeliveryFailed)
	})
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

// An operator sees any tenant's endpoints and their log, disables, enables and redelivers,
// each audited; a viewer sees them without the buttons and is refused the writes.
func TestOperatorWebhooksPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newOpEnv(t)
	d := seedOpEndpoint(t, e, "demo", "whe_op1")
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.oper)
	p := b.get("/console/webhooks?tenant=demo")
	if p.status != http.StatusOK || !strings.Contains(p.body, "whe_op1") || !strings.Contains(p.body, "Disable") {
		t.Fatalf("list: %d\n%s", p.status, p.body)
	}
	csrf := b.csrf("/console/webhooks?tenant=demo")
	if p := b.post("/console/webhooks/whe_op1/status", url.Values{"csrf": {csrf}, "status": {"disabled"}}); p.status != http.StatusSeeOther {
		t.Fatalf("disable: %d\n%s", p.status, p.body)
	}
	p = b.post("/console/webhooks/whe_op1/deliveries/"+d+"/redeliver", url.Values{"csrf": {csrf}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "Enable it first") {
		t.Fatalf("redeliver to a disabled endpoint: %d\n%s", p.status, p.body)
	}
	b.post("/console/webhooks/whe_op1/status", url.Values{"csrf": {csrf}, "status": {"enabled"}})
	p = b.get("/console/webhooks/whe_op1")
	if p.status != http.StatusOK || !strings.Contains(p.body, "connection refused") || !strings.Contains(p.body, "Redeliver") {
		t.Fatalf("log: %d\n%s", p.status, p.body)
	}
	if p := b.post("/console/webhooks/whe_op1/deliveries/"+d+"/redeliver", url.Values{"csrf": {csrf}}); p.status != http.StatusOK || !strings.Contains(p.body, "queued again") {
		t.Fatalf("redeliver: %d\n%s", p.status, p.body)
	}
	entries, _ := e.st.Audit(ctx, store.AuditQuery{Limit: 10})
	var actions []string
	for _, en := range entries {
		if en.Via == "console" {
			actions = append(actions, en.Action)
		}
	}
	if strings.Join(actions, " ") != "webhook_delivery.redeliver webhook_endpoint.enable webhook_endpoint.disable" {
		t.Fatalf("audited from the console: %v", actions)
	}
	v := newBrowser(t, e.ts.URL)
	v.signIn(e.viewer)
	if p := v.get("/console/webhooks/whe_op1"); p.status != http.StatusOK || strings.Contains(p.body, "Redeliver <") {
		t.Errorf("a viewer's log: %d (a redeliver button shown?)", p.status)
	}
	vcsrf := v.csrf("/console/webhooks?tenant=demo")
	if p := v.post("/console/webhooks/whe_op1/status", url.Values{"csrf": {vcsrf}, "status": {"disabled"}}); p.status != http.StatusForbidden {
		t.Errorf("a viewer disables: %d", p.status)
	}
	if p := b.get("/console/webhooks/whe_none"); p.status != http.StatusNotFound {
		t.Errorf("an unknown endpoint: %d", p.status)
	}
}
