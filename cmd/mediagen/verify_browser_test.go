package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/go-json-experiment/json"

	"mediagen/internal/testkit"
)

// The real-human verification page driven end to end in headless Chromium (chromedp): the
// browser opens H5Link, the test clicks the consent box, "Start check" and, after the
// countdown, "Confirm" with real mouse events; validate-result/get then returns the GroupId. A
// declined session and an expired token give their errors. Screenshots of the phone-sized page
// are written to MEDIAGEN_SCREENSHOT_DIR (default: a mediagen-verify-screenshots directory under
// the system temp dir).
//
// Chromium is Debian's `chromium` (make test installs it). Without it the test skips, except
// under CI=true, where it fails.
func TestVerificationPageInHeadlessChromium(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	shots := os.Getenv("MEDIAGEN_SCREENSHOT_DIR")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "mediagen-verify-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	// The service's clock is moved past a token's lifetime (15 min) at the end, so that one
	// session can be seen expiring without waiting it out.
	clock := testkit.RunningClock()
	m := NewMain(env(nil), io.Discard, io.Discard)
	m.Now = clock.Now
	e := startAssetE2EOn(t, m, nil)
	hooks := newCallbackSink(t)
	expiring := e.post(e.key, "/v1/vidgen/real-human/validate-session/create", `{}`, 200)

	c := launchChrome(t)
	c.Phone()
	waitState := func(state string) {
		t.Helper()
		section := map[string]string{"pending": "consent", "started": "check", "passed": "passed", "declined": "declined", "expired": "expired"}[state]
		c.waitFor(`document.body.dataset.state === "` + state + `"`)
		c.run("section #"+section+" visible", chromedp.WaitVisible(chromedp.ID(section)))
	}
	click := func(id string) {
		t.Helper()
		c.run("click #"+id, chromedp.Click(chromedp.ID(id))) // a real mouse press and release over its middle
	}
	shot := func(name string) { t.Helper(); c.shoot(filepath.Join(shots, name)) }

	// 1. Pass: consent, liveness check, confirm.
	s := e.post(e.key, "/v1/vidgen/real-human/validate-session/create", `{"CallbackURL":"`+hooks.url+`"}`, 200)
	link, token := s["H5Link"].(string), s["VerifyToken"].(string)
	c.run("open "+link, chromedp.Navigate(link))
	waitState("pending")
	if txt := eval[string](c, `document.body.innerText`); !strings.Contains(txt, "Demo tenant") || !strings.Contains(txt, "Start check") {
		t.Fatalf("page text: %s", txt)
	}
	if !eval[bool](c, `document.getElementById("start").disabled`) {
		t.Fatal("Start check is enabled before consent")
	}
	shot("verify-1-consent.png")
	click("agree")
	c.waitFor(`!document.getElementById("start").disabled`)
	click("start")
	waitState("started")
	// Mid-countdown: the count has gone down from its start but the check is not complete.
	c.waitFor(`(function () { var n = Number(document.getElementById("count").textContent);
		return n > 0 && n < (parseInt(document.body.dataset.check, 10) || 3); })()`)
	shot("verify-2-liveness.png")
	e.post(e.key, "/v1/vidgen/real-human/validate-result/get", `{"VerifyToken":"`+token+`"}`, 400)
	c.waitFor(`!document.getElementById("confirm").hidden && !document.getElementById("confirm").disabled`)
	click("confirm")
	waitState("passed")
	shot("verify-3-passed.png")
	if txt := eval[string](c, `document.body.innerText`); !strings.Contains(txt, "You are verified") {
		t.Errorf("passed page: %s", txt)
	}
	res := e.post(e.key, "/v1/vidgen/real-human/validate-result/get", `{"VerifyToken":"`+token+`"}`, 200)
	gid, _ := res["GroupId"].(string)
	if g := e.post(e.key, "/v1/vidgen/real-human/asset-groups/get", `{"Id":"`+gid+`"}`, 200); g["Origin"] != "Verification" {
		t.Errorf("group %v", g)
	}
	used := e.post(e.key, "/v1/vidgen/real-human/validate-result/get", `{"VerifyToken":"`+token+`"}`, 400)
	if code := used["error"].(map[string]any)["code"]; code != "verify_token_used" {
		t.Errorf("reuse: %v", used)
	}
	if cb := hooks.wait(t, 1)[0]; cb["Result"] != "Passed" || cb["GroupId"] != gid || cb["VerifyToken"] != token {
		t.Errorf("callback %v", cb)
	}
	// A reload shows the finished state.
	c.run("reopen "+link, chromedp.Navigate(link))
	waitState("passed")

	// 2. Decline.
	s = e.post(e.key, "/v1/vidgen/real-human/validate-session/create", `{}`, 200)
	c.run("open declined", chromedp.Navigate(s["H5Link"].(string)))
	waitState("pending")
	click("decline")
	waitState("declined")
	shot("verify-4-declined.png")
	declined := e.post(e.key, "/v1/vidgen/real-human/validate-result/get", `{"VerifyToken":"`+s["VerifyToken"].(string)+`"}`, 400)
	if code := declined["error"].(map[string]any)["code"]; code != "verification_declined" {
		t.Errorf("declined: %v", declined)
	}

	// 3. Expiry: the API says the token has expired once its lifetime has passed, and the page
	// says so too.
	exp := e.post(e.key, "/v1/vidgen/real-human/validate-result/get", `{"VerifyToken":"`+expiring["VerifyToken"].(string)+`"}`, 400)
	if code := exp["error"].(map[string]any)["code"]; code == "verify_token_expired" {
		t.Fatalf("the token expired before its lifetime passed: %v", exp)
	}
	clock.Advance(15*time.Minute + time.Second)
	exp = e.post(e.key, "/v1/vidgen/real-human/validate-result/get", `{"VerifyToken":"`+expiring["VerifyToken"].(string)+`"}`, 400)
	if code := exp["error"].(map[string]any)["code"]; code != "verify_token_expired" {
		t.Fatalf("the token has not expired after its lifetime: %v", exp)
	}
	c.run("open expired", chromedp.Navigate(expiring["H5Link"].(string)))
	waitState("expired")
	shot("verify-5-expired.png")
	if errs := c.exceptions(); len(errs) > 0 {
		t.Errorf("page script errors: %v", errs)
	}
	t.Logf("screenshots in %s", shots)
}

// callbackSink receives verification callbacks on loopback HTTPS.
type callbackSink struct {
	url string
	mu  sync.Mutex
	got []map[string]any
}

func newCallbackSink(t *testing.T) *callbackSink {
	c := &callbackSink{}
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Errorf("callback body %s: %v", b, err)
		}
		c.mu.Lock()
		c.got = append(c.got, m)
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	c.url = srv.URL + "/hooks/verify"
	return c
}

func (c *callbackSink) wait(t *testing.T, n int) []map[string]any {
	t.Helper()
	var got []map[string]any
	if !testkit.Poll(20*time.Second, func() bool {
		c.mu.Lock()
		got = append([]map[string]any(nil), c.got...)
		c.mu.Unlock()
		return len(got) >= n
	}) {
		t.Fatalf("%d callbacks, want %d", len(got), n)
	}
	return got
}
