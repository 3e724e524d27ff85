package httpapi

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/asset"
	"mediagen/internal/catalog"
	"mediagen/internal/store"
)

// ingestJobs counts the asset ingestion jobs in the store, running or not.
func ingestJobs(t *testing.T, e *assetEnv) int {
	t.Helper()
	counts, err := e.store.CountJobs(t.Context(), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range counts {
		if c.Kind == asset.IngestKind {
			n += c.N
		}
	}
	return n
}

// stalledSource is an HTTPS source that does not answer until the test ends: an asset
// fetched from it stays Processing for as long as the test needs. httptest's servers share
// one certificate, so the asset env's fetcher trusts it. The handlers are released before
// Close, which would otherwise wait for the fetches it holds.
func stalledSource(t *testing.T) string {
	t.Helper()
	done := make(chan struct{})
	s := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(func() { close(done); s.Close() })
	return s.URL + "/slow.png"
}

func TestAssetIngestsInFlightLimitRefusesWithoutWriting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		key, tenant map[string]string
		second      bool // the third create comes from a second key of the tenant
		scope       string
	}{
		{"key limit", map[string]string{"asset_ingests_in_flight": "2"}, nil, false, "key"},
		{"tenant limit across keys", nil, map[string]string{"asset_ingests_in_flight": "2"}, true, "tenant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newAssetEnv(t)
			e.srv.catalogs = catalog.Static(limitedCatalog(t, tt.key, tt.tenant))
			src := stalledSource(t)
			group := func(key string) string {
				return e.ok(key, vPrefix+"/asset-groups/create", `{"Name":"g"}`, 200)["Id"].(string)
			}
			create := func(key, g string) response {
				return e.call(key, vPrefix+"/assets/create", fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":"Image"}`, g, src))
			}
			g := group(e.acme)
			var ids []string
			for range 2 {
				r := create(e.acme, g)
				if r.status != 202 {
					t.Fatalf("create: %d %s", r.status, r.body)
				}
				var m map[string]any
				if err := json.Unmarshal(r.body, &m); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, m["Id"].(string))
			}
			key := e.acme
			if tt.second {
				key, _ = e.newKey("acme", 0, false)
			}
			r := create(key, g)
			checkEnvelope(t, r, 429, "rate_limit_error", "too_many_assets_in_flight")
			wantRetryAfter(t, r, "5")
			if got := e.metric(t, `mediagen_rate_limited_total{limit="in_flight",scope="`+tt.scope+`"}`); got != "1" {
				t.Errorf("in-flight refusals counted %s, want 1", got)
			}
			// Nothing written: no asset (the group still holds two) and no ingestion job.
			if _, n, err := e.store.Assets(t.Context(), store.AssetQuery{TenantID: "acme"}); err != nil || n != 2 {
				t.Errorf("%d assets stored after a refusal (%v), want 2", n, err)
			}
			if n := ingestJobs(t, e); n != 2 {
				t.Errorf("%d ingestion jobs after a refusal, want 2", n)
			}
			// Another tenant is not affected.
			if r := create(e.limited, group(e.limited)); r.status != 202 {
				t.Errorf("another tenant refused: %d %s", r.status, r.body)
			}
			// When an ingestion ends (here: its asset deleted while Processing), the next
			// create is admitted, and the one after it refused again.
			e.ok(e.acme, vPrefix+"/assets/delete", fmt.Sprintf(`{"Id":%q}`, ids[0]), 200)
			if r := create(key, g); r.status != 202 {
				t.Errorf("refused after an ingestion ended: %d %s", r.status, r.body)
			}
			checkEnvelope(t, create(key, g), 429, "rate_limit_error", "too_many_assets_in_flight")
		})
	}
}
