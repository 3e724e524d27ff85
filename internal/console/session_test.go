package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"mediagen/internal/admin"
)

func TestPagesNeedASessionAndSignInMakesOne(t *testing.T) {
	e := newOpEnv(t)
	b := newBrowser(t, e.ts.URL)
	p := b.get("/console/keys?tenant=demo")
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/signin?next="+url.QueryEscape("/console/keys?tenant=demo") {
		t.Fatalf("page without a session: %d %q; want a redirect to sign in", p.status, p.header.Get("Location"))
	}
	p = b.post("/console/signout", url.Values{})
	if p.status != http.StatusUnauthorized {
		t.Errorf("post without a session: %d; want 401", p.status)
	}
	p = b.get("/console/signin")
	if p.status != 200 || !strings.Contains(p.body, `type="password"`) {
		t.Fatalf("sign-in page: %d\n%s", p.status, p.body)
	}
	csp := p.header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") || p.header.Get("X-Frame-Options") != "DENY" {
		t.Errorf("headers: CSP %q, X-Frame-Options %q", csp, p.header.Get("X-Frame-Options"))
	}

	p = b.post("/console/signin", url.Values{"secret": {"mga_notarealtoken"}})
	if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "not valid") || p.header.Get("Set-Cookie") != "" {
		t.Fatalf("bad token: %d, cookie %q\n%s", p.status, p.header.Get("Set-Cookie"), p.body)
	}
	if strings.Contains(p.body, "mga_notarealtoken") {
		t.Error("the sign-in page echoed the typed token")
	}

	res := b.post("/console/signin", url.Values{"secret": {e.owner}, "next": {"/console/keys?tenant=demo"}})
	if res.status != http.StatusSeeOther || res.header.Get("Location") != "/console/keys?tenant=demo" {
		t.Fatalf("sign in: %d %q", res.status, res.header.Get("Location"))
	}
	c := res.header.Get("Set-Cookie")
	for _, want := range []string{"mediagen_admin_session=", "Path=/console/", "HttpOnly", "SameSite=Strict"} {
		if !strings.Contains(c, want) {
			t.Errorf("cookie %q lacks %q", c, want)
		}
	}
	if strings.Contains(c, e.owner) || strings.Contains(c, "Secure") {
		t.Errorf("cookie %q: holds the token, or is Secure over http", c)
	}
	if p := b.get("/console/"); p.status != 200 || !strings.Contains(p.body, "owner-token") {
		t.Fatalf("overview after sign-in: %d\n%s", p.status, p.body)
	}
}

func TestNextStaysInsideTheConsole(t *testing.T) {
	for _, next := range []string{"https://evil.example/", "//evil.example/console/", "/console/\r\nSet-Cookie: x", "/v1/videos", "/console/signin"} {
		if got := safeNext(next); got != "/console/" {
			t.Errorf("safeNext(%q) = %q; want /console/", next, got)
		}
	}
	if got := safeNext("/console/tasks?status=failed"); got != "/console/tasks?status=failed" {
		t.Errorf("safeNext kept %q", got)
	}
}

func TestFormsNeedTheSessionsTokenAndThisOrigin(t *testing.T) {
	e := newOpEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.owner)
	token := b.csrf("/console/")
	if p := b.post("/console/signout", url.Values{}); p.status != http.StatusForbidden || !strings.Contains(p.body, "security token") {
		t.Errorf("post without a token: %d\n%s", p.status, p.body)
	}
	if p := b.post("/console/signout", url.Values{"csrf": {token + "x"}}); p.status != http.StatusForbidden {
		t.Errorf("post with a wrong token: %d", p.status)
	}
	// A forged post from another site carries the right cookie (a lax browser) but the
	// browser says where it came from.
	req, _ := http.NewRequest(http.MethodPost, e.ts.URL+"/console/signout", strings.NewReader(url.Values{"csrf": {token}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	res, err := b.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Errorf("cross-origin post: %d; want 403", res.StatusCode)
	}
	if p := b.get("/console/"); p.status != 200 {
		t.Fatalf("the refused posts ended the session: %d", p.status)
	}
}

func TestSignOutEndsTheSessionEvenForACopiedCookie(t *testing.T) {
	e := newOpEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.oper)
	u, _ := url.Parse(e.ts.URL + "/console/")
	copied := newBrowser(t, e.ts.URL)
	copied.client.Jar.SetCookies(u, b.client.Jar.Cookies(u))
	if p := copied.get("/console/"); p.status != 200 {
		t.Fatalf("copied cookie before sign-out: %d", p.status)
	}
	p := b.post("/console/signout", url.Values{"csrf": {b.csrf("/console/")}})
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/console/signin" {
		t.Fatalf("sign out: %d %q", p.status, p.header.Get("Location"))
	}
	for _, who := range []*browser{b, copied} {
		if p := who.get("/console/"); p.status != http.StatusSeeOther {
			t.Errorf("after sign-out: %d; want a redirect to sign in", p.status)
		}
	}
}

func TestSessionsExpireAndEndWithTheirToken(t *testing.T) {
	e := newOpEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.oper)
	e.clock.Advance(DefaultSessionTTL + time.Second)
	if p := b.get("/console/"); p.status != http.StatusSeeOther {
		t.Errorf("after the session's lifetime: %d; want a redirect to sign in", p.status)
	}
	b.signIn(e.oper)
	if _, err := e.svc.RevokeToken(context.Background(), admin.CLIActor("tester"), e.operID); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/console/"); p.status != http.StatusSeeOther {
		t.Errorf("after the token was revoked: %d; want a redirect to sign in", p.status)
	}
	if p := b.post("/console/signin", url.Values{"secret": {e.oper}}); p.status != http.StatusUnauthorized || !strings.Contains(p.body, "revoked") {
		t.Errorf("sign in with a revoked token: %d\n%s", p.status, p.body)
	}
}

func TestSignInAttemptsAreRateLimitedPerAddress(t *testing.T) {
	e := newOpEnv(t)
	b := newBrowser(t, e.ts.URL)
	var last page
	for range SignInBurst + 1 {
		last = b.post("/console/signin", url.Values{"secret": {"mga_guess"}})
	}
	if last.status != http.StatusTooManyRequests || last.header.Get("Retry-After") == "" {
		t.Fatalf("attempt %d: %d; want 429 with Retry-After", SignInBurst+1, last.status)
	}
	if p := b.post("/console/signin", url.Values{"secret": {e.owner}}); p.status != http.StatusTooManyRequests {
		t.Errorf("a right token inside the limit's window: %d; want 429 too", p.status)
	}
	e.clock.Advance(11 * time.Second)
	b.signIn(e.owner)
}

func TestUnknownConsolePathsAreThe404PageBehindASession(t *testing.T) {
	e := newOpEnv(t)
	b := newBrowser(t, e.ts.URL)
	if p := b.get("/console/nothing-here"); p.status != http.StatusSeeOther {
		t.Errorf("unknown path without a session: %d; want a redirect to sign in", p.status)
	}
	b.signIn(e.viewer)
	if p := b.get("/console/nothing-here"); p.status != http.StatusNotFound || !strings.Contains(p.body, "no console page") {
		t.Errorf("unknown path: %d\n%s", p.status, p.body)
	}
}

func TestTenantSignsInWithAnAPIKey(t *testing.T) {
	e := newTenantEnv(t)
	b := newBrowser(t, e.ts.URL)
	if p := b.post("/console/signin", url.Values{"secret": {"mg_" + strings.Repeat("a", 40)}}); p.status != http.StatusUnauthorized {
		t.Errorf("unknown key: %d", p.status)
	}
	res := b.post("/console/signin", url.Values{"secret": {e.key}})
	if res.status != http.StatusSeeOther || !strings.Contains(res.header.Get("Set-Cookie"), "mediagen_session=") {
		t.Fatalf("sign in: %d %q", res.status, res.header.Get("Set-Cookie"))
	}
	if p := b.get("/console/"); p.status != 200 || !strings.Contains(p.body, e.keyID) {
		t.Fatalf("home: %d\n%s", p.status, p.body)
	}
	if _, err := e.svc.RevokeKey(context.Background(), admin.CLIActor("tester"), e.keyID); err != nil {
		t.Fatal(err)
	}
	if p := b.get("/console/"); p.status != http.StatusSeeOther {
		t.Errorf("after the key was revoked: %d; want a redirect to sign in", p.status)
	}
}
