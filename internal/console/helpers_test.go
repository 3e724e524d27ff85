package console

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/asset"
	"mediagen/internal/catalog"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
	"mediagen/internal/video"
	"mediagen/internal/webhook"
)

// opEnv is an operator console on a fresh SQLite store with an owner, an operator and a
// viewer token.
type opEnv struct {
	st                  store.Store
	svc                 *admin.Service
	clock               *testkit.Clock
	ts                  *httptest.Server
	owner, oper, viewer string // secrets
	ownerID, operID     string
}

// opOption adjusts an operator env's console config before the console is built.
type opOption func(c *OperatorConfig)

func newOpEnv(t *testing.T, opts ...opOption) *opEnv {
	t.Helper()
	st := testkit.SQLite(t)
	cat := catalog.Demo()
	// The demo tenant has webhooks on; no engine runs, so a redelivery stays pending.
	if tn, ok := cat.Tenant("demo"); ok {
		tn.WebhooksSetting = catalog.Webhooks{Enabled: true, MaxEndpoints: 3}
	}
	c := testkit.NewClock(time.Now().UTC())
	hooks := &webhook.Service{Store: st, Catalogs: catalog.Static(cat), Now: c.Now}
	svc := admin.New(admin.Config{Store: st, Catalog: func() *catalog.Catalog { return cat }, Now: c.Now, Webhooks: hooks})
	cfg := OperatorConfig{Common: Common{Sessions: st, Now: c.Now}, Admin: svc}
	for _, o := range opts {
		o(&cfg)
	}
	op, err := NewOperator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(op)
	t.Cleanup(ts.Close)
	e := &opEnv{st: st, svc: svc, clock: c, ts: ts}
	cli := admin.CLIActor("tester")
	for _, tok := range []struct {
		role   admin.Role
		secret *string
		id     *string
	}{{admin.RoleOwner, &e.owner, &e.ownerID}, {admin.RoleOperator, &e.oper, &e.operID}, {admin.RoleViewer, &e.viewer, nil}} {
		made, err := svc.CreateToken(context.Background(), cli, admin.TokenInput{Name: string(tok.role) + "-token", Role: string(tok.role)})
		if err != nil {
			t.Fatal(err)
		}
		*tok.secret = made.Secret
		if tok.id != nil {
			*tok.id = made.ID
		}
	}
	return e
}

// browser is a cookie-keeping client that does not follow redirects, like a person's
// browser seen one request at a time. It sends the Origin a browser would on a form post.
type browser struct {
	t      *testing.T
	base   string
	client *http.Client
	// host and origin, when set, are the Host header the requests name and the Origin its
	// forms come from (a tenant's address reached on loopback).
	host, origin string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, base: base, client: &http.Client{Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status int
	header http.Header
	body   string
}

func (b *browser) get(path string) page {
	b.t.Helper()
	return b.do(http.MethodGet, path, nil)
}

func (b *browser) post(path string, form url.Values) page {
	b.t.Helper()
	return b.do(http.MethodPost, path, form)
}

func (b *browser) do(method, path string, form url.Values) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.base+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.base)
		if b.origin != "" {
			req.Header.Set("Origin", b.origin)
		}
	}
	if b.host != "" {
		req.Host = b.host
	}
	res, err := b.client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, header: res.Header, body: string(raw)}
}

// signIn signs in with secret and fails the test unless it worked.
func (b *browser) signIn(secret string) {
	b.t.Helper()
	p := b.post("/console/signin", url.Values{"secret": {secret}, "next": {"/console/"}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/" {
		b.t.Fatalf("sign in: %d %s\n%s", p.status, p.header.Get("Location"), p.body)
	}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the form token from a page.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	p := b.get(path)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("no csrf field on %s (%d):\n%s", path, p.status, p.body)
	}
	return m[1]
}

// tenantEnv is a tenant console on a fresh SQLite store with the demo catalog and one key of
// the demo tenant with 100.00 of credit. Tasks are accepted by the real video service; no job
// runs them (tests that need a finished task mark it in the store, or run under Main in
// cmd/mediagen).
type tenantEnv struct {
	st      store.Store
	svc     *admin.Service
	cat     *catalog.Catalog
	videos  *video.Service
	con     *Tenant
	clock   *testkit.Clock
	ts      *httptest.Server
	key     string // the key's secret
	keyID   string
	assets  *asset.Service   // set by withAssets
	hooks   *webhook.Service // set by withWebhooks
	hookURL string           // a receiver the test button reaches (withWebhooks)
}

// tenantOption adjusts a tenant env's console config before the console is built.
type tenantOption func(t *testing.T, e *tenantEnv, c *TenantConfig)

func newTenantEnv(t *testing.T, opts ...tenantOption) *tenantEnv {
	t.Helper()
	st := testkit.SQLite(t)
	cat := catalog.Demo()
	c := testkit.NewClock(time.Now().UTC())
	svc := admin.New(admin.Config{Store: st, Catalog: func() *catalog.Catalog { return cat }, Now: c.Now})
	videos := &video.Service{Store: st, Now: c.Now}
	e := &tenantEnv{st: st, svc: svc, cat: cat, videos: videos, clock: c}
	cfg := TenantConfig{Common: Common{Sessions: st, Now: c.Now}, Store: st, Catalogs: catalog.Static(cat), Videos: videos}
	for _, o := range opts {
		o(t, e, &cfg)
	}
	con, err := NewTenant(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(con)
	t.Cleanup(ts.Close)
	made, err := svc.CreateKey(context.Background(), admin.CLIActor("tester"), admin.KeyInput{Tenant: "demo", Name: "console test", Credit: 100_000_000})
	if err != nil {
		t.Fatal(err)
	}
	e.con, e.ts, e.key, e.keyID = con, ts, made.Secret, made.ID
	return e
}

// with is a copy of v with the given name/value pairs set.
func with(v url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}
