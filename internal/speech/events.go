package speech

import (
	"context"
	"time"

	"mediagen/internal/logctx"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// announce writes the settled record's event (speech.completed or speech.failed) in tx, the
// transaction that finishes and settles it, so the outcome is announced once and never
// before it commits. It returns the event's id, "" when nothing was written (no Events, the
// tenant's switch off, no subscriber).
func (s *Service) announce(ctx context.Context, tx store.Tx, rec store.Speech, status string, at time.Time) (string, error) {
	if s.Events == nil {
		return "", nil
	}
	typ := webhook.SpeechFailed
	if status == store.SpeechCompleted {
		typ = webhook.SpeechCompleted
	}
	// The client_request_id is the request's handle: speech has no read by id, and a replay
	// with it collects the audio (or the failure) the event announces.
	return s.Events.Announce(ctx, tx, webhook.Event{TenantID: rec.TenantID, KeyID: rec.KeyID, RequestID: logctx.RequestID(ctx),
		Type: typ, ObjectID: rec.ID, At: at, Data: webhook.Data{ClientRequestID: rec.ClientRequestID}})
}

// wake tells the sender an event committed.
func (s *Service) wake(announced string) {
	if announced != "" && s.Events != nil {
		s.Events.Wake()
	}
}
