package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"mediagen/internal/admin"
	"mediagen/internal/catalog"
	"mediagen/internal/testkit"
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

// manyTenants is the demo catalog with n tenants: demo and copies tenant-2 … tenant-n.
func manyTenants(t *testing.T, n int) *catalog.Catalog {
	t.Helper()
	y := catalog.DemoYAML()
	i := bytes.Index(y, []byte("\n  - id: demo\n"))
	if i < 0 {
		t.Fatal("the demo catalog has no demo tenant block")
	}
	block, out := string(y[i:]), bytes.Clone(y)
	for j := 2; j <= n; j++ {
		b := strings.Replace(block, "\n  - id: demo\n", fmt.Sprintf("\n  - id: tenant-%d\n", j), 1)
		out = append(out, strings.Replace(b, "name: Demo tenant", fmt.Sprintf("name: Tenant %d", j), 1)...)
	}
	cat, err := catalog.Parse("many.yaml", out)
	if err != nil {
		t.Fatal(err)
	}
	return cat
}

func TestTenantsPageIsPagedAndSearchable(t *testing.T) {
	const n = 45 // three pages of tenantsPerPage
	st := testkit.SQLite(t)
	cat := manyTenants(t, n)
	svc := admin.New(admin.Config{Store: st, Catalog: func() *catalog.Catalog { return cat }})
	op, err := NewOperator(OperatorConfig{Common: Common{Sessions: st}, Admin: svc})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(op)
	t.Cleanup(ts.Close)
	made, err := svc.CreateToken(context.Background(), admin.CLIActor("tester"), admin.TokenInput{Name: "viewer", Role: string(admin.RoleViewer)})
	if err != nil {
		t.Fatal(err)
	}
	b := newBrowser(t, ts.URL)
	b.signIn(made.Secret)
	cards := func(body string) int { return strings.Count(body, `<section class="card tenant"`) }
	for _, c := range []struct {
		name, path string
		status     int
		cards      int
		has, lacks []string
	}{
		{"first page", "/console/tenants", http.StatusOK, tenantsPerPage,
			[]string{`45 tenants; page 1 of 3.`, `href="/console/tenants?page=2" rel="next"`}, []string{`rel="prev"`}},
		{"last page", "/console/tenants?page=3", http.StatusOK, n - 2*tenantsPerPage,
			[]string{`page 3 of 3.`, `href="/console/tenants?page=2" rel="prev"`}, []string{`rel="next"`}},
		{"past the end", "/console/tenants?page=9", http.StatusOK, 0, []string{`href="/console/tenants?page=3" rel="prev"`}, nil},
		{"search by name, any case", "/console/tenants?q=tenant+4", http.StatusOK, 7, // 4, 40 … 45
			[]string{`7 tenants matching <q>tenant 4</q>`, `id="tenant-tenant-41"`}, []string{`id="tenant-tenant-3"`, `rel="next"`}},
		{"search by id", "/console/tenants?q=DEMO", http.StatusOK, 1, []string{`id="tenant-demo"`}, nil},
		{"no match", "/console/tenants?q=nobody", http.StatusOK, 0, []string{`No tenant matches.`}, nil},
		{"bad page", "/console/tenants?page=0", http.StatusBadRequest, 0, nil, nil},
		{"search too long", "/console/tenants?q=" + strings.Repeat("x", maxTenantSearch+1), http.StatusBadRequest, 0, nil, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := b.get(c.path)
			if p.status != c.status {
				t.Fatalf("%s: %d, want %d", c.path, p.status, c.status)
			}
			if c.status != http.StatusOK {
				return
			}
			if got := cards(p.body); got != c.cards {
				t.Errorf("%s: %d tenants shown, want %d", c.path, got, c.cards)
			}
			for _, s := range c.has {
				if !strings.Contains(p.body, s) {
					t.Errorf("%s lacks %q", c.path, s)
				}
			}
			for _, s := range c.lacks {
				if strings.Contains(p.body, s) {
					t.Errorf("%s has %q", c.path, s)
				}
			}
		})
	}
}
