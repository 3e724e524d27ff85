package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/money"
	"mediagen/internal/testkit"
)

// hookReceiver is a tenant's webhook endpoint on loopback over TLS; answer decides the status
// of the n-th request (1-based); 0 drops the connection unanswered.
type hookReceiver struct {
	ts     *httptest.Server
	mu     sync.Mutex
	got    []hookRequest
	answer func(n int) int
}

type hookRequest struct {
	header http.Header
	body   []byte
}

func newHookReceiver(t *testing.T, answer func(n int) int) *hookReceiver {
	rc := &hookReceiver{answer: answer}
	rc.ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, hookRequest{r.Header.Clone(), b})
		n := len(rc.got)
		rc.mu.Unlock()
		code := 200
		if rc.answer != nil {
			code = rc.answer(n)
		}
		if code == 0 {
			if c, _, err := w.(http.Hijacker).Hijack(); err == nil {
				c.Close()
			}
			return
		}
		w.WriteHeader(code)
	}))
	t.Cleanup(rc.ts.Close)
	return rc
}

func (rc *hookReceiver) requests() []hookRequest {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]hookRequest(nil), rc.got...)
}

// verifyHook is the OpenAI SDKs' webhooks.verifySignature (openai-node 7.57.0,
// src/resources/webhooks/webhooks.ts) in Go.
func verifyHook(secret string, h http.Header, body []byte) bool {
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || time.Now().Unix()-ts > 300 || ts > time.Now().Unix()+300 {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)))
	for _, part := range strings.Split(h.Get("webhook-signature"), " ") {
		if sig, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(part, "v1,")); err == nil && hmac.Equal(sig, m.Sum(nil)) {
			return true
		}
	}
	return false
}

// startWebhookE2E serves the demo catalog with webhooks switched on for its tenant (on) or
// not, trusting the receivers' test certificate and allowing loopback destinations.
func startWebhookE2E(t *testing.T, on bool, rc *hookReceiver) *e2e {
	t.Helper()
	tools := requireTools(t)
	dir := t.TempDir()
	demo := string(catalog.DemoYAML())
	if on {
		demo = strings.Replace(demo, "  - id: demo\n", "  - id: demo\n    webhooks: {enabled: true, max_endpoints: 3}\n", 1)
	}
	catPath := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(catPath, []byte(demo), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewMain(env(nil), io.Discard, io.Discard)
	m.FetchTLS = &tls.Config{RootCAs: rc.ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	args := []string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--sandbox-pace", "100ms",
		"--fetch-allow", "loopback", "--log-level", "warn", "--catalog", catPath}
	seedSQLite(t, filepath.Join(dir, "data"), args)
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	e := &e2e{t: t, m: m, tools: tools}
	a := &assetE2E{e2e: e}
	e.key = a.newKey("demo", 100*money.Scale)
	return e
}

// hookCall calls a webhook route (they are not in docs/openapi.yaml's traffic check).
func (e *e2e) hookCall(method, path, body string) (int, map[string]any) {
	e.t.Helper()
	req, _ := http.NewRequest(method, e.m.URL()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var out map[string]any
	_ = json.Unmarshal(b, &out)
	return res.StatusCode, out
}

// A completed and a failed video reach the tenant's endpoint, each signed with the secret
// create returned, in OpenAI's event shape naming the task; after delete nothing more is sent.
func TestWebhooksEndToEndCompletionAndFailure(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, nil)
	e := startWebhookE2E(t, true, rc)
	status, ep := e.hookCall("POST", "/v1/webhook_endpoints", `{"name":"e2e","url":"`+rc.ts.URL+`/hook","event_types":["video.completed","video.failed"]}`)
	if status != 200 {
		t.Fatalf("create endpoint: %d %v", status, ep)
	}
	secret, _ := ep["signing_secret"].(string)
	done := e.create(`{"model":"demo-video-fast","prompt":"a cat","metadata":{"duration":4,"resolution":"480p"}}`)
	failed := e.create(`{"model":"demo-video-fast","prompt":"boom [sandbox:fail]","metadata":{"duration":4,"resolution":"480p"}}`)
	if got := e.wait(done); got.Status != "completed" {
		t.Fatalf("task %+v", got)
	}
	e.wait(failed)
	testkit.WaitFor(t, 30*time.Second, "both events", func() bool { return len(rc.requests()) >= 2 })
	want := map[string]string{done: "video.completed", failed: "video.failed"}
	for _, r := range rc.requests() {
		if !verifyHook(secret, r.header, r.body) {
			t.Fatalf("signature does not verify: %v %s", r.header, r.body)
		}
		var ev struct {
			ID, Object, Type string
			CreatedAt        int64 `json:"created_at"`
			Data             struct{ ID string }
		}
		if err := json.Unmarshal(r.body, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Object != "event" || ev.ID != r.header.Get("webhook-id") || want[ev.Data.ID] != ev.Type || ev.CreatedAt == 0 {
			t.Fatalf("event %s", r.body)
		}
		delete(want, ev.Data.ID)
		if strings.Contains(string(r.body), "http") {
			t.Fatalf("the event carries a URL: %s", r.body)
		}
	}
	if len(want) != 0 {
		t.Fatalf("missing events for %v", want)
	}
	testkit.WaitFor(t, 5*time.Second, "the metric", func() bool {
		return strings.Contains(e.metrics(), `mediagen_webhook_deliveries_total{outcome="delivered"} 2`)
	})
	if status, _ := e.hookCall("DELETE", "/v1/webhook_endpoints/"+ep["id"].(string), ""); status != 200 {
		t.Fatalf("delete: %d", status)
	}
	after := e.create(`{"model":"demo-video-fast","prompt":"a dog","metadata":{"duration":4,"resolution":"480p"}}`)
	e.wait(after) // the event would have been written with this state: there is none to send
	if testkit.Poll(time.Second, func() bool { return len(rc.requests()) > 2 }) {
		t.Fatalf("%d requests after the endpoint was deleted", len(rc.requests()))
	}
}

// With the switch off the routes are the unknown route's 404 and a finished task sends
// nothing.
func TestWebhooksEndToEndSwitchOffSendsNothing(t *testing.T) {
	t.Parallel()
	rc := newHookReceiver(t, nil)
	e := startWebhookE2E(t, false, rc)
	status, body := e.hookCall("POST", "/v1/webhook_endpoints", `{"name":"e2e","url":"`+rc.ts.URL+`/hook","event_types":["video.completed"]}`)
	unknownStatus, unknown := e.hookCall("POST", "/v1/no_such_route", `{}`)
	if status != 404 || status != unknownStatus || body["error"].(map[string]any)["code"] != unknown["error"].(map[string]any)["code"] {
		t.Fatalf("switch off: %d %v; unknown route %d %v", status, body, unknownStatus, unknown)
	}
	e.wait(e.create(`{"model":"demo-video-fast","prompt":"a cat","metadata":{"duration":4,"resolution":"480p"}}`))
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("%d requests with the switch off", n)
	}
}
