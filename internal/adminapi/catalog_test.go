package adminapi

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/catalog"
	"mediagen/internal/store"
)

// fakeReloader stands for serve's reload: it takes the next version, or refuses with the
// problems it is given.
type fakeReloader struct {
	calls    atomic.Int64
	problems []string
	handled  atomic.Int64
}

func (f *fakeReloader) ReloadCatalog(context.Context) (admin.Reloaded, error) {
	f.calls.Add(1)
	if f.problems != nil {
		return admin.Reloaded{}, &catalog.Problems{File: "c.yaml", List: f.problems}
	}
	return admin.Reloaded{ReplicaID: "r1", Hash: "bbbbbbbbbbbb", PreviousHash: "aaaaaaaaaaaa", LoadedAt: time.Now()}, nil
}

func (f *fakeReloader) Handled(id int64) { f.handled.Store(id) }

// POST /admin/v1/catalog/reload is the owner's: it reloads this replica, records a request for
// the others and audits it; a replay does not reload again; a refused catalog is a 400 that
// lists every problem and writes nothing. GET /admin/v1/catalog shows every replica's
// version.
func TestCatalogReloadAndVersionsThroughTheAPI(t *testing.T) {
	e := newEnv(t, "sqlite")
	ok := &fakeReloader{}
	e.srv.CatalogRoutes(ok)
	ctx := context.Background()
	now := time.Now().UTC()
	for _, r := range []store.CatalogReplica{
		{ReplicaID: "r1", Role: "all", Hash: "aaaaaaaaaaaa", LoadedAt: now, HeartbeatAt: now},
		{ReplicaID: "r2", Role: "api", Hash: "aaaaaaaaaaaa", LoadedAt: now, HeartbeatAt: now},
	} {
		if err := e.st.ReportCatalog(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if r := e.do("GET", "/admin/v1/catalog", e.viewer, "", ""); r.status != 200 || r.json(t)["in_sync"] != true {
		t.Fatalf("catalog before any reload: %d %s", r.status, r.body)
	}
	for _, tok := range []string{e.viewer, e.oper} {
		if r := e.do("POST", "/admin/v1/catalog/reload", tok, newIdem(), ""); r.status != 403 {
			t.Errorf("reload below owner: %d %s", r.status, r.body)
		}
	}
	if ok.calls.Load() != 0 {
		t.Fatal("a refused role reloaded")
	}
	idem := newIdem()
	first := e.do("POST", "/admin/v1/catalog/reload", e.owner, idem, "")
	if first.status != 200 || !strings.Contains(string(first.body), `"hash":"bbbbbbbbbbbb"`) {
		t.Fatalf("reload: %d %s", first.status, first.body)
	}
	request := int64(first.json(t)["request"].(float64))
	if request < 1 || ok.handled.Load() != request {
		t.Errorf("request %d, handled %d", request, ok.handled.Load())
	}
	if again := e.do("POST", "/admin/v1/catalog/reload", e.owner, idem, ""); again.status != 200 || string(again.body) != string(first.body) || ok.calls.Load() != 1 {
		t.Errorf("replay: %d %s after %d reloads", again.status, again.body, ok.calls.Load())
	}
	if r := e.do("GET", "/admin/v1/audit?action=catalog.reload", e.viewer, "", ""); r.status != 200 || !strings.Contains(string(r.body), `"target":{"type":"catalog","id":"bbbbbbbbbbbb"}`) {
		t.Errorf("audit of the reload: %d %s", r.status, r.body)
	}
	status := e.do("GET", "/admin/v1/catalog", e.viewer, "", "")
	if status.status != 200 || status.json(t)["in_sync"] != false || strings.Count(string(status.body), `"state":"pending"`) != 2 {
		t.Errorf("catalog after a request no replica handled yet: %d %s", status.status, status.body)
	}

	bad := &fakeReloader{problems: []string{`line 4: unknown key "colour"`, `tenant "acme" alias "v": unknown upstream "x"`, "upstream ark1: the API key environment variable K is missing or empty"}}
	e2 := newEnv(t, "sqlite")
	e2.srv.CatalogRoutes(bad)
	r := e2.do("POST", "/admin/v1/catalog/reload", e2.owner, newIdem(), "{}")
	if r.status != 400 || r.json(t)["error"].(map[string]any)["code"] != "catalog_refused" {
		t.Fatalf("refused catalog: %d %s", r.status, r.body)
	}
	for _, p := range bad.problems {
		if !strings.Contains(r.json(t)["error"].(map[string]any)["message"].(string), p) {
			t.Errorf("the answer does not list %q: %s", p, r.body)
		}
	}
	if latest, err := e2.st.LatestCatalogReload(ctx); err != nil || latest != 0 {
		t.Errorf("a refused reload recorded request %d, %v", latest, err)
	}
	if a := e2.do("GET", "/admin/v1/audit?action=catalog.reload", e2.viewer, "", ""); strings.Contains(string(a.body), "catalog.reload") {
		t.Errorf("a refused reload was audited as done: %s", a.body)
	}
}
