package asset

import (
	"context"
	"encoding/hex"
	"time"

	"mediagen/internal/logctx"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// announce writes an event in tx, the transaction of the state change it announces: never
// lost, never sent before that commits. It returns the event's id, "" when nothing was
// written (no Events, the tenant's switch off, no subscriber).
func (s *Service) announce(ctx context.Context, tx store.Tx, e webhook.Event) (string, error) {
	if s.cfg.Events == nil || e.TenantID == "" {
		return "", nil // an operator's asset belongs to no tenant: nobody to tell
	}
	e.RequestID = logctx.RequestID(ctx)
	return s.cfg.Events.Announce(ctx, tx, e)
}

// assetEvent is the event of an asset that left Processing: asset.ready when it is Active,
// asset.failed when it failed ("" for any other status: nothing is announced).
func assetEvent(tenantID, keyID, assetID, status string, at time.Time) webhook.Event {
	typ := ""
	switch status {
	case store.AssetActive:
		typ = webhook.AssetReady
	case store.AssetFailed:
		typ = webhook.AssetFailed
	}
	return webhook.Event{TenantID: tenantID, KeyID: keyID, Type: typ, ObjectID: assetID, At: at}
}

// announceAsset is announce of assetEvent, nothing for a status that is not an outcome.
func (s *Service) announceAsset(ctx context.Context, tx store.Tx, e webhook.Event) (string, error) {
	if e.Type == "" {
		return "", nil
	}
	return s.announce(ctx, tx, e)
}

// verificationEvent is the event of a finished verification session: completed when it
// passed (naming the group it made), failed when declined. It carries the SHA-256 of the
// VerifyToken, which the tenant can match to the token it holds, never the token.
func verificationEvent(v store.VerifySession, status, groupID string, at time.Time) webhook.Event {
	typ := webhook.VerificationFailed
	if status == store.VerifyPassed {
		typ = webhook.VerificationCompleted
	}
	return webhook.Event{TenantID: v.TenantID, KeyID: v.KeyID, Type: typ, ObjectID: v.ID, At: at,
		Data: webhook.Data{GroupID: groupID, VerifyTokenSHA256: hex.EncodeToString(v.TokenHash)}}
}

// wake tells the sender an event committed.
func (s *Service) wake(announced string) {
	if announced != "" && s.cfg.Events != nil {
		s.cfg.Events.Wake()
	}
}
