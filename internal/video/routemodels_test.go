package video

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/contract"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// A routed task that leaves its account for another sends the other account's model: an
// alias over accounts of two kinds names the video differently on each.
func TestRoutedFallbackSendsTheNextAccountsModel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		a      []string
		wantA  []string
		wantB  []string
		models map[string]string
	}{
		{"a refused key moves the task and its model to b", []string{ansRefused}, []string{"model-a"}, []string{"model-b"}, map[string]string{"b": "model-b"}},
		{"a 429 moves the task and its model to b", []string{ansLimited}, []string{"model-a"}, []string{"model-b"}, map[string]string{"b": "model-b"}},
		{"an account without its own model runs the alias's", []string{ansRefused}, []string{"model-a"}, []string{"model-a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Unix(1_800_000_000, 0)
			a, b := &scriptAccount{script: tt.a, idempotent: true}, &scriptAccount{idempotent: true}
			r := newRouteRun(t, map[string]provider.Generator{"a": a, "b": b}, []string{"a", "b"}, &now)
			req, err := json.Marshal(Stored{Request: &contract.VideoRequest{Route: contract.RouteNative, Prompt: "p",
				Native: &contract.NativeParams{Duration: 5, Resolution: "480p", Ratio: "16:9"}},
				Upstream: "a", Upstreams: []string{"a", "b"}, Strategy: "priority", Model: "model-a", Models: tt.models})
			if err != nil {
				t.Fatal(err)
			}
			r.c.Request = req
			if _, err := r.step(); err != nil {
				t.Fatal(err)
			}
			if st := r.state(); st.Account != "b" || st.GenJob == "" {
				t.Fatalf("bound to %q job %q, want b's job", st.Account, st.GenJob)
			}
			if !slices.Equal(a.models, tt.wantA) || !slices.Equal(b.models, tt.wantB) {
				t.Errorf("a was sent %v, b %v; want %v and %v", a.models, b.models, tt.wantA, tt.wantB)
			}
			if u := Upstreams(r.c.Request, r.c.State); u.Model != tt.wantB[0] {
				t.Errorf("the operator's view names model %q, the task runs %q", u.Model, tt.wantB[0])
			}
		})
	}
}

// kindsCatalog is docs/upstreams.md's "Routing" example: one alias over a Kling and a
// DashScope account, each with its own model and no alias model.
const kindsCatalog = `upstreams:
  - name: kling-main
    kind: kling
    base_url: https://api-singapore.klingai.com
    access_key_env: KLING_ACCESS_KEY
    secret_key_env: KLING_SECRET_KEY
  - name: wan-intl
    kind: dashscope
    base_url: https://dashscope-intl.aliyuncs.com
    api_key_env: DASHSCOPE_API_KEY
tenants:
  - id: acme
    name: Acme
    currency: USD
    aliases:
      - alias: acme-any
        product: native
        family: standard-2.0
        upstreams:
          - {name: kling-main, model: kling-v2-1}
          - {name: wan-intl, model: wan2.6-t2v}
    rates:
      native: {acme-any: 1.5}
`

// Over Kling and DashScope each task is given the accounts that can make it, each as its
// own model; what neither can make is refused.
func TestRoutedAliasOverKlingAndDashScopeBindsByCapability(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Parse("c.yaml", []byte(kindsCatalog))
	if err != nil {
		t.Fatal(err)
	}
	tenant, _ := cat.Tenant("acme")
	c := keys.Caller{Key: store.Key{ID: "key_1", TenantID: "acme"}, Tenant: tenant, Catalog: cat}
	frames := `,"content":[{"type":"image_url","role":"first_frame","image_url":{"url":"https://cdn.example.com/a.png"}},{"type":"image_url","role":"last_frame","image_url":{"url":"https://cdn.example.com/b.png"}}]`
	tests := []struct {
		name, meta, param string
		want              Stored
	}{
		{"5 s 1080p text runs on either, each as its model", `"duration":5,"resolution":"1080p","ratio":"16:9"`, "",
			Stored{Upstream: "kling-main", Model: "kling-v2-1", Upstreams: []string{"kling-main", "wan-intl"}, Strategy: "priority",
				Models: map[string]string{"wan-intl": "wan2.6-t2v"}}},
		{"480p is DashScope's alone", `"duration":5,"resolution":"480p","ratio":"16:9"`, "",
			Stored{Upstream: "wan-intl", Model: "wan2.6-t2v"}},
		{"15 seconds is DashScope's alone", `"duration":15,"resolution":"720p","ratio":"16:9"`, "",
			Stored{Upstream: "wan-intl", Model: "wan2.6-t2v"}},
		{"a first and a last frame are Kling's alone", `"duration":5,"resolution":"1080p","ratio":"adaptive"` + frames, "",
			Stored{Upstream: "kling-main", Model: "kling-v2-1"}},
		{"what neither makes is refused", `"duration":5,"resolution":"1080p","ratio":"16:9","output_format":"mov"`, "metadata.output_format", Stored{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			st := newFakeStore(c.Key.ID, 100*money.Scale)
			task, _, err := newService(st, 0).Create(t.Context(), c, []byte(`{"model":"acme-any","prompt":"p","metadata":{`+tt.meta+`}}`))
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
			got := Stored{Upstream: stored.Upstream, Model: stored.Model, Upstreams: stored.Upstreams, Strategy: stored.Strategy, Models: stored.Models}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("stored binding %+v, want %+v", got, tt.want)
			}
		})
	}
}
