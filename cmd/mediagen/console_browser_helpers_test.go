package main

import (
	"context"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/keys"
)

// The console's browser tests: Main serving the tenant console on its public address and the
// operator console on --admin-listen, driven by headless Chromium (chromium_test.go).
//
//	go test ./cmd/mediagen/ -run 'TestConsole.*InChromium' -count=1 [-console-shots docs/console]
//
// Screenshots go to -console-shots (or $MEDIAGEN_CONSOLE_SHOTS) when set, else to a temporary
// directory of the test.

var consoleShots = flag.String("console-shots", "", "directory the console browser tests write their screenshots to (default $MEDIAGEN_CONSOLE_SHOTS, else a temporary directory)")

// consoleMain is a running Main with both consoles and a credential for each.
type consoleMain struct {
	m *Main
	// TenantURL serves the tenant console (the public address), OperatorURL the operator
	// console (the admin listener).
	TenantURL, OperatorURL string
	// DemoKey is the demo tenant's key secret (DemoKeyID its id); OwnerToken an owner admin
	// token's secret, named OwnerName.
	DemoKey, DemoKeyID    string
	OwnerToken, OwnerName string
	// Admin is an admin.Service on Main's database, for setting up data.
	Admin *opadmin.Service
}

// startConsoleMain starts Main with --admin-listen on 127.0.0.1:0, mints an owner admin token
// and finds the demo key.
func startConsoleMain(t *testing.T, extra ...string) *consoleMain {
	t.Helper()
	args := append([]string{"--admin-listen", "127.0.0.1:0", "--log-level", "warn"}, extra...)
	m, _ := startMain(t, t.TempDir(), args...)
	if m.DemoKey == "" || m.AdminURL() == "" {
		t.Fatalf("no demo key (%q) or no admin listener (%q)", m.DemoKey, m.AdminURL())
	}
	ctx := context.Background()
	svc := opadmin.New(opadmin.Config{Store: m.db, Catalog: m.catalogs.Current})
	made, err := svc.CreateToken(ctx, opadmin.CLIActor("console-test"), opadmin.TokenInput{Name: "console-owner", Role: string(opadmin.RoleOwner)})
	if err != nil {
		t.Fatal(err)
	}
	key, err := m.db.KeyByHash(ctx, keys.Hash(m.DemoKey))
	if err != nil {
		t.Fatal(err)
	}
	return &consoleMain{m: m, TenantURL: m.URL(), OperatorURL: m.AdminURL(), DemoKey: m.DemoKey, DemoKeyID: key.ID,
		OwnerToken: made.Secret, OwnerName: "console-owner", Admin: svc}
}

// newChrome starts a headless Chromium for a console test, at the desktop size (1440x900);
// c.Phone() switches to 390x844, c.Desktop() back. c.ctx is its chromedp context: use it with
// chromedp.Run / chromedp.Do for anything the helpers below lack, and with signIn and
// screenshot. Subtests sharing the browser call defer c.use(t)().
func newChrome(t *testing.T) *chrome {
	t.Helper()
	c := launchChrome(t)
	c.shotsDir()
	c.Desktop()
	return c
}

// signIn and screenshot are c.signIn and c.screenshot for the chrome of ctx (newChrome's c.ctx).
func signIn(ctx context.Context, baseURL, secret string) {
	c := chromeOf(ctx)
	c.t.Helper()
	c.signIn(baseURL, secret)
}

func screenshot(ctx context.Context, name string) {
	c := chromeOf(ctx)
	c.t.Helper()
	c.screenshot(name)
}

// shotsDir is where screenshot writes: -console-shots, $MEDIAGEN_CONSOLE_SHOTS, or a
// temporary directory of the test.
func (c *chrome) shotsDir() string {
	c.t.Helper()
	if c.shots != "" {
		return c.shots
	}
	dir := *consoleShots
	if dir == "" {
		dir = os.Getenv("MEDIAGEN_CONSOLE_SHOTS")
	}
	if dir == "" {
		dir = c.t.TempDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		c.t.Fatal(err)
	}
	c.shots = dir
	return dir
}

// screenshot saves the viewport as <shots dir>/<name>.png.
func (c *chrome) screenshot(name string) {
	c.t.Helper()
	if !strings.HasSuffix(name, ".png") {
		name += ".png"
	}
	c.shoot(filepath.Join(c.shotsDir(), name))
}

// open loads baseURL+path and waits for it (and any redirect) to load.
func (c *chrome) open(baseURL, path string) {
	c.t.Helper()
	c.run("open "+path, chromedp.Navigate(baseURL+path))
}

// loadAfter runs step (a click or a key press that submits a form) and waits for the page it
// leads to to load.
func (c *chrome) loadAfter(what string, step chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if _, err := chromedp.Run(ctx, chromedp.WaitEvent(page.LoadEventFired, nil, step)); err != nil {
		c.t.Fatalf("%s: %v\npage: %s", what, err, c.pageText())
	}
}

// signIn signs in on the console at baseURL like a person: open the sign-in page, type the
// key or token into #secret and press Enter. It fails the test unless the console's home page
// (/console/) loads.
func (c *chrome) signIn(baseURL, secret string) {
	c.t.Helper()
	c.open(baseURL, "/console/signin")
	c.run("sign-in form", chromedp.WaitVisible(chromedp.ID("secret")), chromedp.SendKeys(chromedp.ID("secret"), secret))
	c.loadAfter("submit the sign-in form", chromedp.SendKeys(chromedp.ID("secret"), kb.Enter))
	if p := c.path(); p != "/console/" {
		c.t.Fatalf("after sign-in at %s, want /console/\npage: %s", p, c.pageText())
	}
}

// signOut presses the Sign out button and waits for the sign-in page.
func (c *chrome) signOut() {
	c.t.Helper()
	c.loadAfter("sign out", chromedp.Click(chromedp.CSS(`form[action="/console/signout"] button[type=submit]`)))
	if p := c.path(); p != "/console/signin" {
		c.t.Fatalf("after sign-out at %s, want /console/signin\npage: %s", p, c.pageText())
	}
}

// location is the page's address; path its path.
func (c *chrome) location() string {
	c.t.Helper()
	return eval[string](c, `location.href`)
}

func (c *chrome) path() string {
	c.t.Helper()
	u, err := url.Parse(c.location())
	if err != nil {
		c.t.Fatal(err)
	}
	return u.Path
}

// text is the page's visible text.
func (c *chrome) text() string {
	c.t.Helper()
	return eval[string](c, `document.body.innerText`)
}

// cookies are the browser's cookies for pageURL, as the network stack has them (HttpOnly ones
// included).
func (c *chrome) cookies(pageURL string) []*network.Cookie {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	res, err := chromedp.Call(ctx, network.GetCookies, network.GetCookiesParams{URLs: []string{pageURL}})
	if err != nil {
		c.t.Fatal(err)
	}
	return res.Cookies
}

// requested are the URLs of every request the pages made and every document they showed.
func (c *chrome) requested() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.urls...)
}
