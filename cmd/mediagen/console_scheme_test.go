package main

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
)

// TestConsoleCookiesAreSecureOnlyWhereTheBrowserUsedHTTPS: with an https --public-url and the
// admin listener on a plain-HTTP address (docs/deploy.md's layout), an operator signing in
// over plain HTTP gets a cookie the browser keeps (not Secure) and stays signed in; the same
// listener behind a trusted TLS proxy (X-Forwarded-Proto: https) sets a Secure one; the tenant
// console addressed by the https public URL's host sets a Secure one, and by another address
// over plain HTTP not.
func TestConsoleCookiesAreSecureOnlyWhereTheBrowserUsedHTTPS(t *testing.T) {
	t.Parallel()
	c := startConsoleMain(t, "--public-url", "https://api.example.test", "--trusted-proxies", "127.0.0.1")
	tenantHost := strings.TrimPrefix(c.TenantURL, "http://")
	for _, tc := range []struct {
		name, base, secret, host, xfp, origin string
		wantSecure                            bool
	}{
		{"operator console over plain HTTP", c.OperatorURL, c.OwnerToken, "", "", c.OperatorURL, false},
		{"operator console behind a TLS proxy", c.OperatorURL, c.OwnerToken, "ops.example.test", "https", "https://ops.example.test", true},
		{"tenant console at the https public URL", c.TenantURL, c.DemoKey, "api.example.test", "", "https://api.example.test", true},
		{"tenant console over plain HTTP at another address", c.TenantURL, c.DemoKey, tenantHost, "", c.TenantURL, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jar, _ := cookiejar.New(nil)
			client := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			send := func(req *http.Request) *http.Response {
				t.Helper()
				if tc.host != "" {
					req.Host = tc.host
				}
				if tc.xfp != "" {
					req.Header.Set("X-Forwarded-Proto", tc.xfp)
				}
				res, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				res.Body.Close()
				return res
			}
			req, _ := http.NewRequest(http.MethodPost, tc.base+"/console/signin",
				strings.NewReader(url.Values{"secret": {tc.secret}, "next": {"/console/"}}.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Origin", tc.origin)
			res := send(req)
			cookies := res.Cookies()
			if res.StatusCode != http.StatusSeeOther || len(cookies) != 1 {
				t.Fatalf("sign in: %d, cookies %q", res.StatusCode, res.Header.Values("Set-Cookie"))
			}
			if cookies[0].Secure != tc.wantSecure {
				t.Fatalf("cookie %q: Secure %v, want %v", res.Header.Get("Set-Cookie"), cookies[0].Secure, tc.wantSecure)
			}
			if tc.wantSecure {
				return // the jar would not send a Secure cookie over this test's plain HTTP
			}
			// The browser sends the cookie back: the operator stays signed in.
			get, _ := http.NewRequest(http.MethodGet, tc.base+"/console/", nil)
			if res := send(get); res.StatusCode != http.StatusOK {
				t.Errorf("the first page after sign-in: %d (%s), want 200", res.StatusCode, res.Header.Get("Location"))
			}
		})
	}
}
