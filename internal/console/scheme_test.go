package console

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"mediagen/internal/netlimit"
)

// schemeCase is one sign-in as a browser would send it, seen by the console's listener.
type schemeCase struct {
	name       string
	publicURL  string // Common.PublicURL
	proxies    string // Common.Proxies
	peer       string // the connection's peer
	tls        bool   // TLS on this listener
	host       string // the Host header
	xfp        string // X-Forwarded-Proto
	origin     string // the form post's Origin
	wantStatus int
	wantSecure bool
}

// schemeCases hold for both consoles: the Secure flag follows the listener the browser
// reached (TLS, or a trusted proxy's X-Forwarded-Proto), never another listener's URL, and a
// post's Origin must name this scheme, host and port.
var schemeCases = []schemeCase{
	{name: "plain HTTP on a private address, the public URL https: a cookie the browser keeps",
		publicURL: "https://api.example.test", peer: "10.0.0.9:40000", host: "10.0.0.5:9091", origin: "http://10.0.0.5:9091",
		wantStatus: http.StatusSeeOther},
	{name: "plain HTTP, an https Origin: another origin",
		peer: "10.0.0.9:40000", host: "10.0.0.5:9091", origin: "https://10.0.0.5:9091", wantStatus: http.StatusForbidden},
	{name: "plain HTTP, an Origin on another port",
		peer: "10.0.0.9:40000", host: "10.0.0.5:9091", origin: "http://10.0.0.5:9092", wantStatus: http.StatusForbidden},
	{name: "plain HTTP on the default port, spelled both ways",
		peer: "10.0.0.9:40000", host: "Console.Example.test", origin: "http://console.example.test:80", wantStatus: http.StatusSeeOther},
	{name: "TLS on this listener: Secure",
		peer: "10.0.0.9:40000", tls: true, host: "console.example.test", origin: "https://console.example.test", wantStatus: http.StatusSeeOther, wantSecure: true},
	{name: "TLS on this listener, an http Origin: another origin",
		peer: "10.0.0.9:40000", tls: true, host: "console.example.test", origin: "http://console.example.test", wantStatus: http.StatusForbidden},
	{name: "a trusted proxy says https: Secure",
		proxies: "127.0.0.0/8", peer: "127.0.0.1:40000", host: "ops.example.test", xfp: "https", origin: "https://ops.example.test",
		wantStatus: http.StatusSeeOther, wantSecure: true},
	{name: "a trusted proxy says https, an http Origin: another origin",
		proxies: "127.0.0.0/8", peer: "127.0.0.1:40000", host: "ops.example.test", xfp: "https", origin: "http://ops.example.test",
		wantStatus: http.StatusForbidden},
	{name: "a trusted proxy says http, though the public URL's host is https",
		publicURL: "https://ops.example.test", proxies: "127.0.0.0/8", peer: "127.0.0.1:40000", host: "ops.example.test", xfp: "http",
		origin: "http://ops.example.test", wantStatus: http.StatusSeeOther},
	{name: "an untrusted peer's X-Forwarded-Proto is ignored",
		peer: "10.0.0.9:40000", host: "ops.example.test", xfp: "https", origin: "https://ops.example.test", wantStatus: http.StatusForbidden},
	{name: "addressed to the https public URL's host through an unlisted proxy: Secure",
		publicURL: "https://api.example.test", peer: "10.0.0.9:40000", host: "api.example.test", origin: "https://api.example.test",
		wantStatus: http.StatusSeeOther, wantSecure: true},
	{name: "a null Origin",
		peer: "10.0.0.9:40000", host: "10.0.0.5:9091", origin: "null", wantStatus: http.StatusForbidden},
}

func TestCookieSecureAndOriginFollowTheListenerNotThePublicURL(t *testing.T) {
	consoles := map[string]func(t *testing.T, c schemeCase) (http.Handler, string){
		"operator": func(t *testing.T, c schemeCase) (http.Handler, string) {
			e := newOpEnv(t, func(cfg *OperatorConfig) { cfg.PublicURL, cfg.Proxies = c.publicURL, mustProxies(t, c.proxies) })
			return e.ts.Config.Handler, e.owner
		},
		"tenant": func(t *testing.T, c schemeCase) (http.Handler, string) {
			e := newTenantEnv(t, func(t *testing.T, _ *tenantEnv, cfg *TenantConfig) {
				cfg.PublicURL, cfg.Proxies = c.publicURL, mustProxies(t, c.proxies)
			})
			return e.ts.Config.Handler, e.key
		},
	}
	for kind, build := range consoles {
		for _, c := range schemeCases {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				h, secret := build(t, c)
				req := httptest.NewRequest(http.MethodPost, "/console/signin",
					strings.NewReader(url.Values{"secret": {secret}, "next": {"/console/"}}.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.RemoteAddr, req.Host = c.peer, c.host
				req.Header.Set("Origin", c.origin)
				if c.xfp != "" {
					req.Header.Set("X-Forwarded-Proto", c.xfp)
				}
				if c.tls {
					req.TLS = &tls.ConnectionState{}
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != c.wantStatus {
					t.Fatalf("sign in: %d, want %d\n%s", rec.Code, c.wantStatus, rec.Body)
				}
				cookies := rec.Result().Cookies()
				if c.wantStatus != http.StatusSeeOther {
					if len(cookies) != 0 {
						t.Errorf("a refused sign-in set %v", cookies)
					}
					return
				}
				if len(cookies) != 1 || cookies[0].Secure != c.wantSecure {
					t.Fatalf("cookies %v; want one with Secure=%v", rec.Header().Values("Set-Cookie"), c.wantSecure)
				}
				// The session works on the next request of the same browser.
				next := httptest.NewRequest(http.MethodGet, "/console/", nil)
				next.RemoteAddr, next.Host, next.TLS = c.peer, c.host, req.TLS
				next.AddCookie(cookies[0])
				rec = httptest.NewRecorder()
				h.ServeHTTP(rec, next)
				if rec.Code != http.StatusOK {
					t.Errorf("the first page after sign-in: %d, want 200", rec.Code)
				}
			})
		}
	}
}

func mustProxies(t *testing.T, s string) netlimit.Proxies {
	t.Helper()
	ps, err := netlimit.ParseProxies(s)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func TestHostPortMakesTheDefaultPortExplicit(t *testing.T) {
	for _, c := range []struct{ host, scheme, want string }{
		{"Example.test", "https", "example.test:443"},
		{"example.test:8443", "https", "example.test:8443"},
		{"example.test", "http", "example.test:80"},
		{"[::1]", "http", "[::1]:80"},
		{"[::1]:9091", "http", "[::1]:9091"},
		{"example.test:", "https", "example.test:443"},
	} {
		if got := hostPort(c.host, c.scheme); got != c.want {
			t.Errorf("hostPort(%q, %q) = %q, want %q", c.host, c.scheme, got, c.want)
		}
	}
}
