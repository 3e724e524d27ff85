package webhook

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/idgen"
	"mediagen/internal/store"
)

// Delivery is the wire form of one delivery of the log: one event for one endpoint, with its
// attempts when read alone. Ours: OpenAI's API has no delivery log.
type Delivery struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	WebhookEndpointID string `json:"webhook_endpoint_id"`
	// EventID is the webhook-id header of every attempt, and of every redelivery.
	EventID      string    `json:"event_id"`
	EventType    string    `json:"event_type"`
	Status       string    `json:"status"`
	AttemptCount int       `json:"attempt_count"`
	CreatedAt    int64     `json:"created_at"`
	UpdatedAt    int64     `json:"updated_at"`
	Attempts     []Attempt `json:"attempts,omitempty"`
}

// Attempt is one try of a delivery.
type Attempt struct {
	Attempt    int    `json:"attempt"`
	At         int64  `json:"at"`
	StatusCode int    `json:"status_code"` // 0: no answer
	LatencyMS  int64  `json:"latency_ms"`
	Error      string `json:"error"` // "" for a 2xx
}

// DeliveryList is a cursor page of one endpoint's deliveries, newest first.
type DeliveryList struct {
	Object  string     `json:"object"`
	Data    []Delivery `json:"data"`
	FirstID string     `json:"first_id,omitempty"`
	LastID  string     `json:"last_id,omitempty"`
	HasMore bool       `json:"has_more"`
}

// DefaultLogRetention is how long an ended delivery stays in the log after its last attempt:
// 30 days covers a month's billing and support questions ("did you send it on the 3rd?")
// while a busy tenant's log stays bounded; deliveries still pending are kept whatever their
// age (their schedule ends after about 3 days).
const DefaultLogRetention = 30 * 24 * time.Hour

// Bounds of the log's sweep: one batch is one short transaction (a few hundred rows and
// their attempts), and a pass stops after sweepBatches of them so it fits the job's timeout
// and leaves the database to other work; what is left goes at the next hourly pass.
const (
	sweepBatch   = 500
	sweepBatches = 100
	// SweepKind is the periodic job of the sweep.
	SweepKind  = "webhook.log_retention"
	sweepEvery = time.Hour
)

// maxDeliveryIDLen bounds a delivery id in a path: an event id, an endpoint id and, for a
// redelivery, a third part, each an idgen id.
const maxDeliveryIDLen = 3*idgen.MaxLen + 2

// LogQuery selects deliveries of one endpoint. Zero fields select anything.
type LogQuery struct {
	Status, EventType, EventID string
	Since, Until               time.Time
	After                      string // a delivery id: the page after it
	Limit                      int    // 0: defaultPageSize
}

// Statuses are the delivery statuses the log is filtered by.
var Statuses = []string{store.DeliveryPending, store.DeliveryDelivered, store.DeliveryFailed}

// ParseLogQuery reads the log's query parameters: status, event_type, event_id, since and
// until (Unix seconds or RFC 3339), after, limit. Every refusal names its parameter.
func ParseLogQuery(v url.Values) (LogQuery, error) {
	known := []string{"status", "event_type", "event_id", "since", "until", "after", "limit"}
	for k := range v {
		if !slices.Contains(known, k) {
			return LogQuery{}, apierr.Invalid(k, "Unknown query parameter "+strconv.Quote(k)+".")
		}
	}
	q := LogQuery{Status: v.Get("status"), EventType: v.Get("event_type"), EventID: v.Get("event_id"), After: v.Get("after")}
	if q.Status != "" && !slices.Contains(Statuses, q.Status) {
		return q, apierr.Invalid("status", "status must be one of pending, delivered, failed.")
	}
	if q.EventType != "" && !slices.Contains(EventTypes, q.EventType) {
		return q, apierr.Invalid("event_type", "event_type must be an event type this service sends: "+strings.Join(EventTypes, ", ")+".")
	}
	if q.EventID != "" && !idgen.Plausible(q.EventID) {
		return q, apierr.Invalid("event_id", "event_id must be the id of an event (the webhook-id header).")
	}
	if q.After != "" && !plausibleDelivery(q.After) {
		return q, apierr.Invalid("after", "after must be the id of a delivery of this endpoint.")
	}
	for _, p := range []struct {
		name string
		to   *time.Time
	}{{"since", &q.Since}, {"until", &q.Until}} {
		s := v.Get(p.name)
		if s == "" {
			continue
		}
		t, ok := parseTime(s)
		if !ok {
			return q, apierr.Invalid(p.name, p.name+" must be a time: Unix seconds, or RFC 3339 such as 2026-11-29T10:00:00Z.")
		}
		*p.to = t
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && !q.Since.Before(q.Until) {
		return q, apierr.Invalid("until", "until must be after since.")
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > maxPageSize {
			return q, apierr.Invalid("limit", "limit must be an integer from 1 to "+strconv.Itoa(maxPageSize)+".")
		}
		q.Limit = n
	}
	return q, nil
}

func parseTime(s string) (time.Time, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 && n < 1<<40 {
		return time.Unix(n, 0).UTC(), true
	}
	t, err := time.Parse(time.RFC3339, s)
	return t.UTC(), err == nil
}

// plausibleDelivery tells whether id could be a delivery id: idgen ids joined by dots.
func plausibleDelivery(id string) bool {
	if len(id) > maxDeliveryIDLen {
		return false
	}
	for _, p := range strings.Split(id, ".") {
		if !idgen.Plausible(p) {
			return false
		}
	}
	return true
}

func wireDelivery(d store.WebhookDelivery) Delivery {
	return Delivery{ID: d.ID, Object: "webhook_delivery", WebhookEndpointID: d.EndpointID, EventID: d.EventID, EventType: d.EventType,
		Status: d.Status, AttemptCount: d.Attempts, CreatedAt: d.CreatedAt.Unix(), UpdatedAt: d.UpdatedAt.Unix()}
}

func wireAttempts(as []store.WebhookAttempt) []Attempt {
	out := make([]Attempt, 0, len(as))
	for _, a := range as {
		out = append(out, Attempt{Attempt: a.N, At: a.At.Unix(), StatusCode: a.StatusCode, LatencyMS: a.Latency.Milliseconds(), Error: a.Error})
	}
	return out
}

func errDeliveryNotFound() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindNotFound, Code: "webhook_delivery_not_found", Message: "No delivery with this id exists for this webhook endpoint."}
}

// endpointOf reads the tenant's endpoint, 404 for another tenant's.
func (s *Service) endpointOf(ctx context.Context, tenantID, id string) (store.WebhookEndpoint, error) {
	if !idgen.Plausible(id) {
		return store.WebhookEndpoint{}, errNotFound()
	}
	e, err := s.Store.WebhookEndpoint(ctx, tenantID, id)
	if errors.Is(err, store.ErrNotFound) {
		return e, errNotFound()
	}
	return e, err
}

// deliveryOf reads a delivery of the tenant's endpoint, 404 for any other.
func (s *Service) deliveryOf(ctx context.Context, tenantID, endpointID, id string) (store.WebhookDelivery, error) {
	if !plausibleDelivery(id) {
		return store.WebhookDelivery{}, errDeliveryNotFound()
	}
	d, err := s.Store.WebhookDelivery(ctx, id)
	if errors.Is(err, store.ErrNotFound) || err == nil && (d.TenantID != tenantID || d.EndpointID != endpointID) {
		return store.WebhookDelivery{}, errDeliveryNotFound()
	}
	return d, err
}

// Deliveries is a page of the endpoint's log, newest first, filtered by q.
func (s *Service) Deliveries(ctx context.Context, tenantID, endpointID string, q LogQuery) (DeliveryList, error) {
	if _, err := s.endpointOf(ctx, tenantID, endpointID); err != nil {
		return DeliveryList{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = defaultPageSize
	}
	sq := store.WebhookDeliveryQuery{TenantID: tenantID, EndpointID: endpointID, Status: q.Status, EventType: q.EventType,
		EventID: q.EventID, Since: q.Since, Until: q.Until, Limit: limit + 1}
	if q.After != "" {
		c, err := s.deliveryOf(ctx, tenantID, endpointID, q.After)
		if err != nil {
			if apierr.As(err).Kind == apierr.KindNotFound {
				return DeliveryList{}, apierr.Invalid("after", "after must be the id of a delivery of this endpoint still in its log.")
			}
			return DeliveryList{}, err
		}
		sq.BeforeAt, sq.BeforeID = c.CreatedAt, c.ID
	}
	rows, err := s.Store.WebhookDeliveries(ctx, sq)
	if err != nil {
		return DeliveryList{}, err
	}
	out := DeliveryList{Object: "list", Data: []Delivery{}}
	if len(rows) > limit {
		rows, out.HasMore = rows[:limit], true
	}
	for _, d := range rows {
		out.Data = append(out.Data, wireDelivery(d))
	}
	if n := len(out.Data); n > 0 {
		out.FirstID, out.LastID = out.Data[0].ID, out.Data[n-1].ID
	}
	return out, nil
}

// Delivery reads one delivery of the endpoint with its attempts, oldest first.
func (s *Service) Delivery(ctx context.Context, tenantID, endpointID, id string) (Delivery, error) {
	d, err := s.deliveryOf(ctx, tenantID, endpointID, id)
	if err != nil {
		return Delivery{}, err
	}
	as, err := s.Store.WebhookAttempts(ctx, d.ID)
	if err != nil {
		return Delivery{}, err
	}
	out := wireDelivery(d)
	out.Attempts = wireAttempts(as)
	return out, nil
}

// NewRedelivery makes (without writing it) a new delivery of a delivery's event with its own
// attempt series: the same event (the same webhook-id and body), signed afresh at each
// attempt with the endpoint's secrets of that moment. It is refused while the tenant's switch
// is off, the endpoint is disabled, or a delivery of the same event to the endpoint is still
// pending (one series at a time: a double click does not send it twice more).
func (s *Service) NewRedelivery(ctx context.Context, tenantID, endpointID, id string) (store.WebhookDelivery, error) {
	if !s.Enabled(tenantID) {
		return store.WebhookDelivery{}, &apierr.Error{Kind: apierr.KindInvalid, Code: "webhooks_disabled", Param: "tenant",
			Message: "Webhooks are switched off for this account: nothing can be sent."}
	}
	ep, err := s.endpointOf(ctx, tenantID, endpointID)
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	if ep.Status != store.WebhookEnabled {
		return store.WebhookDelivery{}, &apierr.Error{Kind: apierr.KindInvalid, Code: "webhook_endpoint_disabled", Param: "status",
			Message: "The webhook endpoint is disabled. Enable it first, then redeliver."}
	}
	d, err := s.deliveryOf(ctx, tenantID, endpointID, id)
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	pending, err := s.Store.WebhookDeliveries(ctx, store.WebhookDeliveryQuery{TenantID: tenantID, EndpointID: endpointID,
		EventID: d.EventID, Status: store.DeliveryPending, Limit: 1})
	if err != nil {
		return store.WebhookDelivery{}, err
	}
	if len(pending) > 0 {
		return store.WebhookDelivery{}, &apierr.Error{Kind: apierr.KindInvalid, Code: "webhook_delivery_pending", Param: "delivery_id",
			Message: "This event is still being delivered to this endpoint (delivery " + pending[0].ID + "). Wait for it to end."}
	}
	now := s.now()
	return store.WebhookDelivery{ID: d.EventID + "." + ep.ID + "." + idgen.New("rd"), EventID: d.EventID, EndpointID: ep.ID,
		TenantID: tenantID, EventType: d.EventType, Payload: d.Payload, Status: store.DeliveryPending, CreatedAt: now, UpdatedAt: now}, nil
}

// EnqueueRedelivery writes a redelivery NewRedelivery made and its job, in tx (the caller
// calls Wake after the commit).
func EnqueueRedelivery(ctx context.Context, tx store.Tx, nd store.WebhookDelivery) error {
	if err := tx.CreateWebhookDelivery(ctx, nd); err != nil {
		return err
	}
	j := store.Job{ID: "webhook:" + nd.ID, Kind: Kind, Ref: nd.ID, TenantID: nd.TenantID, RunAt: nd.CreatedAt, CreatedAt: nd.CreatedAt}
	if err := tx.EnqueueJob(ctx, j); err != nil {
		return fmt.Errorf("webhook redelivery job: %w", err)
	}
	return nil
}

// Redeliver sends a delivery's event again (NewRedelivery) and answers the new delivery.
func (s *Service) Redeliver(ctx context.Context, tenantID, endpointID, id string) (Delivery, error) {
	nd, err := s.NewRedelivery(ctx, tenantID, endpointID, id)
	if err != nil {
		return Delivery{}, err
	}
	if err := s.Store.Transact(ctx, func(tx store.Tx) error { return EnqueueRedelivery(ctx, tx, nd) }); err != nil {
		return Delivery{}, err
	}
	s.Wake()
	return wireDelivery(nd), nil
}

// SetStatus enables or disables the tenant's endpoint (the operator's and the console's
// switch); enabling starts its failure run over. It reports the endpoint as it is after.
func (s *Service) SetStatus(ctx context.Context, tenantID, id, status string) (Endpoint, error) {
	if status != store.WebhookEnabled && status != store.WebhookDisabled {
		return Endpoint{}, apierr.Invalid("status", "status must be enabled or disabled.")
	}
	var after store.WebhookEndpoint
	err := s.Store.Transact(ctx, func(tx store.Tx) (err error) {
		_, after, err = SetStatusIn(ctx, tx, tenantID, id, status, s.now())
		return err
	})
	if err != nil {
		return Endpoint{}, err
	}
	return wire(after), nil
}

// SetStatusIn is SetStatus in tx, with the endpoint before and after (for the operator's
// audit entry); the 404 of another tenant's or a missing endpoint.
func SetStatusIn(ctx context.Context, tx store.Tx, tenantID, id, status string, now time.Time) (before, after store.WebhookEndpoint, err error) {
	if status != store.WebhookEnabled && status != store.WebhookDisabled {
		return before, after, apierr.Invalid("status", "status must be enabled or disabled.")
	}
	if !idgen.Plausible(id) {
		return before, after, errNotFound()
	}
	before, err = tx.WebhookEndpointForUpdate(ctx, tenantID, id)
	if errors.Is(err, store.ErrNotFound) {
		return before, after, errNotFound()
	}
	if err != nil {
		return before, after, err
	}
	after = before
	if after.Status == status {
		return before, after, nil
	}
	after.Status, after.FailureRun, after.UpdatedAt = status, 0, now
	return before, after, tx.UpdateWebhookEndpoint(ctx, after)
}

// Wire is the endpoint's wire form (never its secret).
func Wire(e store.WebhookEndpoint) Endpoint { return wire(e) }

// WireDelivery is the delivery's wire form, with its attempts when given.
func WireDelivery(d store.WebhookDelivery, attempts []store.WebhookAttempt) Delivery {
	out := wireDelivery(d)
	if attempts != nil {
		out.Attempts = wireAttempts(attempts)
	}
	return out
}

// logRetention is the log's retention period.
func (s *Service) logRetention() time.Duration {
	if s.LogRetention > 0 {
		return s.LogRetention
	}
	return DefaultLogRetention
}

// SweepLog is one pass of the log's retention: ended deliveries whose last attempt is older
// than the retention period go, a bounded batch at a time, at most sweepBatches per pass.
func (s *Service) SweepLog(ctx context.Context) error {
	cutoff := s.now().Add(-s.logRetention())
	total := 0
	for range sweepBatches {
		n, err := s.Store.SweepWebhookDeliveries(ctx, cutoff, sweepBatch)
		total += n
		s.metrics.swept(n)
		if err != nil {
			return fmt.Errorf("webhook log retention: %w", err)
		}
		if n < sweepBatch {
			break
		}
	}
	if total > 0 {
		s.log().Info("webhook delivery log swept", "deliveries", total, "older_than", cutoff)
	}
	return nil
}

// disableAfter is the run of deliveries given up in a row that disables an endpoint.
func (s *Service) disableAfter() int {
	if s.DisableAfter > 0 {
		return s.DisableAfter
	}
	return DefaultDisableAfter
}

// AutoDisabled tells whether the endpoint was disabled by its run of failed deliveries
// rather than by a person (who resets the run when changing the status): the consoles tell
// the tenant so.
func (s *Service) AutoDisabled(e store.WebhookEndpoint) bool {
	return e.Status == store.WebhookDisabled && e.FailureRun >= s.disableAfter()
}
