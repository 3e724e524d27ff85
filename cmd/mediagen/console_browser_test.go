package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/testkit"
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

			signIn(c.ctx, tc.base, tc.secret)
			txt := c.text()
			for _, want := range tc.home {
				if !strings.Contains(txt, want) {
					t.Errorf("home page lacks %q:\n%s", want, txt)
				}
			}
			size, other := "desktop", "phone"
			if tc.phone {
				size, other = other, size
			}
			screenshot(c.ctx, tc.name+"-home-"+size)
			if tc.phone {
				c.Desktop()
			} else {
				c.Phone()
			}
			c.screenshot(tc.name + "-home-" + other)

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

// The people's flows through both consoles in one browser, in order, each step by clicks and
// typing (never a form posted from Go): an operator creates a key, credits it and rotates it;
// the tenant signs in with the rotated secret, previews and creates a task, watches it finish
// live and plays its video, sees the spend on the usage page, and sees a failed task's error;
// the operator finds the task; a viewer sees no write buttons; a form posted to the operator
// console from another origin writes nothing; signing out ends the session. Along the way it
// screenshots the main pages at both sizes (<console>-<page>-<phone|desktop>.png; make console-shots writes them to
// docs/console).
func TestConsoleFlowsInChromium(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	// A sandbox job takes 3 s, so the task page (refreshed every second) is seen running before
	// it completes.
	e := startConsoleMain(t, "--sandbox-pace", "3s")
	c := newChrome(t)
	f := &consoleFlow{e: e, c: c}
	steps := []struct {
		name string
		run  func(t *testing.T)
	}{
		{"operator creates, credits and rotates a key", f.operatorKeyLifecycle},
		{"tenant creates a task and watches it complete", f.tenantTask},
		{"tenant sees a failed task's error", f.tenantFailedTask},
		{"tenant sees the spend on the usage page and signs out", f.tenantUsage},
		{"operator finds the task", f.operatorTask},
		{"viewer sees no write buttons", f.viewer},
		{"a form posted from another origin writes nothing", f.forgedPost},
	}
	for _, s := range steps {
		ok := t.Run(s.name, func(t *testing.T) {
			defer c.use(t)()
			s.run(t)
		})
		if !ok {
			t.Fatalf("step %q failed; the later steps need it", s.name)
		}
	}
	if v := c.cspViolations(); len(v) > 0 {
		t.Errorf("Content-Security-Policy violations:\n%s", strings.Join(v, "\n"))
	}
	if x := c.exceptions(); len(x) > 0 {
		t.Errorf("script errors:\n%s", strings.Join(x, "\n"))
	}
	t.Logf("screenshots in %s", c.shotsDir())
}

// consoleFlow is the state TestConsoleFlowsInChromium's steps hand on.
type consoleFlow struct {
	e *consoleMain
	c *chrome
	// keyID is the key the operator made; secret its rotated secret.
	keyID, secret string
	// taskID is the tenant's completed task.
	taskID string
}

// shootBoth screenshots the page at both sizes as <name>-desktop.png and <name>-phone.png and
// leaves the browser at the desktop size. With show, the element it selects is scrolled into
// view first (at each size).
func (c *chrome) shootBoth(name string, show ...string) {
	c.t.Helper()
	for _, size := range []string{"desktop", "phone"} {
		if size == "phone" {
			c.Phone()
		} else {
			c.Desktop()
		}
		for _, sel := range show {
			eval[bool](c, `(el => { el.scrollIntoView({block: "center"}); return true })(document.querySelector(`+jsString(sel)+`))`)
		}
		c.screenshot(name + "-" + size)
	}
	c.Desktop()
	if len(show) > 0 {
		eval[bool](c, `(window.scrollTo(0, 0), true)`)
	}
}

// click clicks the element sel matches and waits for the page it leads to.
func (c *chrome) click(sel string) {
	c.t.Helper()
	c.loadAfter("click "+sel, chromedp.Click(chromedp.CSS(sel)))
}

// fill types text into the field with id, replacing what it held (as a person selecting it
// all and typing over it).
func (c *chrome) fill(id, text string) {
	c.t.Helper()
	c.run("focus #"+id, chromedp.Click(chromedp.ID(id)))
	eval[bool](c, `(el => { el.select(); return true })(document.getElementById(`+jsString(id)+`))`)
	c.run("type into #"+id, chromedp.SendKeys(chromedp.ID(id), text))
	if got := eval[string](c, `document.getElementById(`+jsString(id)+`).value`); got != text {
		c.t.Fatalf("#%s holds %q after typing %q", id, got, text)
	}
}

// choose picks the option of the select with id whose label starts with label, by typing it
// into the focused select (the browser's type-to-select).
func (c *chrome) choose(id, label, value string) {
	c.t.Helper()
	c.run("type into select #"+id, chromedp.SendKeys(chromedp.ID(id), label))
	if got := eval[string](c, `document.getElementById(`+jsString(id)+`).value`); got != value {
		c.t.Fatalf("select #%s holds %q after typing %q, want %q", id, got, label, value)
	}
}

// submitWithEnter presses Enter in the field with id and waits for the page the form leads to.
func (c *chrome) submitWithEnter(id string) {
	c.t.Helper()
	c.loadAfter("press Enter in #"+id, chromedp.SendKeys(chromedp.ID(id), kb.Enter))
}

// has reports whether an element matches the CSS selector sel.
func (c *chrome) has(sel string) bool {
	c.t.Helper()
	return eval[bool](c, `document.querySelector(`+jsString(sel)+`) !== null`)
}

// textOf is the text of the first element sel matches ("" when none does).
func (c *chrome) textOf(sel string) string {
	c.t.Helper()
	return eval[string](c, `(el => el ? el.textContent.trim() : "")(document.querySelector(`+jsString(sel)+`))`)
}

// mustShow fails unless the page's text holds every want.
func (c *chrome) mustShow(want ...string) {
	c.t.Helper()
	txt := c.text()
	for _, w := range want {
		if !strings.Contains(txt, w) {
			c.t.Errorf("%s lacks %q:\n%s", c.path(), w, txt)
		}
	}
}

func (f *consoleFlow) operatorKeyLifecycle(t *testing.T) {
	c, e := f.c, f.e
	c.Desktop()
	c.open(e.OperatorURL, "/console/signin")
	c.shootBoth("operator-signin")
	signIn(c.ctx, e.OperatorURL, e.OwnerToken)
	c.mustShow("Overview", e.OwnerName)
	c.click(`nav a[href="/console/tenants"]`)
	c.shootBoth("operator-tenants")

	// Keys → Create a key: the form, the confirmation, the secret shown once.
	c.click(`nav a[href="/console/keys"]`)
	c.click(`a[href="/console/keys/new"]`)
	c.choose("tenant", "demo", "demo")
	c.fill("name", "browser-made")
	c.fill("credit", "25.00")
	c.submitWithEnter("credit")
	c.mustShow(`Create a key named "browser-made" for tenant "demo".`, "Credit it 25.00 ")
	c.click(`form.card button[type=submit]`)
	secret := c.textOf("#secret")
	if !strings.HasPrefix(secret, "mg_") {
		t.Fatalf("the create page shows no secret in #secret:\n%s", c.text())
	}
	if !c.has(`button[data-copy="secret"]`) {
		t.Error("no Copy button for the secret")
	}
	c.shootBoth("operator-key-secret")
	c.click(`a[href^="/console/keys/key_"]`)
	f.keyID = strings.TrimPrefix(c.path(), "/console/keys/")
	if !strings.HasPrefix(f.keyID, "key_") {
		t.Fatalf("Open the key went to %s", c.path())
	}
	if got := c.textOf("#balance-available"); got != "25.00 USD" {
		t.Errorf("new key's available balance %q, want 25.00 USD", got)
	}
	if eval[bool](c, `document.documentElement.outerHTML.includes(`+jsString(secret)+`)`) {
		t.Error("the key page shows the secret")
	}

	// Credit it with a note: form, confirmation, done; the key page shows the new balance.
	c.click(`a[href$="/credit"]`)
	c.fill("amount", "12.50")
	c.fill("note", "browser top-up")
	c.submitWithEnter("note")
	c.mustShow("Credit 12.50 USD to key", "Note: browser top-up")
	c.click(`form.card button[type=submit]`)
	c.mustShow("Credited 12.50 USD")
	c.click(`a[href="/console/keys/` + f.keyID + `"]`)
	if got := c.textOf("#balance-available"); got != "37.50 USD" {
		t.Errorf("available balance after the credit %q, want 37.50 USD", got)
	}
	c.mustShow("browser top-up")
	c.shootBoth("operator-key")

	// Rotate: a new secret, shown once.
	c.click(`a[href$="/rotate"]`)
	c.click(`form.card button[type=submit]`)
	c.mustShow("Give key " + f.keyID + " a new secret")
	c.click(`form.card button[type=submit]`)
	f.secret = c.textOf("#secret")
	if !strings.HasPrefix(f.secret, "mg_") || f.secret == secret {
		t.Fatalf("rotation shows secret %q (the old one was %q)", f.secret, secret)
	}

	// The audit log lists the three writes, made through the console.
	c.click(`nav a[href="/console/audit"]`)
	for _, action := range []string{"key.create", "credit.create", "key.rotate"} {
		row := eval[string](c, `(() => { for (const tr of document.querySelectorAll("table.audit tbody tr")) {
			if (tr.querySelector("th code")?.textContent === `+jsString(action)+` && tr.textContent.includes(`+jsString(f.keyID)+`)) return tr.innerText }
			return "" })()`)
		if row == "" {
			t.Errorf("the audit log has no %s of %s:\n%s", action, f.keyID, c.text())
		} else if !strings.Contains(row, "console") || !strings.Contains(row, e.OwnerName) {
			t.Errorf("audit %s is not by %s via console: %s", action, e.OwnerName, row)
		}
	}
	c.shootBoth("operator-audit")
	c.click(`nav a[href="/console/keys"]`)
	c.shootBoth("operator-keys")
}

// createNative fills the native create form (alias, prompt, 720p, 4 s), previews the
// reservation, then presses Create task and lands on the new task's page; it returns the
// task id. shots names the create page's screenshots ("" takes none).
func (f *consoleFlow) createNative(t *testing.T, prompt, shots string) string {
	t.Helper()
	c := f.c
	c.click(`nav a[href="/console/create"]`)
	if c.has(`nav.tabs a[href="/console/create?route=native"]:not([aria-current])`) {
		c.click(`nav.tabs a[href="/console/create?route=native"]`)
	}
	c.choose("f-model", "demo-video-fast", "demo-video-fast")
	c.fill("f-prompt", prompt)
	c.fill("f-duration", "4")
	c.choose("f-resolution", "720p", "720p")
	c.click(`form.create-form button[type=submit]`)
	if !c.has("#reservation") {
		t.Fatalf("the preview shows no reservation:\n%s", c.text())
	}
	c.mustShow("Reservation: ", "Tokens reserved", "Available balance")
	if shots != "" {
		c.shootBoth(shots, "#reservation")
	}
	c.click(`form.create-form button.create`)
	id := strings.TrimPrefix(c.path(), "/console/tasks/")
	if id == c.path() || id == "" {
		t.Fatalf("Create task went to %s, not a task page:\n%s", c.path(), c.text())
	}
	return id
}

func (f *consoleFlow) tenantTask(t *testing.T) {
	c, e := f.c, f.e
	c.open(e.TenantURL, "/console/signin")
	c.shootBoth("tenant-signin")
	signIn(c.ctx, e.TenantURL, f.secret) // the rotated secret of the operator's new key
	c.mustShow(f.keyID)
	f.taskID = f.createNative(t, "a paper boat on a pond", "tenant-create-preview")

	// The page follows the task without navigating: a marker set on this document survives
	// every status change until the page reloads itself at the end.
	eval[bool](c, `(window.__flowMarker = "kept", true)`)
	type seen struct{ Status, Progress string }
	var states []seen
	deadline := time.Now().Add(90 * time.Second)
	shot := false
	for {
		st, err := tryEval[map[string]string](c, `(() => {
			const p = document.querySelector("[data-poll]");
			return {marker: window.__flowMarker || "", live: p ? "yes" : "",
				status: p ? p.querySelector("[data-field=status]").textContent : "",
				progress: p ? String(p.querySelector("progress[data-field=progress]").value) : ""} })()`)
		if err != nil || st["marker"] != "kept" {
			break // reloaded
		}
		if st["live"] != "yes" {
			t.Fatalf("the task page has no live progress while the task runs:\n%s", c.text())
		}
		if s := (seen{st["status"], st["progress"]}); len(states) == 0 || states[len(states)-1] != s {
			states = append(states, s)
		}
		if pct, _ := strconv.Atoi(st["progress"]); !shot && st["status"] == "in_progress" && pct >= 20 {
			c.shootBoth("tenant-task-running")
			shot = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("the task did not end within 90 s; states seen: %v\n%s", states, c.text())
		}
		time.Sleep(100 * time.Millisecond) // sampling the page, not waiting for an outcome
	}
	if len(states) < 2 {
		t.Errorf("the status shown never changed before the reload: %v", states)
	}
	t.Logf("live states before the reload: %v", states)
	c.waitAcrossReloads(`document.readyState === "complete" && !document.querySelector("[data-poll]")`, 30*time.Second)
	c.mustShow("completed", "Result")

	// The video loads and plays.
	c.waitFor(`(v => v && v.readyState >= 2)(document.querySelector("video.result"))`)
	eval[bool](c, `(v => { v.muted = true; v.play(); return true })(document.querySelector("video.result"))`)
	c.waitFor(`document.querySelector("video.result").currentTime > 0.2`)
	eval[bool](c, `(v => { v.pause(); v.currentTime = 0.5; return true })(document.querySelector("video.result"))`)
	c.shootBoth("tenant-task-completed", "video.result")

	c.click(`nav a[href="/console/"]`)
	if !c.has(`a[href="/console/tasks/` + f.taskID + `"]`) {
		t.Errorf("the tasks list does not link %s:\n%s", f.taskID, c.text())
	}
	c.click(`nav a[href="/console/assets"]`)
	c.shootBoth("tenant-assets")
}

func (f *consoleFlow) tenantFailedTask(t *testing.T) {
	c := f.c
	// The sandbox fails a generation whose prompt carries [sandbox:fail].
	id := f.createNative(t, "a storm at sea [sandbox:fail]", "")
	c.waitAcrossReloads(`document.readyState === "complete" && document.querySelector("section.card.error") !== null`, 60*time.Second)
	msg := c.textOf("section.card.error")
	t.Logf("task %s shows: %s", id, msg)
	if !strings.Contains(msg, "video_generation_failed") || !strings.Contains(msg, "Video generation failed.") {
		t.Errorf("the error section says %q", msg)
	}
	c.mustShow("failed")
	c.shootBoth("tenant-task-failed")
}

func (f *consoleFlow) tenantUsage(t *testing.T) {
	c := f.c
	c.click(`nav a[href="/console/"]`)
	c.shootBoth("tenant-tasks") // the completed and the failed task
	c.click(`nav a[href="/console/usage"]`)
	today := time.Now().UTC().Format(time.DateOnly)
	total := eval[string](c, `(() => { for (const tr of document.querySelectorAll("figure.chart table tbody tr")) {
		if (tr.closest("figure").querySelector("figcaption").id === "spend-title" && tr.querySelector("th").textContent.trim() === `+jsString(today)+`)
			return tr.querySelector("td:last-child").textContent.trim() }
		return "" })()`)
	if total == "" || strings.Trim(total, "0.,") == "" {
		t.Errorf("today's (%s) spend in the chart's table is %q:\n%s", today, total, c.text())
	}
	if got := c.textOf("#spend-total"); strings.HasPrefix(got, "0.00") {
		t.Errorf("spend total %q", got)
	}
	c.shootBoth("tenant-usage")

	// Signing out ends the session.
	c.signOut()
	c.open(f.e.TenantURL, "/console/usage")
	if p := c.path(); p != "/console/signin" {
		t.Errorf("the usage page after sign-out is at %s, want the sign-in page", p)
	}
}

func (f *consoleFlow) operatorTask(t *testing.T) {
	c, e := f.c, f.e
	c.open(e.OperatorURL, "/console/")
	if c.path() != "/console/" {
		t.Fatalf("the operator session ended: at %s", c.path())
	}
	c.shootBoth("operator-overview") // with the tenant's two settled tasks
	c.click(`nav a[href="/console/tasks"]`)
	if !c.has(`a[href="/console/tasks/` + f.taskID + `"]`) {
		t.Errorf("the task search does not list %s:\n%s", f.taskID, c.text())
	}
	c.shootBoth("operator-tasks")
	c.fill("q", f.taskID)
	c.submitWithEnter("q")
	if p := c.path(); p != "/console/tasks/"+f.taskID {
		t.Fatalf("opening %s went to %s", f.taskID, p)
	}
	c.mustShow(f.taskID, f.keyID, "completed")
	c.shootBoth("operator-task")
}

func (f *consoleFlow) viewer(t *testing.T) {
	c, e := f.c, f.e
	made, err := e.Admin.CreateToken(context.Background(), opadmin.CLIActor("console-test"), opadmin.TokenInput{Name: "console-viewer", Role: string(opadmin.RoleViewer)})
	if err != nil {
		t.Fatal(err)
	}
	c.signOut()
	signIn(c.ctx, e.OperatorURL, made.Secret)
	c.mustShow("console-viewer", "viewer")
	c.click(`nav a[href="/console/keys"]`)
	if c.has(`a[href="/console/keys/new"]`) || strings.Contains(c.text(), "Create a key") {
		t.Errorf("a viewer's keys page offers Create a key:\n%s", c.text())
	}
	c.click(`a[href="/console/keys/` + f.keyID + `"]`)
	for _, action := range []string{"credit", "debit", "update", "rotate", "revoke"} {
		if c.has(`a[href$="/` + action + `"]`) {
			t.Errorf("a viewer's key page links %s", action)
		}
	}
	if c.has(`main form[method=post]`) {
		t.Errorf("a viewer's key page has a form that posts")
	}
	// Typing the form's address is refused too.
	c.open(e.OperatorURL, "/console/keys/"+f.keyID+"/credit")
	if c.has("#amount") {
		t.Errorf("a viewer is shown the credit form")
	}
	c.signOut()
}

// forgedPost: signed in as an operator, the browser opens a page of another origin whose
// form posts a credit (with a made-up form id and CSRF token) to the operator console. The
// console must refuse it and nothing is written.
func (f *consoleFlow) forgedPost(t *testing.T) {
	c, e := f.c, f.e
	signIn(c.ctx, e.OperatorURL, e.OwnerToken)
	ctx := context.Background()
	owner := opadmin.CLIActor("console-test")
	before, err := e.Admin.Key(ctx, owner, f.keyID)
	if err != nil {
		t.Fatal(err)
	}
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><title>Win a prize</title>
<form method="post" action="%s/console/keys/%s/credit">
<input type="hidden" name="amount" value="999.00"><input type="hidden" name="note" value="forged">
<input type="hidden" name="confirm" value="yes"><input type="hidden" name="form_id" value="forged-form-1">
<input type="hidden" name="csrf" value="forged-token"><button type="submit">Claim</button></form>
<script>document.forms[0].submit()</script>`, e.OperatorURL, f.keyID)
	}))
	defer attacker.Close()
	c.run("open the other origin's page", chromedp.Navigate(attacker.URL+"/prize"))
	// The page submits itself: the tab goes through two documents, and a condition evaluated
	// in the first can lose its context mid-way (Chromium's "Cannot find context").
	c.waitAcrossReloads(`location.href.startsWith(`+jsString(e.OperatorURL)+`) && document.readyState === "complete"`, 30*time.Second)
	t.Logf("the forged post landed on %s: %q", c.location(), c.textOf("main"))
	// Refused: by the CSRF check (the session cookie is sent, 127.0.0.1 on another port being
	// the same site), or, were the cookie withheld, by sending the browser to sign in.
	if txt := c.textOf("main"); strings.Contains(txt, "Credited") || !(strings.Contains(txt, "csrf_failed") || c.path() == "/console/signin") {
		t.Errorf("the forged post was not refused:\n%s", txt)
	}

	after, err := e.Admin.Key(ctx, owner, f.keyID)
	if err != nil {
		t.Fatal(err)
	}
	if before.Balance == nil || after.Balance == nil || after.Balance.Available != before.Balance.Available {
		t.Errorf("the balance changed: before %+v, after %+v", before.Balance, after.Balance)
	}
	// The operator's own pages show the same: the balance kept, no forged credit audited.
	c.open(e.OperatorURL, "/console/keys/"+f.keyID)
	if c.path() != "/console/keys/"+f.keyID {
		t.Fatalf("the key page is at %s", c.path())
	}
	if strings.Contains(c.text(), "forged") {
		t.Errorf("the key page shows the forged credit:\n%s", c.text())
	}
	c.open(e.OperatorURL, "/console/audit?action=credit.create")
	if n := eval[int](c, `document.querySelectorAll("table.audit tbody tr[id]").length`); n != 1 {
		t.Errorf("%d credit.create entries in the audit log, want the 1 the operator made:\n%s", n, c.text())
	}
}

// tryEval is eval that returns its error (a page navigating away from the evaluation).
func tryEval[T any](c *chrome, expr string) (T, error) {
	ctx, cancel := context.WithTimeout(c.ctx, 10*time.Second)
	defer cancel()
	return chromedp.Run(ctx, chromedp.Evaluate[T](expr))
}

// waitAcrossReloads evaluates a JavaScript condition every 100 ms until it holds, for at most
// limit, on whatever document the tab shows (the page may reload meanwhile).
func (c *chrome) waitAcrossReloads(cond string, limit time.Duration) {
	c.t.Helper()
	var err error
	if !testkit.PollEvery(100*time.Millisecond, limit, func() bool {
		var ok bool
		ok, err = tryEval[bool](c, cond)
		return err == nil && ok
	}) {
		c.t.Fatalf("waiting %s for %s (last error %v)\npage: %s", limit, cond, err, c.pageText())
	}
}
