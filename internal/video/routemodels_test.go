package video

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"mediagen/internal/contract"
	"mediagen/internal/provider"
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
