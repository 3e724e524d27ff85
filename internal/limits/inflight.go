package limits

import (
	"context"
	"fmt"

	"mediagen/internal/catalog"
	"mediagen/internal/store"
)

// admission is what differs between the kinds of in-flight work at admission: which catalog
// limits bound the kind, and what a refusal says. Everything else is one mechanism (Admit).
type admission struct {
	limits func(catalog.Limits) (key, tenant catalog.Count)
	code   string
	retry  int    // Retry-After, seconds
	what   string // the work, as the refusal's message names it
}

// admissions holds every kind counted in flight (store.InFlightKinds).
var admissions = map[store.InFlightKind]admission{
	store.InFlightTasks: {
		limits: func(l catalog.Limits) (catalog.Count, catalog.Count) {
			return l.Key.VideoTasksInFlight, l.Tenant.VideoTasksInFlight
		},
		code: CodeTasksInFlight, retry: retryTasks, what: "video tasks queued or in progress",
	},
	store.InFlightSpeeches: {
		limits: func(l catalog.Limits) (catalog.Count, catalog.Count) {
			return l.Key.SpeechInFlight, l.Tenant.SpeechInFlight
		},
		code: CodeSpeechInFlight, retry: retrySpeech, what: "speech generations running",
	},
	store.InFlightAssets: {
		limits: func(l catalog.Limits) (catalog.Count, catalog.Count) {
			return l.Key.AssetIngestsInFlight, l.Tenant.AssetIngestsInFlight
		},
		code: CodeAssetsInFlight, retry: retryAssets, what: "assets processing",
	},
}

// Admit runs in the transaction that has just created a record of kind for the key (a video
// task with its job, a speech record before its reservation and before the engine is called,
// an asset with its ingestion job): it refuses the record, so the transaction rolls back with
// nothing written or reserved, when the key or its tenant would then have more unfinished work
// of the kind than its limit. The count comes from the database and includes the new record,
// so it is exact across replicas.
func Admit(ctx context.Context, tx store.Tx, lim catalog.Limits, kind store.InFlightKind, keyID, tenantID string) error {
	a, ok := admissions[kind]
	if !ok {
		return fmt.Errorf("admit: no in-flight limit for kind %q", kind)
	}
	k, t := a.limits(lim)
	if k.Unlimited() && t.Unlimited() {
		return nil
	}
	n, err := tx.InFlight(ctx, kind, keyID, tenantID)
	if err != nil {
		return fmt.Errorf("admit %s: %w", kind, err)
	}
	return a.over(n, k, t)
}

// over refuses when a count, which includes the new record, exceeds its limit.
func (a admission) over(n store.InFlight, k, t catalog.Count) error {
	if !k.Unlimited() && n.Key > int(k) {
		return refuse(ScopeKey, LimitInFlight, a.code, a.retry,
			fmt.Sprintf("This API key already has %d %s, its limit. Retry when one has finished.", k, a.what))
	}
	if !t.Unlimited() && n.Tenant > int(t) {
		return refuse(ScopeTenant, LimitInFlight, a.code, a.retry,
			fmt.Sprintf("This account's API keys together already have %d %s, the account's limit. Retry when one has finished.", t, a.what))
	}
	return nil
}
