package adminapi

import (
	"context"
	"strings"
	"testing"

	"mediagen/internal/admin"
	"mediagen/internal/apidoc"
)

// TestTrafficMatchesAdminOpenAPI checks every exchange the tests of this package made (the
// tests above it run first) and a sweep of its own against docs/admin-openapi.yaml, the way
// the public API is checked against docs/openapi.yaml: each answer's status must be
// documented for its operation and its body must fit; each accepted request must fit too.
// Every route of the server must be documented and have been exercised with a success.
// (Routes other packages register are checked by their own tests the same way.)
func TestTrafficMatchesAdminOpenAPI(t *testing.T) {
	doc, err := apidoc.Load("../../docs/admin-openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.ValidateExamples(); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, "sqlite")
	e.srv.CatalogRoutes(&fakeReloader{}) // catalog_test.go
	e.srv.UpstreamRoutes(func(context.Context) ([]UpstreamLocal, error) {
		return []UpstreamLocal{{Account: "sandbox", Breaker: 2, Broken: true}}, nil
	})
	key := e.makeKey(false)
	g, err := e.svc.GrantGroup(context.Background(), admin.CLIActor("t"), admin.GroupInput{Tenant: "demo", Name: "g"})
	if err != nil {
		t.Fatal(err)
	}
	victim, err := e.svc.CreateToken(context.Background(), admin.CLIActor("t"), admin.TokenInput{Name: "v", Role: "viewer"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ method, path, token, body string }{
		{"GET", "/admin/v1/whoami", e.viewer, ""},
		{"GET", "/admin/v1/whoami", "", ""},
		{"GET", "/admin/v1/whoami?x=1", e.viewer, ""},
		{"POST", "/admin/v1/tokens", e.owner, `{"name":"n","role":"viewer","expires_in":60}`},
		{"POST", "/admin/v1/tokens", e.oper, `{"name":"n","role":"viewer"}`},
		{"GET", "/admin/v1/tokens", e.owner, ""},
		{"POST", "/admin/v1/tokens/" + victim.ID + "/revoke", e.owner, ""},
		{"POST", "/admin/v1/tokens/adt_none/revoke", e.owner, ""},
		{"POST", "/admin/v1/keys", e.oper, `{"tenant":"demo","name":"n","unlimited":true}`},
		{"POST", "/admin/v1/keys", e.oper, `{"tenant":"nobody"}`},
		{"GET", "/admin/v1/keys?tenant=demo&state=active&name_prefix=f&limit=1", e.viewer, ""},
		{"GET", "/admin/v1/keys/" + key, e.viewer, ""},
		{"GET", "/admin/v1/keys/key_none", e.viewer, ""},
		{"POST", "/admin/v1/keys/" + key + "/credits", e.oper, `{"amount":1.25,"note":"n"}`},
		{"POST", "/admin/v1/keys/" + key + "/revoke", e.oper, `{}`},
		{"POST", "/admin/v1/asset-groups", e.oper, `{"tenant":"demo","name":"s","description":"d"}`},
		{"GET", "/admin/v1/asset-groups?tenant=demo&limit=1", e.viewer, ""},
		{"POST", "/admin/v1/asset-groups/" + g.ID + "/revoke", e.oper, ""},
		{"GET", "/admin/v1/audit?action=key.revoke&since=2000-01-01T00:00:00Z", e.viewer, ""},
		{"GET", "/admin/v1/audit?limit=2", e.viewer, ""},
		{"GET", "/admin/v1/tenants", e.viewer, ""},
		{"POST", "/admin/v1/catalog/reload", e.owner, ""},
		{"POST", "/admin/v1/catalog/reload", e.oper, ""},
		{"GET", "/admin/v1/catalog", e.viewer, ""},
		{"GET", "/admin/v1/upstreams", e.viewer, ""},
		{"GET", "/admin/v1/upstreams", "", ""},
		{"GET", "/admin/v1/usage?from=2026-11-01&to=2026-11-30&group_by=tenant,key,alias,day", e.viewer, ""},
		{"GET", "/admin/v1/usage?from=2026-11-01&to=2026-11-30&format=csv", e.viewer, ""},
		{"GET", "/admin/v1/usage?from=2026-11-01&group_by=week", e.viewer, ""},
		{"GET", "/admin/v1/usage?from=2026-11-01", "", ""},
		{"POST", "/admin/v1/usage/rebuild", e.oper, ""},
		{"POST", "/admin/v1/usage/rebuild", e.owner, ""},
		{"POST", "/admin/v1/keys", e.oper, strings.Repeat(" ", MaxBody+1)},
		{"GET", "/admin/v1/nothing", e.viewer, ""},
		{"DELETE", "/admin/v1/keys", e.viewer, ""},
	} {
		idem := ""
		if c.method == "POST" {
			idem = newIdem()
		}
		e.do(c.method, c.path, c.token, idem, c.body)
	}
	supportSweep(t, e)
	webhookSweep(e)
	idem := newIdem()
	e.do("POST", "/admin/v1/keys", e.oper, idem, `{"tenant":"demo"}`)
	e.do("POST", "/admin/v1/keys", e.oper, idem, `{"tenant":"demo"}`)
	e.do("POST", "/admin/v1/keys", e.oper, idem, `{"tenant":"demo","name":"other"}`)

	succeeded := map[string]bool{}
	exchanges := recorded.Exchanges()
	for i, ex := range exchanges {
		if !doc.HasOperation(ex.Method, ex.Path) {
			if err := doc.ValidateUnrouted(ex.Method, ex.Path, ex.Status, ex.RespHeader, ex.RespBody); err != nil {
				t.Errorf("exchange %d: %v", i, err)
			}
			continue
		}
		if err := doc.CheckExchange(ex); err != nil {
			t.Errorf("exchange %d does not conform: %v", i, err)
		}
		if ex.Status < 300 {
			p, _, _ := strings.Cut(ex.Path, "?")
			succeeded[ex.Method+" "+templateOf(doc, ex.Method, p)] = true
		}
	}
	for _, route := range e.srv.Routes() {
		method, path, _ := strings.Cut(route, " ")
		if !doc.HasOperation(method, path) {
			t.Errorf("route %s is not in docs/admin-openapi.yaml", route)
		}
		if !succeeded[route] {
			t.Errorf("no successful exchange of %s was recorded", route)
		}
	}
	t.Logf("%d exchanges checked", len(exchanges))
}

// templateOf finds the documented template a path matches, by trying each operation.
func templateOf(doc *apidoc.Doc, method, path string) string {
	for _, op := range doc.Operations() {
		m, tmpl, _ := strings.Cut(op, " ")
		if m != method {
			continue
		}
		if matchSegs(strings.Split(tmpl, "/"), strings.Split(path, "/")) {
			return tmpl
		}
	}
	return path
}

func matchSegs(tmpl, segs []string) bool {
	if len(tmpl) != len(segs) {
		return false
	}
	for i := range tmpl {
		if !strings.HasPrefix(tmpl[i], "{") && tmpl[i] != segs[i] {
			return false
		}
	}
	return true
}
