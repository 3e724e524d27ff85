package adminapi

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/admin"
	"mediagen/internal/apidoc"
	"mediagen/internal/catalog"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/testkit"
	"mediagen/internal/webhook"
)

// The tests' PostgreSQL databases are clones of one the migrations made once (pgtest).
func init() { pgtest.UseTemplate(postgres.MigrationsDigest(), postgres.Migrate) }

var drivers = []string{"sqlite", "postgres"}

// forEachStore runs fn on a fresh environment of each store driver.
func forEachStore(t *testing.T, fn func(t *testing.T, e *env)) {
	for _, d := range drivers {
		t.Run(d, func(t *testing.T) {
			t.Parallel()
			fn(t, newEnv(t, d))
		})
	}
}

// recorded collects the exchanges of every test, checked against docs/admin-openapi.yaml by
// TestTrafficMatchesAdminOpenAPI.
var recorded = &apidoc.Recorder{}

type env struct {
	t       *testing.T
	st      store.Store
	svc     *admin.Service
	srv     *Server
	ts      *httptest.Server
	clock   *testkit.Clock
	reg     *prometheus.Registry
	owner   string // secrets
	oper    string
	viewer  string
	ownerID string
}

func newEnv(t *testing.T, driver string) *env {
	t.Helper()
	var (
		st  store.Store
		err error
	)
	switch driver {
	case "sqlite":
		st = testkit.SQLite(t)
	case "postgres":
		st, err = postgres.Open(context.Background(), pgtest.URL(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
	}
	cat := catalog.Demo()
	// The demo tenant has webhooks switched on (webhooks_test.go); no delivery is ever sent
	// here: no engine runs the jobs a redelivery enqueues.
	if tn, ok := cat.Tenant("demo"); ok {
		tn.WebhooksSetting = catalog.Webhooks{Enabled: true, MaxEndpoints: 3}
	}
	c := testkit.NewClock(time.Now().UTC())
	reg := prometheus.NewRegistry()
	hooks := &webhook.Service{Store: st, Catalogs: catalog.Static(cat), Now: c.Now}
	svc := admin.New(admin.Config{Store: st, Catalog: func() *catalog.Catalog { return cat }, Now: c.Now, Registerer: reg, Webhooks: hooks})
	srv := New(Config{Service: svc, Registerer: reg})
	ts := httptest.NewServer(apidoc.Middleware(srv.Handler(), recorded.Record))
	t.Cleanup(ts.Close)
	e := &env{t: t, st: st, svc: svc, srv: srv, ts: ts, clock: c, reg: reg}
	cli := admin.CLIActor("tester")
	for _, tok := range []struct {
		role   admin.Role
		secret *string
	}{{admin.RoleOwner, &e.owner}, {admin.RoleOperator, &e.oper}, {admin.RoleViewer, &e.viewer}} {
		made, err := svc.CreateToken(context.Background(), cli, admin.TokenInput{Name: string(tok.role) + "-token", Role: string(tok.role)})
		if err != nil {
			t.Fatal(err)
		}
		*tok.secret = made.Secret
		if tok.role == admin.RoleOwner {
			e.ownerID = made.ID
		}
	}
	return e
}

var idemSeq atomic.Int64

// newIdem returns a fresh Idempotency-Key.
func newIdem() string { return fmt.Sprintf("idem-%d-%d", time.Now().UnixNano(), idemSeq.Add(1)) }

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("answer %d is not JSON: %v: %s", r.status, err, r.body)
	}
	return m
}

// errParam returns the envelope's code and param.
func (r resp) errCodeParam(t *testing.T) (string, string) {
	t.Helper()
	m := r.json(t)
	e, ok := m["error"].(map[string]any)
	if !ok {
		t.Fatalf("not an error envelope: %s", r.body)
	}
	code, _ := e["code"].(string)
	param, _ := e["param"].(string)
	return code, param
}

// do sends a request with token (none when ""), and an Idempotency-Key when idem != "".
func (e *env) do(method, path, token, idem, body string) resp {
	e.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.ts.URL+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if idem != "" {
		req.Header.Set("Idempotency-Key", idem)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := e.ts.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: b}
}

// write is do for a write with a fresh Idempotency-Key.
func (e *env) write(path, token, body string) resp {
	e.t.Helper()
	return e.do(http.MethodPost, path, token, newIdem(), body)
}

// auditCount counts the audit entries.
func (e *env) auditCount() int {
	e.t.Helper()
	list, err := e.st.Audit(context.Background(), store.AuditQuery{Limit: 10_000})
	if err != nil {
		e.t.Fatal(err)
	}
	return len(list)
}

// snapshot is what a refused write must leave unchanged.
type snapshot struct {
	audit, keys, tokens int
}

func (e *env) snap() snapshot {
	e.t.Helper()
	ks, err := e.st.Keys(context.Background(), "")
	if err != nil {
		e.t.Fatal(err)
	}
	ts, err := e.st.AdminTokens(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	return snapshot{audit: e.auditCount(), keys: len(ks), tokens: len(ts)}
}

// makeKey creates an API key through the service and returns its id.
func (e *env) makeKey(unlimited bool) string {
	e.t.Helper()
	k, err := e.svc.CreateKey(context.Background(), admin.CLIActor("tester"), admin.KeyInput{Tenant: "demo", Name: "fixture", Unlimited: unlimited})
	if err != nil {
		e.t.Fatal(err)
	}
	return k.ID
}
