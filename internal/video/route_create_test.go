package video

import (
	"encoding/json"
	"errors"
	"reflect"
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
        upstreams: [{name: openai-main, model: sora-2}, ark-cn]
        strategy: weighted
        weights: [1, 3]
        model: seedance-1-0-pro
    rates:
      native: {acme-fast: 1.5}
`

// A routed alias admits what at least one of its accounts can do, and the accepted task is
// given only the accounts that can, each with its own model: a task never reaches an account
// that would refuse it, nor sends one account's model to another.
func TestRoutedAliasGivesEachTaskOnlyTheAccountsThatCanServeIt(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Parse("c.yaml", []byte(routedCatalog))
	if err != nil {
		t.Fatal(err)
	}
	tenant, _ := cat.Tenant("acme")
	c := keys.Caller{Key: store.Key{ID: "key_1", TenantID: "acme"}, Tenant: tenant, Catalog: cat}
	tests := []struct {
		name, body, param string
		want              Stored // the binding: Upstream, Model, Upstreams, Weights, Models
	}{
		{"480p is Ark's only: accepted on Ark alone, with Ark's model",
			`{"model":"acme-fast","prompt":"p","metadata":{"duration":4,"resolution":"480p","ratio":"16:9"}}`, "",
			Stored{Upstream: "ark-cn", Model: "seedance-1-0-pro"}},
		{"5 seconds is Ark's only: accepted on Ark alone",
			`{"model":"acme-fast","prompt":"p","metadata":{"duration":5,"resolution":"720p","ratio":"16:9"}}`, "",
			Stored{Upstream: "ark-cn", Model: "seedance-1-0-pro"}},
		{"what both do is routed over both, each with its model and weight",
			`{"model":"acme-fast","prompt":"p","metadata":{"duration":4,"resolution":"720p","ratio":"16:9"}}`, "",
			Stored{Upstream: "openai-main", Model: "sora-2", Upstreams: []string{"openai-main", "ark-cn"}, Strategy: "weighted",
				Weights: []int{1, 3}, Models: map[string]string{"ark-cn": "seedance-1-0-pro"}}},
		{"what neither does is refused with the first account's reason",
			`{"model":"acme-fast","prompt":"p","metadata":{"duration":4,"resolution":"720p","ratio":"16:9","output_format":"mov"}}`, "metadata.output_format", Stored{}},
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
			got := Stored{Upstream: stored.Upstream, Model: stored.Model, Upstreams: stored.Upstreams, Strategy: stored.Strategy,
				Weights: stored.Weights, Models: stored.Models}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("stored binding %+v, want %+v", got, tt.want)
			}
		})
	}
}
