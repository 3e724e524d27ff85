package store

import (
	"context"
	"time"
)

// Webhook endpoint statuses.
const (
	WebhookEnabled  = "enabled"
	WebhookDisabled = "disabled" // by its run of failures (or later by an operator): nothing is sent
)

// WebhookEndpoint is a tenant's registered receiver of events (docs/webhooks.md). The signing
// secret is kept as issued ("whsec_" + base64): deliveries are signed with its bytes, so it
// cannot be hashed like an API key; it is never logged or shown after create and rotate.
type WebhookEndpoint struct {
	ID, TenantID string
	Name, URL    string
	EventTypes   []string
	Secret       string
	// PrevSecret is the secret a rotation replaced, still signing deliveries (beside Secret)
	// until PrevUntil; "" and zero when there is none.
	PrevSecret string
	PrevUntil  time.Time
	Status     string
	// FailureRun counts deliveries given up in a row (a delivered one resets it); the service
	// disables the endpoint when it reaches its documented bound.
	FailureRun int
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// Delivery statuses.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed" // given up, or its endpoint was disabled or deleted
)

// WebhookDelivery is one event for one endpoint. EventID is the webhook-id header: the same on
// every attempt, so a receiver drops duplicates. Payload is the body, fixed when the event was
// written with the state change it announces.
type WebhookDelivery struct {
	ID         string
	EventID    string
	EndpointID string
	TenantID   string
	EventType  string
	Payload    []byte
	Status     string
	Attempts   int
	CreatedAt  time.Time
	UpdatedAt  time.Time
}

// WebhookAttempt is one try of a delivery, kept in its log.
type WebhookAttempt struct {
	DeliveryID string
	N          int // 1 for the first attempt
	At         time.Time
	StatusCode int // 0 when no answer came
	Latency    time.Duration
	Error      string // short and sanitized; "" for a 2xx
}

// WebhookDeliveryQuery selects one endpoint's deliveries for its log, newest first (by
// creation, then id). Empty fields select anything.
type WebhookDeliveryQuery struct {
	TenantID, EndpointID string
	Status               string // a Delivery* status
	EventType            string
	EventID              string
	Since, Until         time.Time // created in [Since, Until)
	// BeforeAt and BeforeID are the cursor: deliveries created before the one they name
	// (zero and "" from the newest).
	BeforeAt time.Time
	BeforeID string
	Limit    int
}

// WebhookStore reads endpoints and deliveries.
type WebhookStore interface {
	// WebhookEndpoint reads one endpoint of the tenant; ErrNotFound for another tenant's.
	WebhookEndpoint(ctx context.Context, tenantID, id string) (WebhookEndpoint, error)
	// WebhookEndpointByID reads one endpoint whatever its tenant: for the operator only, who
	// acts on any tenant's endpoints by id.
	WebhookEndpointByID(ctx context.Context, id string) (WebhookEndpoint, error)
	// WebhookEndpoints lists the tenant's endpoints newest first, those older than the
	// endpoint after ("" from the newest), at most limit.
	WebhookEndpoints(ctx context.Context, tenantID, after string, limit int) ([]WebhookEndpoint, error)
	WebhookDelivery(ctx context.Context, id string) (WebhookDelivery, error)
	// WebhookAttempts is a delivery's log, oldest first.
	WebhookAttempts(ctx context.Context, deliveryID string) ([]WebhookAttempt, error)
	// WebhookDeliveries searches one endpoint's deliveries of the tenant (q.TenantID,
	// q.EndpointID both required), newest first, at most q.Limit.
	WebhookDeliveries(ctx context.Context, q WebhookDeliveryQuery) ([]WebhookDelivery, error)
	// SweepWebhookDeliveries deletes at most limit deliveries that ended (delivered or
	// failed) and were last touched before cutoff, with their attempts, in one transaction,
	// oldest first; it returns how many deliveries it deleted. A pending delivery is never
	// swept: its job still reads it.
	SweepWebhookDeliveries(ctx context.Context, cutoff time.Time, limit int) (int, error)
}

// WebhookTx writes them, in the transaction of what they go with.
type WebhookTx interface {
	// CreateWebhookEndpoint inserts e unless the tenant already has limit endpoints
	// (ErrConflict, nothing written).
	CreateWebhookEndpoint(ctx context.Context, e WebhookEndpoint, limit int) error
	// WebhookEndpointForUpdate reads one endpoint of the tenant and locks it.
	WebhookEndpointForUpdate(ctx context.Context, tenantID, id string) (WebhookEndpoint, error)
	// UpdateWebhookEndpoint writes every field of e.ID but its tenant and creation time.
	UpdateWebhookEndpoint(ctx context.Context, e WebhookEndpoint) error
	// DeleteWebhookEndpoint removes the tenant's endpoint; ErrNotFound when there is none.
	DeleteWebhookEndpoint(ctx context.Context, tenantID, id string) error
	// WebhookSubscribers are the tenant's enabled endpoints subscribed to eventType.
	WebhookSubscribers(ctx context.Context, tenantID, eventType string) ([]WebhookEndpoint, error)
	// CreateWebhookDelivery inserts d; an existing id is left as it is (an event is written
	// once whatever retries its transaction).
	CreateWebhookDelivery(ctx context.Context, d WebhookDelivery) error
	// RecordWebhookAttempt appends a to its delivery's log and sets the delivery's status
	// and attempt count.
	RecordWebhookAttempt(ctx context.Context, a WebhookAttempt, status string) error
}
