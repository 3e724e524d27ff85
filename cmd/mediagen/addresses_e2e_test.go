package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/catalog"
)

// addressesCatalog is reloadCatalog's tenant acme with the addresses line acme (none: ""),
// and a second tenant, beta, whose addresses line is beta.
func addressesCatalog(acme, beta string) string {
	c := reloadCatalog("up-fast", "2")
	c = strings.Replace(c, "    currency: USD\n", "    currency: USD\n"+acme, 1)
	return c + `  - id: beta
    name: Beta
    currency: USD
` + beta + `    aliases:
      - alias: beta-video
        product: native
        family: fast-2.0
        upstream: sandbox
        model: up-fast
    rates:
      native:
        beta-video: 2
`
}

// hostClient sends requests to a listener on loopback with a tenant's Host header.
type hostClient struct {
	t          *testing.T
	base, host string
	c          *http.Client
}

func (h hostClient) do(method, path, key, body string, header ...string) (int, []byte, http.Header) {
	h.t.Helper()
	req, err := http.NewRequest(method, h.base+path, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Host = h.host
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := h.c
	if c == nil {
		c = http.DefaultClient
	}
	res, err := c.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, b, res.Header
}

// A tenant's address, added by a live reload: on the API listener it takes only the tenant's
// keys (another's is an unknown key) and the task's links are on it and served there; on the
// service's own address both tenants work and acme's links name its address; the admin
// listener is the operator's whatever the Host and lists the address; a reload giving the
// host to a second tenant is refused and the address stays.
func TestTenantAddressAddedByReloadServesOnlyItsTenantOnBothListeners(t *testing.T) {
	t.Parallel()
	requireTools(t)
	dir := t.TempDir()
	path := filepath.Join(dir, "catalog.yaml")
	writeFile(t, path, addressesCatalog("", ""))
	data := filepath.Join(dir, "data")
	token := reAdminToken.FindString(adminAs(t, data, "root", "token", "create", "--name", "ops", "--role", "viewer"))
	m := startReloadMain(t, nil, data, path, "--sandbox-pace", "0", "--admin-listen", "127.0.0.1:0")
	acmeKey := reloadKey(t, data, path)
	betaKey := reKey.FindString(admin(t, data, "key", "create", "--tenant", "beta", "--unlimited", "--catalog", path))
	onAcme := hostClient{t: t, base: m.URL(), host: "acme.localhost"}
	onService := hostClient{t: t, base: m.URL(), host: strings.TrimPrefix(m.URL(), "http://")}
	if st, b, _ := onAcme.do("GET", "/v1/billing/balance", betaKey, ""); st != 200 {
		t.Fatalf("before the reload, any host takes beta's key: %d %s", st, b)
	}

	writeFile(t, path, addressesCatalog("    addresses: ['http://acme.localhost']\n", ""))
	if _, err := m.ReloadCatalog(context.Background(), triggerAPI); err != nil {
		t.Fatal(err)
	}
	unknownSt, unknownBody, _ := onAcme.do("GET", "/v1/billing/balance", "mg_"+strings.Repeat("a", 40), "")
	for _, path := range []string{"/v1/billing/balance", "/v1/videos"} {
		st, b, _ := onAcme.do("GET", path, betaKey, "")
		if st != 401 || st != unknownSt || string(b) != string(unknownBody) {
			t.Errorf("GET %s on acme's address with beta's key: %d %s; want the unknown key's %d %s", path, st, b, unknownSt, unknownBody)
		}
	}
	if st, b, _ := onService.do("GET", "/v1/billing/balance", betaKey, ""); st != 200 {
		t.Errorf("beta's key on the service's address: %d %s", st, b)
	}

	st, b, _ := onAcme.do("POST", "/v1/videos", acmeKey, reloadTaskBody)
	if st != 202 {
		t.Fatalf("create on acme's address: %d %s", st, b)
	}
	var created apiTask
	if err := json.Unmarshal(b, &created); err != nil {
		t.Fatal(err)
	}
	e := &e2e{t: t, m: m, key: acmeKey}
	if task := e.wait(created.ID); task.Status != "completed" {
		t.Fatalf("task: %+v", task)
	}
	for _, c := range []hostClient{onAcme, onService} {
		st, b, _ := c.do("GET", "/v1/videos/"+created.ID, acmeKey, "")
		var task apiTask
		if err := json.Unmarshal(b, &task); st != 200 || err != nil {
			t.Fatalf("GET on %s: %d %s", c.host, st, b)
		}
		link := task.Metadata.URL
		if !strings.HasPrefix(link, "http://acme.localhost/v1/files/") {
			t.Errorf("result link answered on %s: %q, want it on acme's address", c.host, link)
			continue
		}
		// Served on acme's address (loopback with its Host) and on the service's own.
		for _, on := range []hostClient{onAcme, onService} {
			if st, body, _ := on.do("GET", strings.TrimPrefix(link, "http://acme.localhost"), "", ""); st != 200 || len(body) == 0 {
				t.Errorf("link on %s: %d, %d bytes", on.host, st, len(body))
			}
		}
	}

	// The admin listener is the operator's whatever the Host, and shows the address.
	onAdmin := hostClient{t: t, base: m.AdminURL(), host: "acme.localhost"}
	if st, b, _ := onAdmin.do("GET", "/admin/v1/whoami", token, ""); st != 200 {
		t.Errorf("admin API with acme's Host: %d %s", st, b)
	}
	jar, _ := cookiejar.New(nil)
	onAdmin.c = &http.Client{Jar: jar}
	form := url.Values{"secret": {token}, "next": {"/console/tenants"}}.Encode()
	st, b, _ = onAdmin.do("POST", "/console/signin", "", form, "Content-Type", "application/x-www-form-urlencoded", "Origin", "http://acme.localhost")
	if st != 200 || !strings.Contains(string(b), `<code class="address">http://acme.localhost</code>`) {
		t.Errorf("operator console tenants page on the admin listener: %d, no acme address\n%s", st, b)
	}

	// A reload that gives the host to beta too is refused; the address stays acme's.
	writeFile(t, path, addressesCatalog("    addresses: ['http://acme.localhost']\n", "    addresses: ['http://ACME.localhost:8080']\n"))
	_, err := m.ReloadCatalog(context.Background(), triggerAPI)
	var p *catalog.Problems
	if !errors.As(err, &p) || !strings.Contains(err.Error(), `the host acme.localhost is already an address of tenant "acme"; a host belongs to one tenant`) {
		t.Errorf("reload giving acme's host to beta: %v", err)
	}
	if st, _, _ := onAcme.do("GET", "/v1/billing/balance", betaKey, ""); st != 401 {
		t.Errorf("after the refused reload, beta's key on acme's address: %d", st)
	}
}

// The service's own host cannot be a tenant's address: serve, reload and catalog check say
// which tenant lists it; another host, or another tenant's, is fine.
func TestPublicURLOnATenantsHostIsRefused(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Parse("c.yaml", []byte(addressesCatalog("    addresses: ['https://media.example.com']\n", "")))
	if err != nil {
		t.Fatal(err)
	}
	for publicURL, want := range map[string]string{
		"https://media.example.com":      `tenant "acme" lists an address on the host of --public-url (https://media.example.com)`,
		"http://MEDIA.example.com:8080/": `tenant "acme" lists an address on the host of --public-url`,
		"https://api.example.com":        "",
		"http://127.0.0.1:8080":          "",
	} {
		got := publicURLTaken(cat, publicURL)
		if (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("publicURLTaken(%q) = %q, want %q", publicURL, got, want)
		}
	}
}
