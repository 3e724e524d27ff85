package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"

	"mediagen/internal/catalog"
	"mediagen/internal/testkit"
	"mediagen/internal/webhook"
)

// webhookEnv serves the test catalog with webhooks switched on for acme (bound 2) when on,
// and for no tenant otherwise.
func webhookEnv(t *testing.T, on bool) *testEnv {
	t.Helper()
	src, err := os.ReadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if on {
		text = strings.Replace(text, "  - id: acme\n", "  - id: acme\n    webhooks: {enabled: true, max_endpoints: 2}\n", 1)
	}
	cat, err := catalog.Parse("catalog.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	db := openTestStore(t, "sqlite")
	wh := &webhook.Service{Store: db, Catalogs: catalog.Static(cat), Client: testkit.LoopbackFetch(t, nil, testkit.Names{})}
	s := New(Config{Store: db, Catalog: cat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Webhooks: wh})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return &testEnv{t: t, srv: s, ts: ts, store: db}
}

func (e *testEnv) wh(method, path, key, body string) response {
	e.t.Helper()
	h := map[string]string{"Authorization": "Bearer " + key}
	if body != "" {
		h["Content-Type"] = "application/json"
	}
	return e.do(method, path, h, body)
}

// With the switch off every webhook route answers exactly as an unknown route does: for every
// caller when no tenant has it, and for a tenant without it when another has it.
func TestWebhookRoutesAbsentWhenSwitchedOff(t *testing.T) {
	t.Parallel()
	off := webhookEnv(t, false)
	offKey, _ := off.newKey("acme", 0, false)
	on := webhookEnv(t, true)
	limitedKey, _ := on.newKey("limited", 0, false)
	unknown := off.wh("GET", "/v1/no_such_route", offKey, "")
	for _, tc := range []struct {
		env          *testEnv
		key          string
		method, path string
	}{
		{off, offKey, "POST", "/v1/webhook_endpoints"},
		{off, offKey, "GET", "/v1/webhook_endpoints"},
		{off, "", "GET", "/v1/webhook_endpoints/whe_x"},
		{off, offKey, "DELETE", "/v1/webhook_endpoints/whe_x"},
		{off, offKey, "POST", "/v1/webhook_endpoints/whe_x/rotate_secret"},
		{on, limitedKey, "POST", "/v1/webhook_endpoints"},
		{on, limitedKey, "GET", "/v1/webhook_endpoints"},
		{on, limitedKey, "POST", "/v1/webhook_endpoints/whe_x/test"},
	} {
		r := tc.env.wh(tc.method, tc.path, tc.key, `{"name":"n","url":"https://example.com/","event_types":["video.completed"]}`)
		if r.status != unknown.status || string(r.body) != string(unknown.body) {
			t.Errorf("%s %s: %d %s; want the unknown route's %d %s", tc.method, tc.path, r.status, r.body, unknown.status, unknown.body)
		}
	}
}

type endpointBody struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	Name              string   `json:"name"`
	URL               string   `json:"url"`
	EventTypes        []string `json:"event_types"`
	SigningSecret     *string  `json:"signing_secret"`
	SigningSecretHint string   `json:"signing_secret_hint"`
	Status            string   `json:"status"`
	CreatedAt         int64    `json:"created_at"`
}

func decodeEndpoint(t *testing.T, r response) endpointBody {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var b endpointBody
	if err := json.Unmarshal(r.body, &b, json.RejectUnknownMembers(false)); err != nil {
		t.Fatal(err)
	}
	return b
}

// The endpoint routes in OpenAI's shape: the secret only in create's and rotate's answers,
// a cursor page newest first, update and delete, everything scoped to the caller's tenant.
func TestWebhookEndpointLifecycle(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, true)
	key, _ := e.newKey("acme", 0, false)
	other, _ := e.newKey("acme", 0, false) // same tenant: sees the same endpoints
	created := decodeEndpoint(t, e.wh("POST", "/v1/webhook_endpoints", key, `{"name":"prod","url":"https://hooks.example.com/a","event_types":["video.completed","video.failed"]}`))
	if created.Object != "webhook_endpoint" || created.SigningSecret == nil || !strings.HasPrefix(*created.SigningSecret, "whsec_") ||
		!strings.HasSuffix(*created.SigningSecret, strings.TrimPrefix(created.SigningSecretHint, "whsec_…")) || created.Status != "enabled" {
		t.Fatalf("create: %+v", created)
	}
	got := decodeEndpoint(t, e.wh("GET", "/v1/webhook_endpoints/"+created.ID, other, ""))
	if got.SigningSecret != nil || got.ID != created.ID || got.URL != "https://hooks.example.com/a" {
		t.Fatalf("retrieve shows %+v", got)
	}
	second := decodeEndpoint(t, e.wh("POST", "/v1/webhook_endpoints", key, `{"name":"b","url":"https://hooks.example.com/b","event_types":["video.failed"]}`))
	r := e.wh("POST", "/v1/webhook_endpoints", key, `{"name":"c","url":"https://hooks.example.com/c","event_types":["video.failed"]}`)
	checkEnvelope(t, r, 400, "invalid_request_error", "webhook_endpoint_limit")

	var page struct {
		Object  string         `json:"object"`
		Data    []endpointBody `json:"data"`
		HasMore bool           `json:"has_more"`
		FirstID string         `json:"first_id"`
		LastID  string         `json:"last_id"`
	}
	r = e.wh("GET", "/v1/webhook_endpoints?limit=1", key, "")
	if err := json.Unmarshal(r.body, &page); err != nil || page.Object != "list" || len(page.Data) != 1 || page.Data[0].ID != second.ID || !page.HasMore || page.LastID != second.ID {
		t.Fatalf("first page %s (%v)", r.body, err)
	}
	r = e.wh("GET", "/v1/webhook_endpoints?limit=1&after="+second.ID, key, "")
	page.Data = nil
	if err := json.Unmarshal(r.body, &page); err != nil || len(page.Data) != 1 || page.Data[0].ID != created.ID || page.HasMore {
		t.Fatalf("second page %s (%v)", r.body, err)
	}
	upd := decodeEndpoint(t, e.wh("POST", "/v1/webhook_endpoints/"+created.ID, key, `{"name":"renamed","event_types":["video.failed"]}`))
	if upd.Name != "renamed" || len(upd.EventTypes) != 1 || upd.URL != "https://hooks.example.com/a" {
		t.Fatalf("update: %+v", upd)
	}
	rot := decodeEndpoint(t, e.wh("POST", "/v1/webhook_endpoints/"+created.ID+"/rotate_secret", key, `{"keep_old_secret_active_for_24_hours":true}`))
	if rot.SigningSecret == nil || *rot.SigningSecret == *created.SigningSecret {
		t.Fatalf("rotate: %+v", rot)
	}
	// Another tenant's key, its switch on too, sees none of it.
	stranger, _ := e.newKey("limited", 0, false)
	for _, tn := range e.srv.catalogs.Current().Tenants {
		if tn.ID == "limited" {
			tn.WebhooksSetting.Enabled = true
		}
	}
	checkEnvelope(t, e.wh("GET", "/v1/webhook_endpoints/"+created.ID, stranger, ""), 404, "not_found_error", "webhook_endpoint_not_found")
	checkEnvelope(t, e.wh("DELETE", "/v1/webhook_endpoints/"+created.ID, stranger, ""), 404, "not_found_error", "webhook_endpoint_not_found")
	if r := e.wh("GET", "/v1/webhook_endpoints", stranger, ""); !strings.Contains(string(r.body), `"data":[]`) {
		t.Fatalf("a stranger lists %s", r.body)
	}
	r = e.wh("DELETE", "/v1/webhook_endpoints/"+created.ID, key, "")
	if r.status != 200 || string(r.body) != `{"id":"`+created.ID+`","object":"webhook_endpoint.deleted","deleted":true}`+"\n" {
		t.Fatalf("delete: %d %s", r.status, r.body)
	}
	checkEnvelope(t, e.wh("GET", "/v1/webhook_endpoints/"+created.ID, key, ""), 404, "not_found_error", "webhook_endpoint_not_found")
}

// Every refusal is the contract's envelope naming the offending parameter.
func TestWebhookEndpointRefusalsNameTheParam(t *testing.T) {
	t.Parallel()
	e := webhookEnv(t, true)
	key, _ := e.newKey("acme", 0, false)
	for _, tc := range []struct{ name, body, param string }{
		{"unknown member", `{"name":"n","url":"https://example.com/","event_types":["video.failed"],"secret":"x"}`, "secret"},
		{"name missing", `{"url":"https://example.com/","event_types":["video.failed"]}`, "name"},
		{"name not a string", `{"name":5,"url":"https://example.com/","event_types":["video.failed"]}`, "name"},
		{"url missing", `{"name":"n","event_types":["video.failed"]}`, "url"},
		{"plain http", `{"name":"n","url":"http://example.com/","event_types":["video.failed"]}`, "url"},
		{"private address", `{"name":"n","url":"https://10.0.0.1/","event_types":["video.failed"]}`, "url"},
		{"metadata address", `{"name":"n","url":"https://169.254.169.254/latest","event_types":["video.failed"]}`, "url"},
		{"credentials", `{"name":"n","url":"https://u:p@example.com/","event_types":["video.failed"]}`, "url"},
		{"event types missing", `{"name":"n","url":"https://example.com/"}`, "event_types"},
		{"event types empty", `{"name":"n","url":"https://example.com/","event_types":[]}`, "event_types"},
		{"an OpenAI type this service never sends", `{"name":"n","url":"https://example.com/","event_types":["video.failed","batch.completed"]}`, "event_types[1]"},
		{"a repeated type", `{"name":"n","url":"https://example.com/","event_types":["video.failed","video.failed"]}`, "event_types[1]"},
	} {
		r := e.wh("POST", "/v1/webhook_endpoints", key, tc.body)
		b := checkEnvelopeParam(t, tc.name, r)
		if b != tc.param {
			t.Errorf("%s: param %q, want %q (%s)", tc.name, b, tc.param, r.body)
		}
	}
	r := e.wh("GET", "/v1/webhook_endpoints?limit=500", key, "")
	if p := checkEnvelopeParam(t, "limit", r); p != "limit" {
		t.Errorf("limit: param %q", p)
	}
	ep := decodeEndpoint(t, e.wh("POST", "/v1/webhook_endpoints", key, `{"name":"n","url":"https://example.com/","event_types":["video.failed"]}`))
	r = e.wh("POST", "/v1/webhook_endpoints/"+ep.ID+"/rotate_secret", key, `{"keep_old_secret_active_for_24_hours":"yes"}`)
	if p := checkEnvelopeParam(t, "keep", r); p != "keep_old_secret_active_for_24_hours" {
		t.Errorf("rotate: param %q", p)
	}
	r = e.wh("POST", "/v1/webhook_endpoints/"+ep.ID+"/test", key, `{"event_type":"response.completed"}`)
	if p := checkEnvelopeParam(t, "test", r); p != "event_type" {
		t.Errorf("test: param %q", p)
	}
}

func checkEnvelopeParam(t *testing.T, name string, r response) string {
	t.Helper()
	if r.status != http.StatusBadRequest {
		t.Errorf("%s: status %d, want 400: %s", name, r.status, r.body)
		return ""
	}
	var b struct {
		Error struct {
			Type  string `json:"type"`
			Param string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &b); err != nil || b.Error.Type != "invalid_request_error" {
		t.Errorf("%s: %s", name, r.body)
	}
	return b.Error.Param
}
