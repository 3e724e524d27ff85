package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The harness's CSP check is not vacuous: a page with an inline style and an inline script
// under a strict policy gives two violations, as a broken console page would.
func TestChromiumHarnessSeesCSPViolations(t *testing.T) {
	t.Parallel()
	requireChromium(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'")
		_, _ = w.Write([]byte(`<!doctype html><p style="color:red">styled</p><script>document.title = "ran"</script>`))
	}))
	t.Cleanup(ts.Close)
	c := newChrome(t)
	c.open(ts.URL, "/")
	if title := eval[string](c, `document.title`); title == "ran" {
		t.Error("the inline script ran despite the policy")
	}
	v := c.cspViolations()
	if len(v) != 2 || !strings.Contains(strings.Join(v, "\n"), "script-src") || !strings.Contains(strings.Join(v, "\n"), "style-src") {
		t.Errorf("violations seen:\n%s", strings.Join(v, "\n"))
	}
}
