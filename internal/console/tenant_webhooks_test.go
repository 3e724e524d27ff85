package console

import (
	"context"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
	"mediagen/internal/webhook"
)

// withWebhooks switches webhooks on for the demo tenant and gives the console the webhook
// service, delivering (the test button) to a TLS receiver on loopback named example.com; no
// engine runs, so a redelivery stays pending.
func withWebhooks(t *testing.T, e *tenantEnv, c *TenantConfig) {
	t.Helper()
	tn, _ := e.cat.Tenant("demo")
	tn.WebhooksSetting = catalog.Webhooks{Enabled: true, MaxEndpoints: 3}
	rc := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	t.Cleanup(rc.Close)
	u, _ := url.Parse(rc.URL)
	e.hookURL = "https://example.com:" + u.Port() + "/hook"
	roots := rc.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	e.hooks = &webhook.Service{Store: e.st, Catalogs: c.Catalogs, Now: e.clock.Now,
		Client: testkit.LoopbackFetch(t, roots, testkit.Names{"example.com": "127.0.0.1"})}
	c.Webhooks = e.hooks
}

// seedEndpoint writes an endpoint of the tenant with one failed delivery straight into the
// store.
func seedEndpoint(t *testing.T, e *tenantEnv, tenant, id string) (delivery string) {
	t.Helper()
	ctx := context.Background()
	at := e.clock.Now().Add(-time.Hour)
	ep := store.WebhookEndpoint{ID: id, TenantID: tenant, Name: "receiver " + id, URL: "https://hooks.example.com/" + id,
		EventTypes: []string{"video.completed", "video.failed"}, Secret: "whsec_c2VjcmV0c2VjcmV0", Status: store.WebhookEnabled, CreatedAt: at, UpdatedAt: at}
	d := store.WebhookDelivery{ID: "evt_seed." + id, EventID: "evt_seed", EndpointID: id, TenantID: tenant, EventType: "video.failed",
		Payload: []byte(`{"id":"evt_seed"}`), Status: store.DeliveryPending, CreatedAt: at, UpdatedAt: at}
	err := e.st.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, ep, 10); err != nil {
			return err
		}
		if err := tx.CreateWebhookDelivery(ctx, d); err != nil {
			return err
		}
		return tx.RecordWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: d.ID, N: 1, At: at, StatusCode: 502, Latency: 120 * time.Millisecond,
			Error: "answered HTTP 502"}, store.DeliveryFailed)
	})
	if err != nil {
		t.Fatal(err)
	}
	return d.ID
}

// With the tenant's switch off there is no Webhooks tab and the pages are the console's 404.
func TestWebhooksPageAbsentWithTheSwitchOff(t *testing.T) {
	t.Parallel()
	e := newTenantEnv(t, func(t *testing.T, e *tenantEnv, c *TenantConfig) {
		withWebhooks(t, e, c)
		tn, _ := e.cat.Tenant("demo")
		tn.WebhooksSetting.Enabled = false
	})
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	if p := b.get("/console/"); strings.Contains(p.body, `href="/console/webhooks"`) {
		t.Error("the Webhooks tab is shown with the switch off")
	}
	for _, path := range []string{"/console/webhooks", "/console/webhooks/whe_x"} {
		if p := b.get(path); p.status != http.StatusNotFound {
			t.Errorf("%s: %d; want 404", path, p.status)
		}
	}
}

var secretRE = regexp.MustCompile(`whsec_[A-Za-z0-9+/=]{40,}`)

// The page's actions end to end: add (the secret shown once, never again), a refused add with
// the field's message, disable and enable, rotate keeping the old secret, test, delete; a
// POST without the form token is refused.
func TestWebhooksPageActions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTenantEnv(t, withWebhooks)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	if p := b.get("/console/"); !strings.Contains(p.body, `href="/console/webhooks"`) {
		t.Fatal("no Webhooks tab with the switch on")
	}
	csrf := b.csrf("/console/webhooks")
	p := b.post("/console/webhooks", url.Values{"csrf": {csrf}, "name": {"prod"}, "url": {e.hookURL}, "event_types": {"video.completed", "video.failed"}})
	secret := secretRE.FindString(html.UnescapeString(p.body))
	if p.status != http.StatusOK || secret == "" {
		t.Fatalf("add: %d, secret %q\n%s", p.status, secret, p.body)
	}
	rows, _ := e.st.WebhookEndpoints(ctx, "demo", "", 10)
	if len(rows) != 1 || rows[0].Secret != secret {
		t.Fatalf("endpoints %+v", rows)
	}
	id := rows[0].ID
	if p := b.get("/console/webhooks"); strings.Contains(html.UnescapeString(p.body), secret) || !strings.Contains(p.body, id) {
		t.Fatal("the secret is shown again, or the endpoint is not listed")
	}
	p = b.post("/console/webhooks", url.Values{"csrf": {csrf}, "name": {"bad"}, "url": {"https://10.0.0.1/"}, "event_types": {"video.failed"}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, `id="ep-url-error"`) {
		t.Fatalf("a private address: %d\n%s", p.status, p.body)
	}
	if p := b.post("/console/webhooks/"+id+"/status", url.Values{"csrf": {csrf}, "status": {"disabled"}}); p.status != http.StatusSeeOther {
		t.Fatalf("disable: %d\n%s", p.status, p.body)
	}
	if got, _ := e.st.WebhookEndpoint(ctx, "demo", id); got.Status != store.WebhookDisabled {
		t.Fatalf("after disable: %s", got.Status)
	}
	b.post("/console/webhooks/"+id+"/status", url.Values{"csrf": {csrf}, "status": {"enabled"}})
	p = b.post("/console/webhooks/"+id+"/rotate", url.Values{"csrf": {csrf}, "keep_old": {"on"}})
	rotated := secretRE.FindString(html.UnescapeString(p.body))
	got, _ := e.st.WebhookEndpoint(ctx, "demo", id)
	if p.status != http.StatusOK || rotated == "" || rotated == secret || got.Secret != rotated || got.PrevSecret != secret || got.Status != store.WebhookEnabled {
		t.Fatalf("rotate: %d, new %q, stored %+v", p.status, rotated, got)
	}
	p = b.post("/console/webhooks/"+id+"/test", url.Values{"csrf": {csrf}, "event_type": {"video.completed"}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "(204)") {
		t.Fatalf("test: %d\n%s", p.status, p.body)
	}
	if p := b.post("/console/webhooks/"+id+"/delete", url.Values{"status": {"disabled"}}); p.status != http.StatusForbidden {
		t.Fatalf("a post without the form token: %d", p.status)
	}
	if p := b.post("/console/webhooks/"+id+"/delete", url.Values{"csrf": {csrf}}); p.status != http.StatusSeeOther {
		t.Fatalf("delete: %d\n%s", p.status, p.body)
	}
	if _, err := e.st.WebhookEndpoint(ctx, "demo", id); err == nil {
		t.Fatal("the endpoint is still there after delete")
	}
}

// An endpoint's log: its deliveries with their attempts, filtered, a redelivery queued; an
// auto-disabled endpoint is announced on both pages; another tenant's endpoint is a 404 for
// every page and action.
func TestWebhookLogPageAndAnotherTenantsEndpoint(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newTenantEnv(t, withWebhooks)
	d := seedEndpoint(t, e, "demo", "whe_mine")
	otherD := seedEndpoint(t, e, "other", "whe_theirs")
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	csrf := b.csrf("/console/webhooks")
	p := b.get("/console/webhooks/whe_mine")
	if p.status != http.StatusOK || !strings.Contains(p.body, "evt_seed") || !strings.Contains(p.body, "answered HTTP 502") || !strings.Contains(p.body, "120ms") {
		t.Fatalf("log: %d\n%s", p.status, p.body)
	}
	if p := b.get("/console/webhooks/whe_mine?status=delivered"); strings.Contains(p.body, `id="delivery-`) {
		t.Error("a filter on delivered shows the failed delivery")
	}
	if p := b.get("/console/webhooks/whe_mine?from=yesterday"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "YYYY-MM-DD") {
		t.Errorf("a bad day: %d", p.status)
	}
	p = b.post("/console/webhooks/whe_mine/deliveries/"+d+"/redeliver", url.Values{"csrf": {csrf}})
	if p.status != http.StatusOK || !strings.Contains(p.body, "queued again") {
		t.Fatalf("redeliver: %d\n%s", p.status, p.body)
	}
	if list, _ := e.st.WebhookDeliveries(ctx, store.WebhookDeliveryQuery{TenantID: "demo", EndpointID: "whe_mine", Limit: 10}); len(list) != 2 || list[0].EventID != "evt_seed" {
		t.Fatalf("deliveries after redeliver: %+v", list)
	}
	for _, tc := range []struct {
		method, path string
	}{
		{"GET", "/console/webhooks/whe_theirs"},
		{"POST", "/console/webhooks/whe_theirs/status"},
		{"POST", "/console/webhooks/whe_theirs/rotate"},
		{"POST", "/console/webhooks/whe_theirs/delete"},
		{"POST", "/console/webhooks/whe_theirs/deliveries/" + otherD + "/redeliver"},
		{"POST", "/console/webhooks/whe_mine/deliveries/" + otherD + "/redeliver"},
	} {
		var p page
		if tc.method == "GET" {
			p = b.get(tc.path)
		} else {
			p = b.post(tc.path, url.Values{"csrf": {csrf}, "status": {"disabled"}})
		}
		if p.status != http.StatusNotFound {
			t.Errorf("%s %s: %d; want 404", tc.method, tc.path, p.status)
		}
	}
	if got, _ := e.st.WebhookEndpoint(ctx, "other", "whe_theirs"); got.Status != store.WebhookEnabled {
		t.Error("another tenant's endpoint changed")
	}
	// Disabled by its run of failures: both pages say so.
	if err := e.st.Transact(ctx, func(tx store.Tx) error {
		ep, err := tx.WebhookEndpointForUpdate(ctx, "demo", "whe_mine")
		if err != nil {
			return err
		}
		ep.Status, ep.FailureRun = store.WebhookDisabled, webhook.DefaultDisableAfter
		return tx.UpdateWebhookEndpoint(ctx, ep)
	}); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/console/webhooks"); !strings.Contains(p.body, "Disabled after failed deliveries") {
		t.Error("the Webhooks page does not announce the auto-disabled endpoint")
	}
	if p := b.get("/console/webhooks/whe_mine"); !strings.Contains(p.body, "was disabled after its last 5 deliveries") {
		t.Error("the log page does not announce the auto-disabled endpoint")
	}
	if p := b.get("/console/"); !strings.Contains(p.body, "disabled after a run of failed deliveries") {
		t.Error("the overview (tasks) does not announce the auto-disabled endpoint")
	}
}
