// Package webhook delivers task outcomes to the endpoints a tenant registered, when the
// operator switched webhooks on for the tenant (catalog: webhooks.enabled). Endpoints are
// managed through /v1/webhook_endpoints in the shape of OpenAI's API (endpoints.go); events
// are written as deliveries and jobs in the transaction of the state change they announce
// (Announce); each delivery is a job of the one engine, signed with the Standard Webhooks
// scheme and sent through the SSRF-safe client (deliver.go). See docs/webhooks.md.
package webhook

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/catalog"
	"mediagen/internal/idgen"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
)

// Kind is the job kind of a delivery.
const Kind = "webhook.deliver"

// Event types: OpenAI's two for video tasks, and ours for the routes OpenAI lacks
// (docs/webhooks.md#events).
const (
	VideoCompleted = "video.completed"
	VideoFailed    = "video.failed"
	// A speech generation settled: completed and charged, or failed and refunded.
	SpeechCompleted = "speech.completed"
	SpeechFailed    = "speech.failed"
	// An asset of the library finished processing: Active (usable in tasks) or Failed.
	AssetReady  = "asset.ready"
	AssetFailed = "asset.failed"
	// A real-human verification session finished: passed (its group made) or declined.
	VerificationCompleted = "asset.verification.completed"
	VerificationFailed    = "asset.verification.failed"
)

// EventTypes are the types an endpoint may subscribe to: the ones this service emits.
var EventTypes = []string{VideoCompleted, VideoFailed, SpeechCompleted, SpeechFailed, AssetReady, AssetFailed,
	VerificationCompleted, VerificationFailed}

// eventTypesList names EventTypes in a refusal.
var eventTypesList = strings.Join(EventTypes, ", ")

// Announcer writes an event in the transaction of the state change it announces, and wakes
// its sender once that committed: what a service that emits events needs (Service).
type Announcer interface {
	Announce(ctx context.Context, tx store.Tx, e Event) (string, error)
	Wake()
}

// Store is what the service needs of the database.
type Store interface {
	Transact(ctx context.Context, fn func(store.Tx) error) error
	store.WebhookStore
}

// Service manages endpoints and delivers events.
type Service struct {
	Store    Store
	Catalogs *catalog.Holder
	// Client sends deliveries: the SSRF-safe client (public addresses only, every redirect
	// hop rechecked, bounded body and timeouts). Tests build it with AllowLoopback.
	Client *safefetch.Client
	Logger *slog.Logger
	Now    func() time.Time
	// Notify wakes the engine's producer of Kind after an event committed (nil: it polls).
	Notify func(kind string)
	// Schedule overrides the retry schedule (tests); nil: DefaultSchedule.
	Schedule *Schedule
	// Timeout bounds one attempt, request sent to answer read (0: 15 s).
	Timeout time.Duration
	// DisableAfter is the run of deliveries given up in a row that disables an endpoint
	// (0: DefaultDisableAfter).
	DisableAfter int
	// LogRetention is how long an ended delivery stays in the log (0: DefaultLogRetention).
	LogRetention time.Duration

	metrics  *metrics
	mu       sync.Mutex
	inFlight map[string]int // attempts running per endpoint in this process (PerEndpoint)
}

// Event is what Announce writes: the object it is about and what happened to it.
type Event struct {
	TenantID, KeyID, RequestID string
	Type                       string
	ObjectID                   string
	At                         time.Time
	// Data is what the event says beyond the object's id (each field omitted when empty).
	Data Data
}

// Data is the rest of an event's data: handles the tenant already holds, never a result
// URL or a secret.
type Data struct {
	// ClientRequestID is a speech request's own client_request_id: the handle a replay of
	// the request collects the audio with (speech has no read by id).
	ClientRequestID string `json:"client_request_id,omitempty"`
	// GroupID is the real-human group a passed verification made.
	GroupID string `json:"group_id,omitempty"`
	// VerifyTokenSHA256 is the hex SHA-256 of a verification's VerifyToken: the tenant
	// matches it to the token it holds, while the event never carries the token itself
	// (it redeems the group once).
	VerifyTokenSHA256 string `json:"verify_token_sha256,omitempty"`
}

// payload is OpenAI's event shape: it names the object, never a result URL (links are fetched
// fresh with the key) and never a secret.
type payload struct {
	ID        string      `json:"id"`
	Object    string      `json:"object"`
	Type      string      `json:"type"`
	CreatedAt int64       `json:"created_at"`
	Data      payloadData `json:"data"`
}

type payloadData struct {
	ID   string `json:"id"`
	Data `json:",inline"`
}

func (s *Service) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

func (s *Service) log() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// Enabled reports whether the tenant's operator switched webhooks on.
func (s *Service) Enabled(tenantID string) bool {
	if s == nil || s.Catalogs == nil {
		return false
	}
	t, ok := s.Catalogs.Current().Tenant(tenantID)
	return ok && t.WebhooksEnabled()
}

// RegisterMetrics registers mediagen_webhook_deliveries_total on reg (nil: none kept).
func (s *Service) RegisterMetrics(reg prometheus.Registerer) {
	s.metrics = newMetrics(reg)
}

// Announce writes one delivery and its job per subscribed endpoint of the event's tenant, in
// tx: the transaction of the state change the event announces, so an outcome is never lost
// and never announced before it commits. A tenant whose switch is off gets nothing. It
// returns the event's id, "" when it wrote nothing (else the caller calls Wake after the
// commit).
func (s *Service) Announce(ctx context.Context, tx store.Tx, e Event) (string, error) {
	if !s.Enabled(e.TenantID) {
		return "", nil
	}
	subs, err := tx.WebhookSubscribers(ctx, e.TenantID, e.Type)
	if err != nil || len(subs) == 0 {
		return "", err
	}
	eventID := idgen.New("evt")
	body, err := json.Marshal(payload{ID: eventID, Object: "event", Type: e.Type, CreatedAt: e.At.Unix(), Data: payloadData{ID: e.ObjectID, Data: e.Data}})
	if err != nil {
		return "", fmt.Errorf("webhook event: %w", err)
	}
	for _, ep := range subs {
		d := store.WebhookDelivery{ID: eventID + "." + ep.ID, EventID: eventID, EndpointID: ep.ID, TenantID: e.TenantID,
			EventType: e.Type, Payload: body, Status: store.DeliveryPending, CreatedAt: e.At, UpdatedAt: e.At}
		if err := tx.CreateWebhookDelivery(ctx, d); err != nil {
			return "", err
		}
		j := store.Job{ID: "webhook:" + d.ID, Kind: Kind, Ref: d.ID, TenantID: e.TenantID, KeyID: e.KeyID,
			RequestID: e.RequestID, RunAt: e.At, CreatedAt: e.At}
		if err := tx.EnqueueJob(ctx, j); err != nil {
			return "", fmt.Errorf("webhook delivery job: %w", err)
		}
	}
	return eventID, nil
}

// Wake tells the engine a delivery is due (after the commit of an Announce that wrote).
func (s *Service) Wake() {
	if s != nil && s.Notify != nil {
		s.Notify(Kind)
	}
}
