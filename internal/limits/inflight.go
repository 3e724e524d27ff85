package limits

import (
	"context"
	"fmt"

	"mediagen/internal/catalog"
	"mediagen/internal/store"
)

// AdmitTask runs in the transaction that has just created a video task for the key: it
// refuses the task, so the transaction rolls back with nothing written or reserved, when the
// key or its tenant would then have more unfinished tasks than its limit. The count comes
// from the database and includes the new task, so it is exact across replicas.
func AdmitTask(ctx context.Context, tx store.Tx, lim catalog.Limits, keyID, tenantID string) error {
	k, t := lim.Key.VideoTasksInFlight, lim.Tenant.VideoTasksInFlight
	if k.Unlimited() && t.Unlimited() {
		return nil
	}
	n, err := tx.TasksInFlight(ctx, keyID, tenantID)
	if err != nil {
		return err
	}
	return over(n, k, t, CodeTasksInFlight, retryTasks, "video tasks queued or in progress")
}

// AdmitSpeech is AdmitTask for a speech generation: it runs after CreateSpeech, before the
// reservation and before the engine is called.
func AdmitSpeech(ctx context.Context, tx store.Tx, lim catalog.Limits, keyID, tenantID string) error {
	k, t := lim.Key.SpeechInFlight, lim.Tenant.SpeechInFlight
	if k.Unlimited() && t.Unlimited() {
		return nil
	}
	n, err := tx.SpeechesInFlight(ctx, keyID, tenantID)
	if err != nil {
		return err
	}
	return over(n, k, t, CodeSpeechInFlight, retrySpeech, "speech generations running")
}

// AdmitAsset is AdmitTask for an asset ingestion: it runs after CreateAsset and the
// enqueueing of its ingestion job, so a refusal leaves neither.
func AdmitAsset(ctx context.Context, tx store.Tx, lim catalog.Limits, keyID, tenantID string) error {
	k, t := lim.Key.AssetIngestsInFlight, lim.Tenant.AssetIngestsInFlight
	if k.Unlimited() && t.Unlimited() {
		return nil
	}
	n, err := tx.AssetsInFlight(ctx, keyID, tenantID)
	if err != nil {
		return err
	}
	return over(n, k, t, CodeAssetsInFlight, retryAssets, "assets processing")
}

// over refuses when a count, which includes the new record, exceeds its limit.
func over(n store.InFlight, k, t catalog.Count, code string, retry int, what string) error {
	if !k.Unlimited() && n.Key > int(k) {
		return refuse(ScopeKey, LimitInFlight, code, retry,
			fmt.Sprintf("This API key already has %d %s, its limit. Retry when one has finished.", k, what))
	}
	if !t.Unlimited() && n.Tenant > int(t) {
		return refuse(ScopeTenant, LimitInFlight, code, retry,
			fmt.Sprintf("This account's API keys together already have %d %s, the account's limit. Retry when one has finished.", t, what))
	}
	return nil
}
