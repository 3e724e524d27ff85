package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// The real-human verification page driven end to end in headless Chromium: the browser opens
// H5Link, the test clicks the consent box, "Start check" and, after the countdown, "Confirm"
// with real mouse events through the Chrome DevTools Protocol; validate-result/get then returns
// the GroupId. A declined session and an expired token give their errors. Screenshots of the
// phone-sized page are written to MEDIAGEN_SCREENSHOT_DIR (default: a mediagen-verify-screenshots
// directory under the system temp dir).
//
// Chromium is Debian's `chromium` (make test installs it). Without it the test skips, except
// under CI=true, where it fails.
func TestVerificationPageInHeadlessChromium(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required under CI=true (scripts/ensure-tools.sh chromium installs it): %v", err)
		}
		t.Skip("chromium not installed; run scripts/ensure-tools.sh chromium")
	}
	shots := os.Getenv("MEDIAGEN_SCREENSHOT_DIR")
	if shots == "" {
		shots = filepath.Join(os.TempDir(), "mediagen-verify-screenshots")
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}

	// Verification tokens live 25 s here, so one session can be watched expiring.
	e := startAssetE2E(t, map[string]string{"MEDIAGEN_VERIFY_TTL": "25s"})
	hooks := newCallbackSink(t)
	expiring := e.post(e.key, "/v1/vidgen/real-human/validate-session/create", `{}`, 200)
	expiringAt := time.Now().Add(25 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	b := launchChromium(ctx, t, bin)
	tab := b.newTab(ctx, 390, 844)

	// 1. Pass: consent, liveness check, confirm.
	s := e.post(e.key, "/v1/vidgen/real-human/validate-session/create", `{"CallbackURL":"`+hooks.url+`"}`, 200)
	link, token := s["H5Link"].(string), s["VerifyToken"].(string)
	tab.navigate(ctx, link)
	tab.waitState(ctx, "pending")
	if txt := tab.eval(ctx, `document.body.innerText`); !strings.Contains(txt, "Demo tenant") || !strings.Contains(txt, "Start check") {
		t.Fatalf("page text: %s", txt)
	}
	if tab.eval(ctx, `String(document.getElementById("start").disabled)`) != "true" {
		t.Fatal("Start check is enabled before consent")
	}
	tab.screenshot(ctx, filepath.Join(shots, "verify-1-consent.png"))
	tab.click(ctx, "agree")
	tab.waitFor(ctx, `!document.getElementById("start").disabled`)
	tab.click(ctx, "start")
	tab.waitState(ctx, "started")
	time.Sleep(1200 * time.Millisecond) // mid-countdown
	tab.screenshot(ctx, filepath.Join(shots, "verify-2-liveness.png"))
	e.post(e.key, "/v1/vidgen/real-human/validate-result/get", `{"VerifyToken":"`+token+`"}`, 400)
	tab.waitFor(ctx, `!document.getElementById("confirm").hidden && !document.getElementById("confirm").disabled`)
	tab.click(ctx, "confirm")
	tab.waitState(ctx, "passed")
	tab.screenshot(ctx, filepath.Join(shots, "verify-3-passed.png"))
	if txt := tab.eval(ctx, `document.body.innerText`); !strings.Contains(txt, "You are verified") {
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
	tab.navigate(ctx, link)
	tab.waitState(ctx, "passed")

	// 2. Decline.
	s = e.post(e.key, "/v1/vidgen/real-human/validate-session/create", `{}`, 200)
	tab.navigate(ctx, s["H5Link"].(string))
	tab.waitState(ctx, "pending")
	tab.click(ctx, "decline")
	tab.waitState(ctx, "declined")
	tab.screenshot(ctx, filepath.Join(shots, "verify-4-declined.png"))
	declined := e.post(e.key, "/v1/vidgen/real-human/validate-result/get", `{"VerifyToken":"`+s["VerifyToken"].(string)+`"}`, 400)
	if code := declined["error"].(map[string]any)["code"]; code != "verification_declined" {
		t.Errorf("declined: %v", declined)
	}

	// 3. Expiry: the page says so and the result is verify_token_expired.
	time.Sleep(time.Until(expiringAt) + 500*time.Millisecond)
	tab.navigate(ctx, expiring["H5Link"].(string))
	tab.waitState(ctx, "expired")
	tab.screenshot(ctx, filepath.Join(shots, "verify-5-expired.png"))
	exp := e.post(e.key, "/v1/vidgen/real-human/validate-result/get", `{"VerifyToken":"`+expiring["VerifyToken"].(string)+`"}`, 400)
	if code := exp["error"].(map[string]any)["code"]; code != "verify_token_expired" {
		t.Errorf("expired: %v", exp)
	}
	if errs := b.exceptions(); len(errs) > 0 {
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
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c.mu.Lock()
		got := append([]map[string]any(nil), c.got...)
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%d callbacks, want %d", len(c.got), n)
	return nil
}

// ---------------------------------------------------------------------------------------------
// A minimal Chrome DevTools Protocol client over --remote-debugging-pipe: the browser reads
// NUL-terminated JSON commands on fd 3 and writes NUL-terminated answers and events on fd 4.
// No websocket, no dependency.
// ---------------------------------------------------------------------------------------------

type cdpMessage struct {
	ID        int64          `json:"id,omitempty"`
	SessionID string         `json:"sessionId,omitempty"`
	Method    string         `json:"method,omitempty"`
	Params    jsontext.Value `json:"params,omitempty"`
	Result    jsontext.Value `json:"result,omitempty"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error,omitempty"`
}

type browser struct {
	t      *testing.T
	w      io.Writer
	mu     sync.Mutex
	nextID int64
	calls  map[int64]chan cdpMessage
	events []cdpMessage
	evCond *sync.Cond
}

func launchChromium(ctx context.Context, t *testing.T, bin string) *browser {
	t.Helper()
	cmdR, cmdW, err := os.Pipe() // we write commands, the browser reads fd 3
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe() // the browser writes fd 4, we read
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	// Secure DNS off in the profile's Local State: otherwise Chromium probes public
	// DNS-over-HTTPS servers by address, which no resolver rule or proxy setting stops.
	profile := t.TempDir()
	if err := os.WriteFile(filepath.Join(profile, "Local State"), []byte(`{"dns_over_https":{"mode":"off","templates":""}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-extensions",
		"--disable-default-apps", "--mute-audio", "--hide-scrollbars",
		// The page is on loopback and nothing else may be reached: no name resolves, every
		// other destination goes to a dead proxy, and no DNS-over-HTTPS or domain-reliability
		// probes run (DESIGN: tests never leave 127.0.0.0/8).
		"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1", "--proxy-server=http://127.0.0.1:9",
		"--proxy-bypass-list=127.0.0.1", "--disable-features=DnsOverHttps,DnsOverHttpsUpgrade,AsyncDns,OptimizationHints,MediaRouter,Translate",
		"--disable-domain-reliability", "--no-pings", "--dns-prefetch-disable", "--disable-client-side-phishing-detection",
		"--user-data-dir="+profile, "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{cmdR, outW}
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	cmdR.Close()
	outW.Close()
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmdW.Close()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		outR.Close()
		if t.Failed() {
			t.Logf("chromium stderr:\n%s", tail(stderr.String(), 4000))
		}
	})
	b := &browser{t: t, w: cmdW, calls: map[int64]chan cdpMessage{}}
	b.evCond = sync.NewCond(&b.mu)
	go b.read(bufio.NewReaderSize(outR, 1<<20))
	// The browser answers once it is up.
	if _, err := b.call(ctx, "", "Browser.getVersion", nil); err != nil {
		t.Fatalf("chromium did not answer: %v\n%s", err, tail(stderr.String(), 4000))
	}
	return b
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func (b *browser) read(r *bufio.Reader) {
	for {
		frame, err := r.ReadBytes(0)
		if err != nil {
			b.mu.Lock()
			for id, ch := range b.calls {
				close(ch)
				delete(b.calls, id)
			}
			b.evCond.Broadcast()
			b.mu.Unlock()
			return
		}
		var m cdpMessage
		if err := json.Unmarshal(frame[:len(frame)-1], &m); err != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.calls[m.ID]; ok {
				ch <- m
				delete(b.calls, m.ID)
			}
		} else {
			b.events = append(b.events, m)
			b.evCond.Broadcast()
		}
		b.mu.Unlock()
	}
}

// call sends one command (to the browser, or to a page session) and waits for its answer.
func (b *browser) call(ctx context.Context, session, method string, params any) (jsontext.Value, error) {
	if params == nil {
		params = map[string]any{}
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.nextID++
	id := b.nextID
	ch := make(chan cdpMessage, 1)
	b.calls[id] = ch
	b.mu.Unlock()
	msg, err := json.Marshal(cdpMessage{ID: id, SessionID: session, Method: method, Params: p})
	if err != nil {
		return nil, err
	}
	if _, err := b.w.Write(append(msg, 0)); err != nil {
		return nil, fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m, ok := <-ch:
		if !ok {
			return nil, fmt.Errorf("%s: the browser went away", method)
		}
		if m.Error != nil {
			return nil, fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		return m.Result, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// exceptions are the uncaught script errors the pages reported.
func (b *browser) exceptions() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, ev := range b.events {
		if ev.Method == "Runtime.exceptionThrown" {
			out = append(out, string(ev.Params))
		}
	}
	return out
}

// tab is one page, attached with a flat session.
type tab struct {
	b       *browser
	session string
}

func (b *browser) must(ctx context.Context, session, method string, params any) jsontext.Value {
	b.t.Helper()
	v, err := b.call(ctx, session, method, params)
	if err != nil {
		b.t.Fatal(err)
	}
	return v
}

func (b *browser) newTab(ctx context.Context, width, height int) *tab {
	b.t.Helper()
	var target struct {
		TargetID string `json:"targetId"`
	}
	if err := json.Unmarshal(b.must(ctx, "", "Target.createTarget", map[string]any{"url": "about:blank"}), &target); err != nil {
		b.t.Fatal(err)
	}
	var att struct {
		SessionID string `json:"sessionId"`
	}
	if err := json.Unmarshal(b.must(ctx, "", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &att); err != nil {
		b.t.Fatal(err)
	}
	tb := &tab{b: b, session: att.SessionID}
	b.must(ctx, tb.session, "Page.enable", nil)
	b.must(ctx, tb.session, "Runtime.enable", nil)
	b.must(ctx, tb.session, "Emulation.setDeviceMetricsOverride", map[string]any{
		"width": width, "height": height, "deviceScaleFactor": 2, "mobile": true})
	b.must(ctx, tb.session, "Emulation.setTouchEmulationEnabled", map[string]any{"enabled": true, "maxTouchPoints": 5})
	return tb
}

// navigate loads url and waits for its load event.
func (tb *tab) navigate(ctx context.Context, url string) {
	tb.b.t.Helper()
	tb.b.mu.Lock()
	mark := len(tb.b.events)
	tb.b.mu.Unlock()
	var nav struct {
		ErrorText string `json:"errorText"`
	}
	if err := json.Unmarshal(tb.b.must(ctx, tb.session, "Page.navigate", map[string]any{"url": url}), &nav); err != nil || nav.ErrorText != "" {
		tb.b.t.Fatalf("navigate %s: %v %s", url, err, nav.ErrorText)
	}
	if err := tb.b.waitEvent(ctx, mark, tb.session, "Page.loadEventFired"); err != nil {
		tb.b.t.Fatalf("load %s: %v", url, err)
	}
}

func (b *browser) waitEvent(ctx context.Context, from int, session, method string) error {
	stop := context.AfterFunc(ctx, func() {
		b.mu.Lock()
		b.evCond.Broadcast()
		b.mu.Unlock()
	})
	defer stop()
	b.mu.Lock()
	defer b.mu.Unlock()
	for {
		for _, ev := range b.events[from:] {
			if ev.Method == method && ev.SessionID == session {
				return nil
			}
		}
		from = len(b.events)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b.evCond.Wait()
	}
}

// eval runs a JavaScript expression in the page and returns its value as a string.
func (tb *tab) eval(ctx context.Context, expr string) string {
	tb.b.t.Helper()
	var r struct {
		Result struct {
			Type  string         `json:"type"`
			Value jsontext.Value `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text string `json:"text"`
		} `json:"exceptionDetails"`
	}
	v := tb.b.must(ctx, tb.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true})
	if err := json.Unmarshal(v, &r); err != nil {
		tb.b.t.Fatal(err)
	}
	if r.ExceptionDetails != nil {
		tb.b.t.Fatalf("eval %s: %s", expr, r.ExceptionDetails.Text)
	}
	var s string
	if json.Unmarshal(r.Result.Value, &s) == nil {
		return s
	}
	return string(r.Result.Value)
}

// waitFor polls a boolean expression until it holds.
func (tb *tab) waitFor(ctx context.Context, cond string) {
	tb.b.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if tb.eval(ctx, "String(Boolean("+cond+"))") == "true" {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	tb.b.t.Fatalf("timed out waiting for %s; page: %s", cond, tb.eval(ctx, "document.body.dataset.state + ' | ' + document.body.innerText"))
}

func (tb *tab) waitState(ctx context.Context, state string) {
	tb.b.t.Helper()
	tb.waitFor(ctx, `document.body.dataset.state === "`+state+`" && !document.getElementById("`+map[string]string{
		"pending": "consent", "started": "check", "passed": "passed", "declined": "declined", "expired": "expired"}[state]+`").hidden`)
}

// click presses and releases the left mouse button over the middle of the element: a real
// input event, dispatched by the browser to whatever is under the pointer.
func (tb *tab) click(ctx context.Context, id string) {
	tb.b.t.Helper()
	var box struct{ X, Y, W, H float64 }
	js := `(function(){var el=document.getElementById("` + id + `");el.scrollIntoView({block:"center"});var r=el.getBoundingClientRect();return JSON.stringify({X:r.x,Y:r.y,W:r.width,H:r.height});})()`
	if err := json.Unmarshal([]byte(tb.eval(ctx, js)), &box); err != nil {
		tb.b.t.Fatal(err)
	}
	if box.W == 0 || box.H == 0 {
		tb.b.t.Fatalf("#%s is not visible", id)
	}
	x, y := box.X+box.W/2, box.Y+box.H/2
	for _, typ := range []string{"mouseMoved", "mousePressed", "mouseReleased"} {
		p := map[string]any{"type": typ, "x": x, "y": y, "button": "left", "clickCount": 1}
		if typ == "mouseMoved" {
			p = map[string]any{"type": typ, "x": x, "y": y}
		}
		tb.b.must(ctx, tb.session, "Input.dispatchMouseEvent", p)
	}
}

// screenshot saves a PNG of the viewport.
func (tb *tab) screenshot(ctx context.Context, path string) {
	tb.b.t.Helper()
	var shot struct {
		Data string `json:"data"`
	}
	if err := json.Unmarshal(tb.b.must(ctx, tb.session, "Page.captureScreenshot", map[string]any{"format": "png"}), &shot); err != nil {
		tb.b.t.Fatal(err)
	}
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		tb.b.t.Fatalf("screenshot: %v", errors.Join(err, errors.New("not a PNG")))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		tb.b.t.Fatal(err)
	}
}
