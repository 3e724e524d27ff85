package httpapi

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/go-json-experiment/json"
	dto "github.com/prometheus/client_model/go"

	"mediagen/internal/catalog"
)

// Tenant acme's addresses in addressCatalog; limited has none.
const (
	acmeAddress  = "https://acme.media.example.com"
	acmeAddress2 = "http://acme.localhost:8080"
)

// addressCatalog is testdata/catalog.yaml with two addresses for acme.
func addressCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	src, err := os.ReadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(src), "  - id: acme\n", "  - id: acme\n    addresses: ["+acmeAddress+", '"+acmeAddress2+"']\n", 1)
	c, err := catalog.Parse("catalog.yaml", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// On a tenant's address another tenant's key is an unknown key: the same status, body and
// metric series, and nothing written. On the service's own address every tenant's key works.
func TestTenantAddressRefusesAnotherTenantsKeyAsUnknown(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			e := newTestEnvOn(t, driver, addressCatalog(t), nil, DefaultMaxBodyBytes)
			acme, _ := e.newKey("acme", startCredit, false)
			limited, limitedKey := e.newKey("limited", startCredit, false)
			const unknown = "mg_0123456789abcdefghijklmnopqrstuv"
			on := func(host, key, method, path, body string) response {
				h := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
				if host != "" {
					h["Host"] = host
				}
				return e.doHost(method, path, h, body)
			}
			unknownAnswer := on("acme.media.example.com", unknown, "GET", "/v1/billing/balance", "")
			checkEnvelope(t, unknownAnswer, 401, "authentication_error", "invalid_api_key")
			for _, host := range []string{"acme.media.example.com", "ACME.media.example.com:443", "acme.localhost:8080"} {
				r := on(host, limited, "GET", "/v1/billing/balance", "")
				if r.status != unknownAnswer.status || !bytes.Equal(r.body, unknownAnswer.body) {
					t.Errorf("Host %s, limited's key: %d %s; want exactly the unknown key's %d %s", host, r.status, r.body, unknownAnswer.status, unknownAnswer.body)
				}
				if r := on(host, acme, "GET", "/v1/billing/balance", ""); r.status != 200 {
					t.Errorf("Host %s, acme's own key: %d %s", host, r.status, r.body)
				}
			}
			// A create with the other tenant's key writes nothing: no task, no reservation.
			r := on("acme.media.example.com", limited, "POST", "/v1/videos", `{"model":"lim-video","prompt":"a paper boat","metadata":{"duration":5,"resolution":"720p"}}`)
			checkEnvelope(t, r, 401, "authentication_error", "invalid_api_key")
			if b, err := e.store.Balance(t.Context(), limitedKey.ID); err != nil || b.Reserved != 0 || b.Available != startCredit {
				t.Errorf("limited's balance after a refused create: %+v, %v", b, err)
			}
			// The same create on the service's address is accepted: the refusal was the host's.
			if r := on("", limited, "POST", "/v1/videos", `{"model":"lim-video","prompt":"a paper boat","metadata":{"duration":5,"resolution":"720p"}}`); r.status != 202 {
				t.Errorf("the create on the service's address: %d %s", r.status, r.body)
			}
			var m dto.Metric
			if err := e.srv.metrics.requests.WithLabelValues("POST /v1/videos", "POST", "401").Write(&m); err != nil {
				t.Fatal(err)
			}
			if n := m.GetCounter().GetValue(); n != 1 {
				t.Errorf("requests_total{POST /v1/videos, 401} = %v, want 1 (the refusal is counted as an unknown key is)", n)
			}
			// The service's own address serves every tenant.
			for _, key := range []string{acme, limited} {
				if r := on("", key, "GET", "/v1/billing/balance", ""); r.status != 200 {
					t.Errorf("service address: %d %s", r.status, r.body)
				}
			}
		})
	}
}

// Links in answers are on the tenant's address: the one the request came in on, else the
// first; a tenant without addresses keeps the service's. A link works on every address.
func TestTenantAddressLinksUseTheRequestsAddressElseTheFirst(t *testing.T) {
	t.Parallel()
	e := newAssetEnvWith(t, "sqlite", addressCatalog(t))
	png := testPNG(t, 16, 16)
	src := e.write("a.png", png)
	call := func(host, key, path, body string) map[string]any {
		t.Helper()
		h := map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}
		if host != "" {
			h["Host"] = host
		}
		r := e.doHost("POST", path, h, body)
		if r.status != 200 && r.status != 202 {
			t.Fatalf("%s on %q: %d %s", path, host, r.status, r.body)
		}
		var m map[string]any
		if err := json.Unmarshal(r.body, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	gid := call("", e.acme, vPrefix+"/asset-groups/create", `{"Name":"g"}`)["Id"].(string)
	id := call("", e.acme, vPrefix+"/assets/create", `{"GroupId":"`+gid+`","URL":"`+src+`","AssetType":"Image"}`)["Id"].(string)
	e.waitAsset(e.acme, vPrefix, id)
	for host, base := range map[string]string{
		"acme.localhost:8080":    acmeAddress2,
		"acme.media.example.com": acmeAddress,
		"":                       acmeAddress, // the service's own address: the first
	} {
		a := call(host, e.acme, vPrefix+"/assets/get", `{"Id":"`+id+`"}`)
		link, _ := a["URL"].(string)
		if !strings.HasPrefix(link, base+"/v1/files/assets/") {
			t.Errorf("asset link on Host %q: %q, want it under %s", host, link, base)
		}
		// The link serves the file on that address (here: the test server with its Host).
		path := strings.TrimPrefix(link, base)
		r := e.doHost("GET", path, map[string]string{"Host": strings.TrimPrefix(strings.TrimPrefix(base, "https://"), "http://")}, "")
		if r.status != 200 || !bytes.Equal(r.body, png) {
			t.Errorf("link on Host %q: %d, %d bytes", host, r.status, len(r.body))
		}
		vs := call(host, e.acme, hPrefix+"/validate-session/create", `{}`)
		if h5, _ := vs["H5Link"].(string); !strings.HasPrefix(h5, base+"/verify/") {
			t.Errorf("H5Link on Host %q: %q, want it under %s", host, h5, base)
		}
	}
	// limited has no addresses: the service's own, whatever the host.
	vs := call("", e.limited, hPrefix+"/validate-session/create", `{}`)
	if h5, _ := vs["H5Link"].(string); !strings.HasPrefix(h5, testPublicURL+"/verify/") {
		t.Errorf("H5Link of a tenant without addresses: %q", h5)
	}
}

// doHost is do with the Host header of header["Host"], when set, sent as the request's Host.
func (e *testEnv) doHost(method, path string, header map[string]string, body string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, b}
}
