package main

import (
	"strings"
	"testing"
)

// Both consoles in headless Chromium: the sign-in page takes the key or token typed into
// #secret and submitted with Enter, the home page shows who is signed in, the session lives in
// an HttpOnly cookie only (nothing in document.cookie, localStorage or sessionStorage, never in
// a URL), Sign out ends it, and no page breaks the Content-Security-Policy.
func TestConsoleSignInAndOutInChromium(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	e := startConsoleMain(t)
	c := newChrome(t)
	for _, tc := range []struct {
		name, base, secret, cookie string
		phone                      bool
		home                       []string // text the home page shows
	}{
		{name: "tenant", base: e.TenantURL, secret: e.DemoKey, cookie: "mediagen_session", phone: true,
			home: []string{e.DemoKeyID, "Sign out"}},
		{name: "operator", base: e.OperatorURL, secret: e.OwnerToken, cookie: "mediagen_admin_session",
			home: []string{e.OwnerName, "owner", "Sign out"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer c.use(t)()
			if tc.phone {
				c.Phone()
			} else {
				c.Desktop()
			}
			// Signed out, the console sends the browser to sign in.
			c.open(tc.base, "/console/")
			if p := c.path(); p != "/console/signin" {
				t.Fatalf("/console/ signed out is at %s, want the sign-in page", p)
			}
			c.screenshot(tc.name + "-signin")

			signIn(c.ctx, tc.base, tc.secret)
			txt := c.text()
			for _, want := range tc.home {
				if !strings.Contains(txt, want) {
					t.Errorf("home page lacks %q:\n%s", want, txt)
				}
			}
			screenshot(c.ctx, tc.name+"-home")
			if tc.phone {
				c.Desktop()
			} else {
				c.Phone()
			}
			c.screenshot(tc.name + "-home-other-size")

			// The session is an HttpOnly cookie, invisible to scripts; nothing is kept in storage.
			var session bool
			for _, ck := range c.cookies(tc.base + "/console/") {
				if ck.Name == tc.cookie {
					session = true
					if !ck.HTTPOnly || ck.SameSite != "Strict" || ck.Path != "/console/" {
						t.Errorf("session cookie: HttpOnly %v, SameSite %q, Path %q", ck.HTTPOnly, ck.SameSite, ck.Path)
					}
				}
			}
			if !session {
				t.Fatalf("no %s cookie after sign-in", tc.cookie)
			}
			if jar := eval[string](c, `document.cookie`); strings.Contains(jar, tc.cookie) {
				t.Errorf("document.cookie shows the session: %q", jar)
			}
			if n := eval[int](c, `localStorage.length + sessionStorage.length`); n != 0 {
				t.Errorf("%d items in web storage", n)
			}
			if eval[bool](c, `document.documentElement.outerHTML.includes(`+jsString(tc.secret)+`)`) {
				t.Error("the page shows the secret")
			}

			c.signOut()
			if !eval[bool](c, `document.getElementById("secret") !== null`) {
				t.Errorf("sign-out did not land on the sign-in form:\n%s", c.text())
			}
			c.open(tc.base, "/console/")
			if p := c.path(); p != "/console/signin" {
				t.Errorf("/console/ after sign-out is at %s, want the sign-in page", p)
			}

			for _, u := range c.requested() {
				if strings.Contains(u, tc.secret) {
					t.Errorf("a URL carried the secret: %s", u)
				}
			}
			if v := c.cspViolations(); len(v) > 0 {
				t.Errorf("Content-Security-Policy violations:\n%s", strings.Join(v, "\n"))
			}
			if x := c.exceptions(); len(x) > 0 {
				t.Errorf("script errors:\n%s", strings.Join(x, "\n"))
			}
		})
	}
	t.Logf("screenshots in %s", c.shotsDir())
}

// jsString quotes s as a JavaScript string literal (for the ASCII secrets it is used with).
func jsString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}
