package httpapi

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/catalog"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
	"mediagen/internal/video"
)

type testEnv struct {
	t     testing.TB
	srv   *Server
	ts    *httptest.Server
	store store.Store
}

func newTestEnv(t *testing.T) *testEnv {
	t.Helper()
	return newTestEnvWith(t, catalog.Demo(), nil, 1024)
}

// newTestEnvWith builds a server on a fresh SQLite store with the given catalog and video
// service settings (the store is filled in).
func newTestEnvWith(t testing.TB, cat *catalog.Catalog, videos *video.Service, maxBody int64) *testEnv {
	t.Helper()
	return newTestEnvOn(t, "sqlite", cat, videos, maxBody)
}

// newTestEnvOn is newTestEnvWith on a fresh store of the driver (see openTestStore).
func newTestEnvOn(t testing.TB, driver string, cat *catalog.Catalog, videos *video.Service, maxBody int64) *testEnv {
	t.Helper()
	db := openTestStore(t, driver)
	if videos == nil {
		videos = &video.Service{}
	}
	videos.Store = db
	s := New(Config{Store: db, Catalog: cat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), MaxBodyBytes: maxBody, Videos: videos})
	// A POST route for the shared body rules, until the real POST routes exist in this package.
	s.handle("POST /test/echo", func(w http.ResponseWriter, r *http.Request) error {
		b, err := s.readJSONBody(w, r)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
		return nil
	})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return &testEnv{t: t, srv: s, ts: ts, store: db}
}

// newKey creates a key for the tenant with a starting credit and returns its secret.
func (e *testEnv) newKey(tenant string, credit money.Micros, unlimited bool) (string, store.Key) {
	e.t.Helper()
	return testkit.Key(e.t, e.store, tenant, credit, unlimited) // every test tenant bills in USD
}

type response struct {
	status int
	header http.Header
	body   []byte
}

func (e *testEnv) do(method, path string, header map[string]string, body string) response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.ts.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, b}
}

// checkEnvelope asserts an error answer's status, type and code, and that it holds no null.
func checkEnvelope(t *testing.T, r response, status int, typ, code string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("content type %q", ct)
	}
	var env struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    string  `json:"code"`
			Param   *string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("not an envelope: %v: %s", err, r.body)
	}
	if env.Error.Type != typ || env.Error.Code != code || env.Error.Message == "" {
		t.Errorf("envelope %s, want type %s code %s", r.body, typ, code)
	}
	if hasJSONNull(r.body) {
		t.Errorf("body contains null: %s", r.body)
	}
}

func TestAuthenticationFailuresAnswer401(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	_, revoked := e.newKey("demo", 0, false)
	revokedSecret := ""
	{
		s, k := e.newKey("demo", 0, false)
		revokedSecret, revoked = s, k
		ctx := t.Context()
		if err := e.store.Transact(ctx, func(tx store.Tx) error { return tx.RevokeKey(ctx, revoked.ID, time.Now()) }); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name, header, code string
	}{
		{"missing header", "", "missing_api_key"},
		{"basic scheme", "Basic dXNlcjpwYXNz", "invalid_auth_scheme"},
		{"scheme without token", "Bearer", "missing_api_key"},
		{"empty token", "Bearer    ", "missing_api_key"},
		{"token scheme", "Token abc", "invalid_auth_scheme"},
		{"unknown key", "Bearer mg_notakey", "invalid_api_key"},
		{"revoked key", "Bearer " + revokedSecret, "revoked_api_key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := map[string]string{}
			if tt.header != "" {
				h["Authorization"] = tt.header
			}
			checkEnvelope(t, e.do("GET", "/v1/billing/balance", h, ""), 401, "authentication_error", tt.code)
		})
	}
}

func TestBalanceHasContractShape(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	secret, _ := e.newKey("demo", 12_345_678, false)
	r := e.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "bearer " + secret}, "")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var got struct {
		Object   string `json:"object"`
		Currency string `json:"currency"`
		Balance  struct {
			Available jsontext.Value `json:"available"`
			Used      jsontext.Value `json:"used"`
			Unlimited bool           `json:"unlimited"`
		} `json:"balance"`
		UpdatedAt int64 `json:"updated_at"`
	}
	if err := json.Unmarshal(r.body, &got, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	if got.Object != "billing.balance" || got.Currency != "USD" || string(got.Balance.Available) != "12.345678" ||
		string(got.Balance.Used) != "0" || got.Balance.Unlimited {
		t.Errorf("balance = %s", r.body)
	}
	if d := time.Since(time.Unix(got.UpdatedAt, 0)); d < 0 || d > time.Minute {
		t.Errorf("updated_at %d not recent", got.UpdatedAt)
	}
	if r.header.Get("X-Request-Id") == "" {
		t.Error("no request id")
	}
}

func TestUnlimitedKeyBalance(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	secret, _ := e.newKey("demo", 0, true)
	r := e.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer " + secret}, "")
	if r.status != 200 || !strings.Contains(string(r.body), `"unlimited":true`) {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestTransportErrorsAnswerWithEnvelopes(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	json := map[string]string{"Content-Type": "application/json"}
	checkEnvelope(t, e.do("GET", "/v1/nothing-here", nil, ""), 404, "not_found_error", "not_found")
	r := e.do("DELETE", "/v1/billing/balance", nil, "")
	checkEnvelope(t, r, 405, "invalid_request_error", "method_not_allowed")
	if !strings.Contains(r.header.Get("Allow"), "GET") {
		t.Errorf("Allow = %q", r.header.Get("Allow"))
	}
	checkEnvelope(t, e.do("POST", "/test/echo", json, `{"x":"`+strings.Repeat("a", 2000)+`"}`), 413, "invalid_request_error", "request_too_large")
	checkEnvelope(t, e.do("POST", "/test/echo", map[string]string{"Content-Type": "text/plain"}, `{}`), 415, "invalid_request_error", "unsupported_media_type")
	checkEnvelope(t, e.do("POST", "/test/echo", nil, `{}`), 415, "invalid_request_error", "unsupported_media_type")
	if r := e.do("POST", "/test/echo", map[string]string{"Content-Type": "application/json; charset=utf-8"}, `{"a":1}`); r.status != 200 {
		t.Errorf("json with charset: %d %s", r.status, r.body)
	}
}

func TestRequestIDEchoedOrGenerated(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	if got := e.do("GET", "/healthz", map[string]string{"X-Request-Id": "client-123"}, "").header.Get("X-Request-Id"); got != "client-123" {
		t.Errorf("echo = %q", got)
	}
	if got := e.do("GET", "/healthz", map[string]string{"X-Request-Id": "bad id with spaces"}, "").header.Get("X-Request-Id"); !strings.HasPrefix(got, "req_") {
		t.Errorf("generated = %q", got)
	}
}

func TestHealthReadyAndMetrics(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	if r := e.do("GET", "/healthz", nil, ""); r.status != 200 {
		t.Errorf("healthz %d", r.status)
	}
	if r := e.do("GET", "/readyz", nil, ""); r.status != 200 {
		t.Errorf("readyz %d", r.status)
	}
	r := e.do("GET", "/metrics", nil, "")
	if r.status != 200 || !strings.Contains(string(r.body), `mediagen_http_requests_total{method="GET",route="GET /readyz",status="200"} 1`) {
		t.Errorf("metrics missing request counter:\n%.2000s", r.body)
	}
	_ = e.store.Close()
	checkEnvelope(t, e.do("GET", "/readyz", nil, ""), 503, "api_error", "service_unavailable")
}

func TestPanicBecomes500Envelope(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	e.srv.handle("GET /test/panic", func(http.ResponseWriter, *http.Request) error { panic("kaboom") })
	r := e.do("GET", "/test/panic", nil, "")
	checkEnvelope(t, r, 500, "api_error", "internal_error")
	if strings.Contains(string(r.body), "kaboom") {
		t.Error("panic text leaked")
	}
}
