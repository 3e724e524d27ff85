package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"mediagen/internal/admin"
	"mediagen/internal/catalog"
)

func TestTenantsPageListsTheDemoCatalogsAliases(t *testing.T) {
	e := newOpEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.viewer)
	p := b.get("/console/tenants")
	if p.status != http.StatusOK {
		t.Fatalf("tenants: %d\n%s", p.status, p.body)
	}
	cat := catalog.Demo()
	for _, tn := range cat.Tenants {
		if !strings.Contains(p.body, `id="tenant-`+tn.ID+`"`) {
			t.Errorf("tenant %s missing", tn.ID)
		}
		for _, a := range tn.Aliases {
			if !strings.Contains(p.body, "<code>"+a.Name+"</code>") || !strings.Contains(p.body, "<code>"+a.Model+"</code>") {
				t.Errorf("alias %s (model %s) missing", a.Name, a.Model)
			}
		}
	}
	for _, want := range []string{"production (1080p, 2k, 4k; last frame)", "Video tasks in flight", "per 1M completion tokens"} {
		if !strings.Contains(p.body, want) {
			t.Errorf("tenants page lacks %q", want)
		}
	}
	if strings.Contains(p.body, "/console/tenants/reload") {
		t.Error("a viewer is offered the catalog reload")
	}
}

func TestCatalogReloadIsTheOwnersConfirmedAndAudited(t *testing.T) {
	e := newOpEnv(t)
	for _, tc := range []struct {
		name   string
		secret string
		status int
	}{
		{"viewer refused", e.viewer, http.StatusForbidden},
		{"operator refused", e.oper, http.StatusForbidden},
		{"owner reloads", e.owner, http.StatusSeeOther},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrowser(t, e.ts.URL)
			b.signIn(tc.secret)
			token := b.csrf("/console/") // the sign-out form of every page
			if p := b.get("/console/tenants/reload"); (p.status == http.StatusOK) != (tc.status == http.StatusSeeOther) {
				t.Errorf("confirmation page: %d", p.status)
			}
			p := b.post("/console/tenants/reload", url.Values{"csrf": {token}})
			if p.status != tc.status {
				t.Fatalf("reload: %d; want %d\n%s", p.status, tc.status, p.body)
			}
			entries, err := e.svc.Audit(context.Background(), admin.CLIActor("t"), admin.AuditFilter{Action: "catalog.reload"})
			if err != nil {
				t.Fatal(err)
			}
			if tc.status != http.StatusSeeOther {
				if len(entries.Data) != 0 {
					t.Errorf("a refused reload left %d audit entries", len(entries.Data))
				}
				return
			}
			if p.header.Get("Location") != "/console/tenants?reloaded=1" {
				t.Errorf("redirect to %q", p.header.Get("Location"))
			}
			if len(entries.Data) != 1 || entries.Data[0].Actor.Via != admin.ViaConsole || entries.Data[0].Actor.Role != "owner" {
				t.Errorf("audit: %+v", entries.Data)
			}
			if p := b.get("/console/tenants?reloaded=1"); !strings.Contains(p.body, "Reload request #1 recorded") || !strings.Contains(p.body, `href="/console/tenants/reload"`) {
				t.Errorf("tenants page after the reload:\n%s", p.body)
			}
		})
	}
}
