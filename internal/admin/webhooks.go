package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/idgen"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// WebhookEndpoint is a tenant's webhook endpoint as the operator sees it (never its secret):
// docs/webhooks.md. FailureRun is the deliveries given up in a row; the endpoint is disabled
// when it reaches the documented bound.
type WebhookEndpoint struct {
	Object     string   `json:"object"` // "webhook_endpoint"
	ID         string   `json:"id"`
	Tenant     string   `json:"tenant"`
	Name       string   `json:"name"`
	URL        string   `json:"url"`
	EventTypes []string `json:"event_types"`
	Status     string   `json:"status"` // enabled, disabled
	FailureRun int      `json:"failure_run"`
	// AutoDisabled: disabled by its run of failed deliveries rather than by a person.
	AutoDisabled      bool      `json:"auto_disabled"`
	SigningSecretHint string    `json:"signing_secret_hint"`
	CreatedAt         time.Time `json:"created_at"`
	UpdatedAt         time.Time `json:"updated_at"`
}

// WebhookDelivery is one delivery of the log, with its attempts when read alone.
type WebhookDelivery struct {
	Object       string           `json:"object"` // "webhook_delivery"
	ID           string           `json:"id"`
	Tenant       string           `json:"tenant"`
	EndpointID   string           `json:"webhook_endpoint_id"`
	EventID      string           `json:"event_id"`
	EventType    string           `json:"event_type"`
	Status       string           `json:"status"` // pending, delivered, failed
	AttemptCount int              `json:"attempt_count"`
	CreatedAt    time.Time        `json:"created_at"`
	UpdatedAt    time.Time        `json:"updated_at"`
	Attempts     []WebhookAttempt `json:"attempts,omitempty"`
}

// WebhookAttempt is one try of a delivery.
type WebhookAttempt struct {
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	StatusCode int       `json:"status_code"` // 0: no answer
	LatencyMS  int64     `json:"latency_ms"`
	Error      string    `json:"error,omitempty"`
}

func webhookEndpointView(hooks *webhook.Service, e store.WebhookEndpoint) WebhookEndpoint {
	w := webhook.Wire(e)
	return WebhookEndpoint{Object: "webhook_endpoint", ID: e.ID, Tenant: e.TenantID, Name: e.Name, URL: e.URL, EventTypes: e.EventTypes,
		Status: e.Status, FailureRun: e.FailureRun, AutoDisabled: hooks.AutoDisabled(e), SigningSecretHint: w.SigningSecretHint,
		CreatedAt: e.CreatedAt.UTC(), UpdatedAt: e.UpdatedAt.UTC()}
}

func webhookDeliveryView(d store.WebhookDelivery, attempts []store.WebhookAttempt) WebhookDelivery {
	v := WebhookDelivery{Object: "webhook_delivery", ID: d.ID, Tenant: d.TenantID, EndpointID: d.EndpointID, EventID: d.EventID,
		EventType: d.EventType, Status: d.Status, AttemptCount: d.Attempts, CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
	for _, a := range attempts {
		v.Attempts = append(v.Attempts, WebhookAttempt{Attempt: a.N, At: a.At.UTC(), StatusCode: a.StatusCode, LatencyMS: a.Latency.Milliseconds(), Error: a.Error})
	}
	return v
}

// errNoWebhooks is the answer of the webhook actions on a process without the webhook service.
var errNoWebhooks = apierr.New(apierr.KindNotFound, "Webhooks are not served by this process.")

// webhooks is the webhook service, or the 404 of a process without it.
func (s *Service) webhooks() (*webhook.Service, error) {
	if s.hooks == nil {
		return nil, errNoWebhooks
	}
	return s.hooks, nil
}

// WebhookEndpointFilter selects one tenant's endpoints.
type WebhookEndpointFilter struct {
	Tenant string // required
	Cursor string // next_cursor of the previous page
	Limit  int
}

// WebhookEndpoints lists a tenant's endpoints, newest first, whether or not its switch is on
// (an operator looks at them after switching it off too).
func (s *Service) WebhookEndpoints(ctx context.Context, a Actor, f WebhookEndpointFilter) (List[WebhookEndpoint], error) {
	if err := Need(a, RoleViewer); err != nil {
		return List[WebhookEndpoint]{}, err
	}
	hooks, err := s.webhooks()
	if err != nil {
		return List[WebhookEndpoint]{}, err
	}
	if err := checkText("tenant", f.Tenant, MaxNameChars, true); err != nil {
		return List[WebhookEndpoint]{}, err
	}
	if _, ok := s.catalog().Tenant(f.Tenant); !ok {
		return List[WebhookEndpoint]{}, invalidf("tenant", "No tenant %q in the catalog in force.", f.Tenant)
	}
	if f.Cursor != "" && !idgen.Plausible(f.Cursor) {
		return List[WebhookEndpoint]{}, invalidf("cursor", "cursor is not one this service handed out.")
	}
	limit, err := pageSize("limit", f.Limit)
	if err != nil {
		return List[WebhookEndpoint]{}, err
	}
	rows, err := hooks.Store.WebhookEndpoints(ctx, f.Tenant, f.Cursor, limit+1)
	if err != nil {
		return List[WebhookEndpoint]{}, fmt.Errorf("webhook endpoints: %w", err)
	}
	more := len(rows) > limit
	rows = rows[:min(len(rows), limit)]
	out := make([]WebhookEndpoint, 0, len(rows))
	for _, e := range rows {
		out = append(out, webhookEndpointView(hooks, e))
	}
	next := ""
	if len(rows) > 0 {
		next = rows[len(rows)-1].ID
	}
	return newList(out, more, next), nil
}

// endpoint reads any tenant's endpoint by id, the admin 404 when there is none.
func (s *Service) webhookEndpoint(ctx context.Context, hooks *webhook.Service, id string) (store.WebhookEndpoint, error) {
	if err := checkID("webhook endpoint", id); err != nil {
		return store.WebhookEndpoint{}, err
	}
	e, err := hooks.Store.WebhookEndpointByID(ctx, id)
	if isNotFound(err) {
		return e, notFound("webhook endpoint", id)
	}
	if err != nil {
		return e, fmt.Errorf("webhook endpoint: %w", err)
	}
	return e, nil
}

// WebhookEndpoint reads one endpoint of any tenant.
func (s *Service) WebhookEndpoint(ctx context.Context, a Actor, id string) (WebhookEndpoint, error) {
	if err := Need(a, RoleViewer); err != nil {
		return WebhookEndpoint{}, err
	}
	hooks, err := s.webhooks()
	if err != nil {
		return WebhookEndpoint{}, err
	}
	e, err := s.webhookEndpoint(ctx, hooks, id)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	return webhookEndpointView(hooks, e), nil
}

// SetWebhookEndpointStatus disables or enables any tenant's endpoint (enabling starts its
// failure run over), audited as webhook_endpoint.disable or webhook_endpoint.enable with the
// endpoint before and after. Setting the status it has already is a no-op, still audited: the
// operator's intent is on record.
func (s *Service) SetWebhookEndpointStatus(ctx context.Context, a Actor, id, status string) (WebhookEndpoint, error) {
	if err := Need(a, RoleOperator); err != nil {
		return WebhookEndpoint{}, err
	}
	hooks, err := s.webhooks()
	if err != nil {
		return WebhookEndpoint{}, err
	}
	e, err := s.webhookEndpoint(ctx, hooks, id)
	if err != nil {
		return WebhookEndpoint{}, err
	}
	action := "webhook_endpoint.enable"
	if status == store.WebhookDisabled {
		action = "webhook_endpoint.disable"
	}
	now := s.Now()
	return Write(ctx, s, a, func(tx store.Tx) (WebhookEndpoint, Change, error) {
		before, after, err := webhook.SetStatusIn(ctx, tx, e.TenantID, id, status, now)
		if err != nil {
			if apierr.As(err).Kind == apierr.KindNotFound {
				err = notFound("webhook endpoint", id) // deleted meanwhile
			}
			return WebhookEndpoint{}, Change{}, err
		}
		v := webhookEndpointView(hooks, after)
		return v, Change{Action: action, TargetType: "webhook_endpoint", TargetID: id, Before: webhookEndpointView(hooks, before), After: v}, nil
	})
}

// WebhookDeliveries lists one endpoint's deliveries, newest first.
func (s *Service) WebhookDeliveries(ctx context.Context, a Actor, endpointID string, q webhook.LogQuery) (List[WebhookDelivery], error) {
	if err := Need(a, RoleViewer); err != nil {
		return List[WebhookDelivery]{}, err
	}
	hooks, err := s.webhooks()
	if err != nil {
		return List[WebhookDelivery]{}, err
	}
	e, err := s.webhookEndpoint(ctx, hooks, endpointID)
	if err != nil {
		return List[WebhookDelivery]{}, err
	}
	if q.Limit == 0 {
		q.Limit = MaxPageSize
	}
	page, err := hooks.Deliveries(ctx, e.TenantID, e.ID, q)
	if err != nil {
		if p := apierr.As(err).Param; p == "after" {
			err = invalidf("cursor", "cursor is not a delivery of this endpoint still in its log.")
		}
		return List[WebhookDelivery]{}, err
	}
	out := make([]WebhookDelivery, 0, len(page.Data))
	for _, d := range page.Data {
		out = append(out, WebhookDelivery{Object: "webhook_delivery", ID: d.ID, Tenant: e.TenantID, EndpointID: d.WebhookEndpointID,
			EventID: d.EventID, EventType: d.EventType, Status: d.Status, AttemptCount: d.AttemptCount,
			CreatedAt: time.Unix(d.CreatedAt, 0).UTC(), UpdatedAt: time.Unix(d.UpdatedAt, 0).UTC()})
	}
	return newList(out, page.HasMore, page.LastID), nil
}

// WebhookDelivery reads one delivery of the endpoint with its attempts.
func (s *Service) WebhookDelivery(ctx context.Context, a Actor, endpointID, id string) (WebhookDelivery, error) {
	if err := Need(a, RoleViewer); err != nil {
		return WebhookDelivery{}, err
	}
	hooks, err := s.webhooks()
	if err != nil {
		return WebhookDelivery{}, err
	}
	e, err := s.webhookEndpoint(ctx, hooks, endpointID)
	if err != nil {
		return WebhookDelivery{}, err
	}
	d, err := hooks.Store.WebhookDelivery(ctx, id)
	if isNotFound(err) || err == nil && d.EndpointID != e.ID {
		return WebhookDelivery{}, notFound("webhook delivery", id)
	}
	if err != nil {
		return WebhookDelivery{}, fmt.Errorf("webhook delivery: %w", err)
	}
	as, err := hooks.Store.WebhookAttempts(ctx, d.ID)
	if err != nil {
		return WebhookDelivery{}, fmt.Errorf("webhook delivery: %w", err)
	}
	return webhookDeliveryView(d, as), nil
}

// RedeliverWebhook sends a delivery's event again as a new delivery (webhook.NewRedelivery's
// rules: refused for a disabled endpoint or a tenant whose switch is off), audited as
// webhook_delivery.redeliver with the new delivery as its after.
func (s *Service) RedeliverWebhook(ctx context.Context, a Actor, endpointID, id string) (WebhookDelivery, error) {
	if err := Need(a, RoleOperator); err != nil {
		return WebhookDelivery{}, err
	}
	hooks, err := s.webhooks()
	if err != nil {
		return WebhookDelivery{}, err
	}
	e, err := s.webhookEndpoint(ctx, hooks, endpointID)
	if err != nil {
		return WebhookDelivery{}, err
	}
	nd, err := hooks.NewRedelivery(ctx, e.TenantID, e.ID, id)
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) && ae.Code == "webhook_delivery_not_found" {
			err = notFound("webhook delivery", id)
		}
		return WebhookDelivery{}, err
	}
	out, err := Write(ctx, s, a, func(tx store.Tx) (WebhookDelivery, Change, error) {
		if err := webhook.EnqueueRedelivery(ctx, tx, nd); err != nil {
			return WebhookDelivery{}, Change{}, err
		}
		v := webhookDeliveryView(nd, nil)
		return v, Change{Action: "webhook_delivery.redeliver", TargetType: "webhook_delivery", TargetID: id, After: v}, nil
	})
	if err != nil {
		return WebhookDelivery{}, err
	}
	hooks.Wake()
	return out, nil
}
