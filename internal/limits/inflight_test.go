package limits

import (
	"context"
	"errors"
	"strings"
	"testing"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/store"
)

// countingTx answers InFlight with fixed counts and records what it was asked.
type countingTx struct {
	store.Tx
	n     store.InFlight
	asked []store.InFlightKind
}

func (t *countingTx) InFlight(_ context.Context, kind store.InFlightKind, keyID, tenantID string) (store.InFlight, error) {
	t.asked = append(t.asked, kind)
	if keyID != "key_a" || tenantID != "acme" {
		return store.InFlight{}, errors.New("wrong key or tenant")
	}
	return t.n, nil
}

// inFlightLimits sets one kind's key and tenant limits, leaving every other kind unlimited.
func inFlightLimits(kind store.InFlightKind, key, tenant catalog.Count) catalog.Limits {
	var l catalog.Limits
	for _, c := range []*catalog.Count{&l.Key.VideoTasksInFlight, &l.Tenant.VideoTasksInFlight, &l.Key.SpeechInFlight,
		&l.Tenant.SpeechInFlight, &l.Key.AssetIngestsInFlight, &l.Tenant.AssetIngestsInFlight} {
		*c = catalog.Unlimited
	}
	switch kind {
	case store.InFlightTasks:
		l.Key.VideoTasksInFlight, l.Tenant.VideoTasksInFlight = key, tenant
	case store.InFlightSpeeches:
		l.Key.SpeechInFlight, l.Tenant.SpeechInFlight = key, tenant
	case store.InFlightAssets:
		l.Key.AssetIngestsInFlight, l.Tenant.AssetIngestsInFlight = key, tenant
	}
	return l
}

func TestAdmitRefusesOverEachKindsOwnLimit(t *testing.T) {
	kinds := []struct {
		kind  store.InFlightKind
		code  string
		retry int
		what  string
	}{
		{store.InFlightTasks, CodeTasksInFlight, 5, "video tasks queued or in progress"},
		{store.InFlightSpeeches, CodeSpeechInFlight, 2, "speech generations running"},
		{store.InFlightAssets, CodeAssetsInFlight, 5, "assets processing"},
	}
	if len(kinds) != len(store.InFlightKinds) {
		t.Fatalf("%d kinds tested, store has %d", len(kinds), len(store.InFlightKinds))
	}
	counts := []struct {
		name  string
		n     store.InFlight
		scope string // "" when admitted
	}{
		{"admitted at the limits", store.InFlight{Key: 3, Tenant: 7}, ""},
		{"refused over the key's", store.InFlight{Key: 4, Tenant: 4}, ScopeKey},
		{"refused over the tenant's", store.InFlight{Key: 1, Tenant: 8}, ScopeTenant},
		{"refused for the key when over both", store.InFlight{Key: 4, Tenant: 8}, ScopeKey},
	}
	for _, k := range kinds {
		for _, c := range counts {
			t.Run(string(k.kind)+" "+c.name, func(t *testing.T) {
				tx := &countingTx{n: c.n}
				err := Admit(t.Context(), tx, inFlightLimits(k.kind, 3, 7), k.kind, "key_a", "acme")
				if len(tx.asked) != 1 || tx.asked[0] != k.kind {
					t.Errorf("counted %v, want %s once", tx.asked, k.kind)
				}
				if c.scope == "" {
					if err != nil {
						t.Fatalf("refused: %v", err)
					}
					return
				}
				var r *Refusal
				if !errors.As(err, &r) {
					t.Fatalf("got %v, want a refusal", err)
				}
				e := apierr.As(err)
				if r.Scope != c.scope || r.Limit != LimitInFlight || r.RetryAfter != k.retry || e == nil ||
					e.Kind != apierr.KindRateLimit || e.Code != k.code || !strings.Contains(e.Message, k.what) {
					t.Errorf("refusal %+v %+v, want scope %s, code %s, Retry-After %d, naming %q", r, e, c.scope, k.code, k.retry, k.what)
				}
			})
		}
	}
}

func TestAdmitUnlimitedKindReadsNoCount(t *testing.T) {
	for _, kind := range store.InFlightKinds {
		tx := &countingTx{n: store.InFlight{Key: 1 << 30, Tenant: 1 << 30}}
		if err := Admit(t.Context(), tx, inFlightLimits(kind, catalog.Unlimited, catalog.Unlimited), kind, "key_a", "acme"); err != nil || len(tx.asked) != 0 {
			t.Errorf("%s unlimited: %v, counted %v; want admitted without a count", kind, err, tx.asked)
		}
	}
}

func TestAdmitUnknownKindFails(t *testing.T) {
	tx := &countingTx{}
	err := Admit(t.Context(), tx, inFlightLimits(store.InFlightTasks, 1, 1), "upstream", "key_a", "acme")
	if err == nil || len(tx.asked) != 0 {
		t.Errorf("unknown kind: %v, counted %v; want an error and no count", err, tx.asked)
	}
	var r *Refusal
	if errors.As(err, &r) {
		t.Errorf("unknown kind refused as a limit: %v", err)
	}
}
