package console

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/store"
	"mediagen/internal/video"
)

// On a tenant's address the tenant console signs in only that tenant's keys (another's is
// refused as an unknown key is), and its pages play results from that address; on the
// service's own address every tenant signs in, and a tenant with addresses is shown its first.
func TestTenantConsoleOnAnAddressTakesOnlyItsTenantAndLinksThere(t *testing.T) {
	e := newTasksEnv(t)
	src := strings.Replace(string(catalog.DemoYAML()), "  - id: demo\n",
		"  - id: demo\n    addresses: ['http://demo.localhost:8080', 'https://demo.media.example.com']\n", 1) + otherTenantYAML
	cat, err := catalog.Parse("two.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	fs, err := blob.NewFS(t.TempDir(), bytes.Repeat([]byte("k"), 32), "http://mediagen.test")
	if err != nil {
		t.Fatal(err)
	}
	con, err := NewTenant(TenantConfig{Common: Common{Sessions: e.st, Now: e.clock.Now}, Store: e.st,
		Catalogs: catalog.Static(cat), Videos: e.videos, Links: video.BlobLinker{Blobs: fs, TTL: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(con)
	t.Cleanup(ts.Close)
	svc := admin.New(admin.Config{Store: e.st, Catalog: func() *catalog.Catalog { return cat }, Now: e.clock.Now})
	other, err := svc.CreateKey(context.Background(), admin.CLIActor("tester"), admin.KeyInput{Tenant: "other", Name: "other", Credit: 10_000_000})
	if err != nil {
		t.Fatal(err)
	}
	task := e.create(t, e.keyID, fastBody)
	e.advance(t, store.Advance{ID: task.ID, Status: store.StatusCompleted, Step: "done", Progress: 100, Charged: 120_000,
		Result:     []byte(`{"video_key":"videos/` + task.ID + `.mp4","duration":5,"fps":24,"width":1280,"height":720}`),
		FinishedAt: e.clock.Now()})

	onDemo := newBrowser(t, ts.URL)
	onDemo.host, onDemo.origin = "demo.localhost:8080", "http://demo.localhost:8080"
	unknown := onDemo.post("/console/signin", url.Values{"secret": {"mg_" + strings.Repeat("a", 40)}})
	refused := onDemo.post("/console/signin", url.Values{"secret": {other.Secret}})
	if refused.status != http.StatusUnauthorized || refused.status != unknown.status || !strings.Contains(refused.body, "The API key is not valid.") {
		t.Errorf("another tenant's key on demo's address: %d; want the unknown key's %d and its message\n%s", refused.status, unknown.status, refused.body)
	}
	onDemo.signIn(e.key)
	p := onDemo.get("/console/tasks/" + task.ID)
	if !strings.Contains(p.body, `src="http://demo.localhost:8080/v1/files/videos/`+task.ID+`.mp4?expires=`) {
		t.Errorf("task page on demo's address does not play from it:\n%s", p.body)
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "media-src 'self';") {
		t.Errorf("CSP on demo's own address names another origin: %q", csp)
	}

	// The service's own address: every tenant signs in; demo's links are on its first address,
	// which the policy then allows.
	onService := newBrowser(t, ts.URL)
	onService.signIn(other.Secret)
	onService = newBrowser(t, ts.URL)
	onService.signIn(e.key)
	p = onService.get("/console/tasks/" + task.ID)
	if !strings.Contains(p.body, `src="http://demo.localhost:8080/v1/files/videos/`+task.ID+`.mp4?expires=`) {
		t.Errorf("task page on the service's address does not play from demo's first address:\n%s", p.body)
	}
	if csp := p.header.Get("Content-Security-Policy"); !strings.Contains(csp, "media-src 'self' http://demo.localhost:8080;") {
		t.Errorf("CSP %q does not allow demo's address", csp)
	}

	// An https address counts as https without a proxy saying so: the cookie is Secure and the
	// form's Origin must be https.
	onHTTPS := newBrowser(t, ts.URL)
	onHTTPS.host, onHTTPS.origin = "demo.media.example.com", "https://demo.media.example.com"
	res := onHTTPS.post("/console/signin", url.Values{"secret": {e.key}, "next": {"/console/"}})
	if res.status != http.StatusSeeOther || !strings.Contains(res.header.Get("Set-Cookie"), "Secure") {
		t.Errorf("sign in on demo's https address: %d %q", res.status, res.header.Get("Set-Cookie"))
	}
}
