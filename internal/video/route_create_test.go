package video

import (
	"encoding/json"
	"errors"
	"testing"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

const routedCatalog = `upstreams:
  - name: ark-cn
    kind: ark
    base_url: https://ark.example.com/api/v3
    api_key_env: K1
  - name: openai-main
    kind: openai
    base_url: https://api.example.com/v1
    api_key_env: K2
tenants:
  - id: acme
    name: Acme
    currency: USD
    aliases:
      - alias: acme-fast
        product: native
        family: fast-2.0
        upstreams: [ark-cn, openai-main]
        strategy: weighted
        weights: [3, 1]
        model: m
    rates:
      native: {acme-fast: 1.5}
`

// A routed alias accepts only what every one of its accounts can do (a task may run on any),
// and the accepted task carries the accounts, strategy and weights.
func TestRoutedAliasRefusesWhatAnyAccountCannotDo(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Parse("c.yaml", []byte(routedCatalog))
	if err != nil {
		t.Fatal(err)
	}
	tenant, _ := cat.Tenant("acme")
	c := keys.Caller{Key: store.Key{ID: "key_1", TenantID: "acme"}, Tenant: tenant, Catalog: cat}
	tests := []struct {
		name, body, param string
	}{
		{"480p is Ark's only: refused", `{"model":"acme-fast","prompt":"p","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`, "metadata.resolution"},
		{"5 seconds is Ark's only: refused", `{"model":"acme-fast","prompt":"p","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`, "metadata.duration"},
		{"what both do is accepted", `{"model":"acme-fast","prompt":"p","metadata":{"duration":4,"resolution":"720p","ratio":"16:9"}}`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newFakeStore(c.Key.ID, 100*money.Scale)
			task, _, err := newService(st, 0).Create(t.Context(), c, []byte(tt.body))
			if tt.param != "" {
				var ae *apierr.Error
				if !errors.As(err, &ae) || ae.Param != tt.param {
					t.Fatalf("create: %v, want refused on %s", err, tt.param)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var stored Stored
			if err := json.Unmarshal(st.tasks[task.ID].Request, &stored); err != nil {
				t.Fatal(err)
			}
			if stored.Upstream != "ark-cn" || len(stored.Upstreams) != 2 || stored.Strategy != "weighted" || len(stored.Weights) != 2 {
				t.Errorf("stored binding %+v", stored)
			}
		})
	}
}
