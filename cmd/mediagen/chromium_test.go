package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"mediagen/internal/testkit"
)

// Browser tests drive Debian's `chromium` (scripts/ensure-tools.sh chromium installs it)
// through chromedp. Without it they skip, except under CI=true, where they fail.

// requireChromium returns the path of chromium or skips the test.
func requireChromium(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("chromium is required under CI=true (scripts/ensure-tools.sh chromium installs it): %v", err)
		}
		t.Skip("chromium not installed; run scripts/ensure-tools.sh chromium")
	}
	return bin
}

// chrome is one headless Chromium with one tab, for one test. It records what the pages
// wrote to the browser console (script errors, CSP violations, failed loads).
type chrome struct {
	t *testing.T
	// ctx is the tab's chromedp context; it ends with the test.
	ctx context.Context
	// shots is where screenshot writes (console_browser_helpers_test.go), once known.
	shots string
	mu    sync.Mutex
	msgs  []consoleMsg
	// urls are every request's URL and every shown document's URL, in order.
	urls []string
}

// consoleMsg is one line of the browser console: a console API call, an uncaught exception
// or a browser log entry (source "security" for CSP refusals, "network" for failed loads).
type consoleMsg struct {
	kind, source, text, url string
}

func (m consoleMsg) String() string {
	return m.kind + "/" + m.source + ": " + m.text + " (" + m.url + ")"
}

// launchChrome starts a headless Chromium for t (skipping without one): run as root in a
// container (no sandbox, no GPU, no /dev/shm), with a fresh profile, reaching nothing but
// 127.0.0.1. The browser stops when the test ends.
func launchChrome(t *testing.T) *chrome {
	t.Helper()
	bin := requireChromium(t)
	// A fresh profile whose Local State turns secure DNS off: otherwise Chromium probes public
	// DNS-over-HTTPS servers by address, which no resolver rule or proxy setting stops.
	profile, err := os.MkdirTemp("", "mediagen-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Chromium's helper processes can still write for a moment after it exits.
		testkit.Poll(5*time.Second, func() bool { return os.RemoveAll(profile) == nil })
	})
	if err := os.WriteFile(filepath.Join(profile, "Local State"), []byte(`{"dns_over_https":{"mode":"off","templates":""}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(profile),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("mute-audio", true),
		chromedp.Flag("hide-scrollbars", true),
		// The pages are on loopback and nothing else may be reached: no name resolves, every
		// other destination goes to a dead proxy, and no DNS-over-HTTPS or domain-reliability
		// probes run (DESIGN: tests never leave 127.0.0.0/8).
		chromedp.Flag("host-resolver-rules", "MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"),
		chromedp.ProxyServer("http://127.0.0.1:9"),
		chromedp.Flag("proxy-bypass-list", "127.0.0.1"),
		chromedp.Flag("disable-features", "Translate,DnsOverHttps,DnsOverHttpsUpgrade,AsyncDns,OptimizationHints,MediaRouter"),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("no-pings", true),
		chromedp.Flag("dns-prefetch-disable", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	// The first Run starts the browser; it must not carry a deadline (that would stop the
	// browser), so the start is bounded by a timer instead.
	started := make(chan error, 1)
	go func() { started <- chromedp.Do(ctx) }()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start chromium: %v", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("chromium did not start within a minute")
	}
	c := &chrome{t: t}
	c.ctx = context.WithValue(ctx, chromeKey{}, c)
	// Listen sees each event before the answer to any later command, so once a step returns,
	// everything the page wrote before it is recorded.
	if err := chromedp.Listen(ctx, c.record); err != nil {
		t.Fatal(err)
	}
	return c
}

type chromeKey struct{}

// chromeOf is the chrome whose context ctx is (or derives from).
func chromeOf(ctx context.Context) *chrome {
	c, ok := ctx.Value(chromeKey{}).(*chrome)
	if !ok {
		panic("chromeOf: not a context of launchChrome or newChrome")
	}
	return c
}

// use makes t the test that c's helpers fail (for subtests sharing one browser); the returned
// func gives c back to the test it had.
func (c *chrome) use(t *testing.T) (restore func()) {
	prev := c.t
	c.t = t
	return func() { c.t = prev }
}

// run runs the steps with a deadline, failing the test on an error.
func (c *chrome) run(what string, steps ...chromedp.Action[chromedp.Void]) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		// The page first, the error last: CI shows the tail of a failure.
		c.t.Fatalf("page: %s\n%s: %v", c.pageText(), what, err)
	}
}

// eval evaluates a JavaScript expression to a value of type T.
func eval[T any](c *chrome, expr string) T {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	var v T
	err := retryContextLost(ctx, func() (err error) { v, err = chromedp.Run(ctx, chromedp.Evaluate[T](expr)); return err })
	if err != nil {
		c.t.Fatalf("eval %s: %v", expr, err)
	}
	return v
}

// retryContextLost runs call again while it fails because the page's JavaScript context it
// was sent to is gone: right after a navigation, chromedp can still address the old
// document's context for a moment ("Cannot find context with specified id", "Execution
// context was destroyed"), which says nothing about the page under test. Any other error, or
// ctx's end, is returned.
func retryContextLost(ctx context.Context, call func() error) error {
	for {
		err := call()
		if err == nil || !contextLost(err) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(50 * time.Millisecond):
		}
		// An evaluation makes chromedp take up the new document's context (chromedp issue
		// #890: a Poll retried alone can keep addressing the old one).
		_, _ = chromedp.Run(ctx, chromedp.Evaluate[bool](`true`))
	}
}

func contextLost(err error) bool {
	s := err.Error()
	return strings.Contains(s, "Cannot find context with specified id") || strings.Contains(s, "Execution context was destroyed") ||
		strings.Contains(s, "Cannot find default execution context")
}

// waitFor polls a JavaScript condition every 50 ms until it holds, for at most 20 s.
func (c *chrome) waitFor(cond string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 25*time.Second)
	defer cancel()
	err := retryContextLost(ctx, func() error {
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](cond,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(20*time.Second)))
		return err
	})
	if err != nil {
		// The page first, the error last: CI shows the tail of a failure.
		c.t.Fatalf("page: %s\nwaiting for %s: %v", c.pageText(), cond, err)
	}
}

// pageText is the page's address and text, for failure messages.
func (c *chrome) pageText() string {
	ctx, cancel := context.WithTimeout(c.ctx, 5*time.Second)
	defer cancel()
	var v string
	err := retryContextLost(ctx, func() (err error) {
		v, err = chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " | " + (document.body ? document.body.dataset.state + " | " + document.body.innerText : "")`))
		return err
	})
	if err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	return v
}

// viewport sets a phone-sized (mobile, touch, 2x) or desktop-sized viewport.
func (c *chrome) viewport(width, height int64, phone bool) {
	c.t.Helper()
	if phone {
		c.run("phone viewport", chromedp.EmulateViewport(width, height, chromedp.EmulateScale(2), chromedp.EmulatePortrait, chromedp.EmulateMobile, chromedp.EmulateTouch))
		return
	}
	c.run("desktop viewport", chromedp.EmulateViewport(width, height))
}

// Phone and Desktop are the two sizes pages are checked at.
func (c *chrome) Phone()   { c.t.Helper(); c.viewport(390, 844, true) }
func (c *chrome) Desktop() { c.t.Helper(); c.viewport(1440, 900, false) }

// shoot saves a PNG of the viewport at path.
func (c *chrome) shoot(path string) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.ctx, 30*time.Second)
	defer cancel()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil || !strings.HasPrefix(string(png), "\x89PNG") {
		c.t.Fatalf("screenshot %s: %v", path, errors.Join(err, errors.New("not a PNG")))
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// record keeps a console event or a requested URL; it runs on the tab's reading goroutine, so it only appends.
func (c *chrome) record(ev any) {
	var m consoleMsg
	switch ev := ev.(type) {
	case *network.EventRequestWillBeSent:
		c.mu.Lock()
		c.urls = append(c.urls, ev.Request.URL)
		c.mu.Unlock()
		return
	case *page.EventFrameNavigated:
		c.mu.Lock()
		c.urls = append(c.urls, ev.Frame.URL)
		c.mu.Unlock()
		return
	case *runtime.EventConsoleAPICalled:
		var parts []string
		for _, a := range ev.Args {
			if a.Description != "" {
				parts = append(parts, a.Description)
			} else {
				parts = append(parts, string(a.Value))
			}
		}
		m = consoleMsg{kind: "console." + string(ev.Type), text: strings.Join(parts, " ")}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		m = consoleMsg{kind: "exception", text: d.Text, url: d.URL}
		if d.Exception != nil {
			m.text += " " + d.Exception.Description
		}
	case *log.EventEntryAdded:
		m = consoleMsg{kind: "log." + string(ev.Entry.Level), source: string(ev.Entry.Source), text: ev.Entry.Text, url: ev.Entry.URL}
	default:
		return
	}
	c.mu.Lock()
	c.msgs = append(c.msgs, m)
	c.mu.Unlock()
}

// messages are the console messages so far that match keep.
func (c *chrome) messages(keep func(consoleMsg) bool) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, m := range c.msgs {
		if keep(m) {
			out = append(out, m.String())
		}
	}
	return out
}

// exceptions are the uncaught script errors the pages reported.
func (c *chrome) exceptions() []string {
	return c.messages(func(m consoleMsg) bool { return m.kind == "exception" })
}

// cspViolations are the Content-Security-Policy refusals the browser reported.
func (c *chrome) cspViolations() []string {
	return c.messages(func(m consoleMsg) bool {
		return m.source == "security" || strings.Contains(m.text, "Content Security Policy") || strings.Contains(m.text, "Content-Security-Policy")
	})
}
