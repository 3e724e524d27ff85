package asset

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"mediagen/internal/keys"
	"mediagen/internal/limits"
	"mediagen/internal/store"
)

// oneAtATime lets each key of acme have one asset ingestion in flight.
const oneAtATime = `limits:
  key: {asset_ingests_in_flight: 1}
tenants:
  - id: acme
    name: Acme Films
    currency: USD
  - id: rival
    name: Rival
    currency: USD
`

func (e *env) inFlight(c keys.Caller) store.InFlight {
	e.t.Helper()
	var f store.InFlight
	err := e.db.Transact(context.Background(), func(tx store.Tx) (err error) {
		f, err = tx.InFlight(context.Background(), store.InFlightAssets, c.Key.ID, c.Tenant.ID)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

// A create over the limit is refused with nothing written; whichever way the ingestion in
// flight ends — Active, failed for good, given up after its last attempt — frees its slot.
func TestIngestionEndFreesItsInFlightSlot(t *testing.T) {
	t.Parallel()
	png := pngBytes(t, 8, 6)
	src := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(png)
		case "/down.png":
			w.WriteHeader(http.StatusBadGateway) // transient every time: retried, then given up
		default:
			http.NotFound(w, r) // final at once
		}
	}))
	t.Cleanup(src.Close) // after the parallel subtests, not when this function returns
	tests := []struct {
		name, path, status, code string
	}{
		{"active", "/ok.png", store.AssetActive, ""},
		{"failed for good", "/gone.png", store.AssetFailed, FailSourceUnreachable},
		{"given up after the last attempt", "/down.png", store.AssetFailed, FailSourceUnreachable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// The engine starts only once the refusal is seen, so the first ingestion is
			// still in flight when the second create comes.
			e := newEnv(t, envOpts{noRun: true})
			me, other := caller(oneAtATime, "acme", "key_a"), caller(oneAtATime, "rival", "key_r")
			g := e.virtualGroup(me)
			body := fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":"Image"}`, g, src.URL+tt.path)
			first := e.createAsset(me, g, src.URL+tt.path, "Image")

			_, err := e.op(me, VirtualPrefix+"/assets/create", body)
			var ref *limits.Refusal
			if !errors.As(err, &ref) || apiCode(err) != limits.CodeAssetsInFlight || ref.RetryAfter != 5 ||
				ref.Scope != limits.ScopeKey || ref.Limit != limits.LimitInFlight {
				t.Fatalf("create over the limit: %v (%+v)", err, ref)
			}
			if _, n, err := e.db.Assets(t.Context(), store.AssetQuery{TenantID: "acme"}); err != nil || n != 1 {
				t.Fatalf("%d assets after a refusal (%v), want 1", n, err)
			}
			if n := e.ingestJobs(); n != 1 {
				t.Fatalf("%d ingestion jobs after a refusal, want 1", n)
			}
			wantInFlightCounts(t, e.inFlight(me), 1, 1)
			e.createAsset(other, e.virtualGroup(other), src.URL+tt.path, "Image") // another tenant is not affected

			e.start()
			if m := e.wait(me, first); m["Status"] != tt.status || (tt.code != "" && m["FailureCode"] != tt.code) {
				t.Fatalf("ingestion ended %v", m)
			}
			wantInFlightCounts(t, e.inFlight(me), 0, 0)
			e.createAsset(me, g, src.URL+tt.path, "Image")
			wantInFlightCounts(t, e.inFlight(me), 1, 1)
		})
	}
}

func (e *env) ingestJobs() int {
	e.t.Helper()
	counts, err := e.db.CountJobs(context.Background(), e.clock.Now())
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, c := range counts {
		if c.Kind == IngestKind {
			n += c.N
		}
	}
	return n
}

func wantInFlightCounts(t *testing.T, got store.InFlight, key, tenant int) {
	t.Helper()
	if got.Key != key || got.Tenant != tenant {
		t.Errorf("in flight: key %d tenant %d, want %d and %d", got.Key, got.Tenant, key, tenant)
	}
}

// Deleting an asset while it is processed ends its ingestion: the slot is free at once, and
// nothing after it (the run of the deleted asset, stopped or finding it gone) frees it again.
func TestDeleteDuringProcessingFreesItsInFlightSlot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	me := caller(oneAtATime, "acme", "key_a")
	g := e.virtualGroup(me)
	id := e.createAsset(me, g, e.url("slow"), "Image")
	e.must(me, VirtualPrefix+"/assets/delete", `{"Id":"`+id+`"}`)
	wantInFlightCounts(t, e.inFlight(me), 0, 0)
	next := e.createAsset(me, g, e.url("slow"), "Image")
	e.jobs.Stop() // both runs end; neither records an outcome
	wantInFlightCounts(t, e.inFlight(me), 1, 1)
	if a, err := e.db.Asset(t.Context(), next); err != nil || a.Status != store.AssetProcessing {
		t.Fatalf("the next asset: %+v %v", a, err)
	}
}
