package webhook

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
	"mediagen/internal/idgen"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
)

// Bounds of the endpoint API.
const (
	maxNameLen      = 256
	maxURLLen       = 2048
	defaultPageSize = 20
	maxPageSize     = 100
	// KeepOldSecret is how long a rotation asked to keep the old secret signs beside the new.
	KeepOldSecret = 24 * time.Hour
)

// Endpoint is the wire form of an endpoint (OpenAI's WebhookEndpoint, plus our status). The
// secret itself appears only in the answers of create and rotate_secret (SigningSecret).
type Endpoint struct {
	ID                string   `json:"id"`
	Object            string   `json:"object"`
	CreatedAt         int64    `json:"created_at"`
	UpdatedAt         int64    `json:"updated_at"`
	EventTypes        []string `json:"event_types"`
	Name              string   `json:"name"`
	URL               string   `json:"url"`
	SigningSecret     string   `json:"signing_secret,omitempty"`
	SigningSecretHint string   `json:"signing_secret_hint"`
	// Status is "enabled" or "disabled" (by the tenant, or after a run of failed deliveries).
	Status string `json:"status"`
}

// EndpointList is a cursor page, newest first (first_id and last_id omitted when empty).
type EndpointList struct {
	Object  string     `json:"object"`
	Data    []Endpoint `json:"data"`
	FirstID string     `json:"first_id,omitempty"`
	LastID  string     `json:"last_id,omitempty"`
	HasMore bool       `json:"has_more"`
}

// Deleted answers a delete.
type Deleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
}

// TestResult answers test: the endpoint's status code to a signed sample event.
type TestResult struct {
	Object            string `json:"object"`
	EventType         string `json:"event_type"`
	StatusCode        int    `json:"status_code"`
	Success           bool   `json:"success"`
	WebhookEndpointID string `json:"webhook_endpoint_id"`
}

func wire(e store.WebhookEndpoint) Endpoint {
	return Endpoint{ID: e.ID, Object: "webhook_endpoint", CreatedAt: e.CreatedAt.Unix(), UpdatedAt: e.UpdatedAt.Unix(),
		EventTypes: e.EventTypes, Name: e.Name, URL: e.URL, SigningSecretHint: secretHint(e.Secret), Status: e.Status}
}

func errNotFound() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindNotFound, Code: "webhook_endpoint_not_found", Message: "No webhook endpoint with this id exists for this API key's account."}
}

// members decodes a JSON object body into its members, refusing any not in allowed. An empty
// body is an empty object: the SDKs send none for calls without parameters.
func members(body []byte, allowed ...string) (map[string]jsontext.Value, error) {
	m := map[string]jsontext.Value{}
	if len(body) == 0 {
		return m, nil
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, apierr.Invalid("", "The request body must be one JSON object with no duplicate members.")
	}
	for k := range m {
		if !slices.Contains(allowed, k) {
			return nil, apierr.Invalid(k, "Unknown parameter "+strconv.Quote(k)+".")
		}
	}
	return m, nil
}

func str(m map[string]jsontext.Value, name string, maxLen int) (string, bool, error) {
	v, ok := m[name]
	if !ok {
		return "", false, nil
	}
	var s string
	if v.Kind() != '"' || json.Unmarshal(v, &s) != nil {
		return "", true, apierr.Invalid(name, name+" must be a string.")
	}
	if s == "" || utf8.RuneCountInString(s) > maxLen {
		return "", true, apierr.Invalid(name, name+" must be 1 to "+strconv.Itoa(maxLen)+" characters.")
	}
	return s, true, nil
}

func eventTypes(m map[string]jsontext.Value) ([]string, bool, error) {
	v, ok := m["event_types"]
	if !ok {
		return nil, false, nil
	}
	var raw []jsontext.Value
	if v.Kind() != '[' || json.Unmarshal(v, &raw) != nil {
		return nil, true, apierr.Invalid("event_types", "event_types must be an array of event type names.")
	}
	if len(raw) == 0 {
		return nil, true, apierr.Invalid("event_types", "event_types must name at least one event type.")
	}
	var out []string
	for i, r := range raw {
		param := "event_types[" + strconv.Itoa(i) + "]"
		var s string
		if r.Kind() != '"' || json.Unmarshal(r, &s) != nil {
			return nil, true, apierr.Invalid(param, param+" must be a string.")
		}
		if !slices.Contains(EventTypes, s) {
			return nil, true, apierr.Invalid(param, "This service sends only these event types: "+eventTypesList+".")
		}
		if slices.Contains(out, s) {
			return nil, true, apierr.Invalid(param, param+" repeats an event type.")
		}
		out = append(out, s)
	}
	return out, true, nil
}

// checkURL applies the delivery client's static rules (https, no literal private address, no
// credentials) at registration: a URL that can never be delivered to is refused here.
func (s *Service) checkURL(raw string) (string, error) {
	if s.Client == nil {
		return "", errors.New("webhook: no delivery client configured")
	}
	u, err := s.Client.Check(raw, false)
	if err != nil {
		return "", apierr.Invalid("url", "url must be an https URL of a public address: "+publicURLProblem(err))
	}
	if u.User != nil {
		return "", apierr.Invalid("url", "url must not carry credentials.")
	}
	return (&url.URL{Scheme: u.Scheme, Host: u.Host, Path: u.Path, RawPath: u.RawPath, RawQuery: u.RawQuery}).String(), nil
}

// Create registers an endpoint of the tenant, within its bound; the answer is the only one
// that ever shows the secret, with rotate_secret's.
func (s *Service) Create(ctx context.Context, tenantID string, limit int, body []byte) (Endpoint, error) {
	m, err := members(body, "name", "url", "event_types")
	if err != nil {
		return Endpoint{}, err
	}
	name, ok, err := str(m, "name", maxNameLen)
	if err == nil && !ok {
		err = apierr.Invalid("name", "name is required.")
	}
	if err != nil {
		return Endpoint{}, err
	}
	raw, ok, err := str(m, "url", maxURLLen)
	if err == nil && !ok {
		err = apierr.Invalid("url", "url is required.")
	}
	if err != nil {
		return Endpoint{}, err
	}
	u, err := s.checkURL(raw)
	if err != nil {
		return Endpoint{}, err
	}
	types, ok, err := eventTypes(m)
	if err == nil && !ok {
		err = apierr.Invalid("event_types", "event_types is required.")
	}
	if err != nil {
		return Endpoint{}, err
	}
	now := s.now()
	e := store.WebhookEndpoint{ID: idgen.New("whe"), TenantID: tenantID, Name: name, URL: u, EventTypes: types,
		Secret: newSecret(), Status: store.WebhookEnabled, CreatedAt: now, UpdatedAt: now}
	err = s.Store.Transact(ctx, func(tx store.Tx) error { return tx.CreateWebhookEndpoint(ctx, e, limit) })
	if errors.Is(err, store.ErrConflict) {
		return Endpoint{}, &apierr.Error{Kind: apierr.KindInvalid, Code: "webhook_endpoint_limit", Param: "url",
			Message: "This account already has its maximum of " + strconv.Itoa(limit) + " webhook endpoints. Delete one first."}
	}
	if err != nil {
		return Endpoint{}, err
	}
	out := wire(e)
	out.SigningSecret = e.Secret
	return out, nil
}

// Get reads one endpoint of the tenant.
func (s *Service) Get(ctx context.Context, tenantID, id string) (Endpoint, error) {
	if !idgen.Plausible(id) {
		return Endpoint{}, errNotFound()
	}
	e, err := s.Store.WebhookEndpoint(ctx, tenantID, id)
	if errors.Is(err, store.ErrNotFound) {
		return Endpoint{}, errNotFound()
	}
	if err != nil {
		return Endpoint{}, err
	}
	return wire(e), nil
}

// List is a cursor page of the tenant's endpoints, newest first.
func (s *Service) List(ctx context.Context, tenantID string, q url.Values) (EndpointList, error) {
	for k := range q {
		if k != "after" && k != "limit" {
			return EndpointList{}, apierr.Invalid(k, "Unknown query parameter "+strconv.Quote(k)+".")
		}
	}
	limit := defaultPageSize
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPageSize {
			return EndpointList{}, apierr.Invalid("limit", "limit must be an integer from 1 to "+strconv.Itoa(maxPageSize)+".")
		}
		limit = n
	}
	after := q.Get("after")
	if after != "" && !idgen.Plausible(after) {
		return EndpointList{}, apierr.Invalid("after", "after must be the id of a webhook endpoint.")
	}
	rows, err := s.Store.WebhookEndpoints(ctx, tenantID, after, limit+1)
	if err != nil {
		return EndpointList{}, err
	}
	out := EndpointList{Object: "list", Data: []Endpoint{}}
	if len(rows) > limit {
		rows, out.HasMore = rows[:limit], true
	}
	for _, e := range rows {
		out.Data = append(out.Data, wire(e))
	}
	if n := len(out.Data); n > 0 {
		out.FirstID, out.LastID = out.Data[0].ID, out.Data[n-1].ID
	}
	return out, nil
}

// change runs fn on the tenant's endpoint under its row lock and writes it back.
func (s *Service) change(ctx context.Context, tenantID, id string, fn func(*store.WebhookEndpoint) error) (store.WebhookEndpoint, error) {
	if !idgen.Plausible(id) {
		return store.WebhookEndpoint{}, errNotFound()
	}
	var e store.WebhookEndpoint
	err := s.Store.Transact(ctx, func(tx store.Tx) error {
		var err error
		if e, err = tx.WebhookEndpointForUpdate(ctx, tenantID, id); err != nil {
			return err
		}
		if err := fn(&e); err != nil {
			return err
		}
		return tx.UpdateWebhookEndpoint(ctx, e)
	})
	if errors.Is(err, store.ErrNotFound) {
		return e, errNotFound()
	}
	return e, err
}

// Update changes name, url, event_types and (ours) status; members left out stay. Enabling a
// disabled endpoint starts its failure run over.
func (s *Service) Update(ctx context.Context, tenantID, id string, body []byte) (Endpoint, error) {
	m, err := members(body, "name", "url", "event_types", "status")
	if err != nil {
		return Endpoint{}, err
	}
	name, hasName, err := str(m, "name", maxNameLen)
	if err != nil {
		return Endpoint{}, err
	}
	raw, hasURL, err := str(m, "url", maxURLLen)
	if err != nil {
		return Endpoint{}, err
	}
	var u string
	if hasURL {
		if u, err = s.checkURL(raw); err != nil {
			return Endpoint{}, err
		}
	}
	types, hasTypes, err := eventTypes(m)
	if err != nil {
		return Endpoint{}, err
	}
	status, hasStatus, err := str(m, "status", 16)
	if err != nil {
		return Endpoint{}, err
	}
	if hasStatus && status != store.WebhookEnabled && status != store.WebhookDisabled {
		return Endpoint{}, apierr.Invalid("status", "status must be enabled or disabled.")
	}
	e, err := s.change(ctx, tenantID, id, func(e *store.WebhookEndpoint) error {
		before := *e
		if hasName {
			e.Name = name
		}
		if hasURL {
			e.URL = u
		}
		if hasTypes {
			e.EventTypes = types
		}
		if hasStatus && status != e.Status {
			e.Status, e.FailureRun = status, 0
		}
		if e.Name != before.Name || e.URL != before.URL || !slices.Equal(e.EventTypes, before.EventTypes) || e.Status != before.Status {
			e.UpdatedAt = s.now() // an unchanged update does not advance it (OpenAI's rule)
		}
		return nil
	})
	if err != nil {
		return Endpoint{}, err
	}
	return wire(e), nil
}

// Delete removes the tenant's endpoint: its pending deliveries are dropped at their next run.
func (s *Service) Delete(ctx context.Context, tenantID, id string) (Deleted, error) {
	if !idgen.Plausible(id) {
		return Deleted{}, errNotFound()
	}
	err := s.Store.Transact(ctx, func(tx store.Tx) error { return tx.DeleteWebhookEndpoint(ctx, tenantID, id) })
	if errors.Is(err, store.ErrNotFound) {
		return Deleted{}, errNotFound()
	}
	if err != nil {
		return Deleted{}, err
	}
	return Deleted{ID: id, Object: "webhook_endpoint.deleted", Deleted: true}, nil
}

// RotateSecret issues a new secret; asked to, it keeps the old one signing beside it for
// KeepOldSecret (otherwise the old one stops at once).
func (s *Service) RotateSecret(ctx context.Context, tenantID, id string, body []byte) (Endpoint, error) {
	m, err := members(body, "keep_old_secret_active_for_24_hours")
	if err != nil {
		return Endpoint{}, err
	}
	keep := false
	if v, ok := m["keep_old_secret_active_for_24_hours"]; ok {
		if k := v.Kind(); (k != 't' && k != 'f') || json.Unmarshal(v, &keep) != nil {
			return Endpoint{}, apierr.Invalid("keep_old_secret_active_for_24_hours", "keep_old_secret_active_for_24_hours must be true or false.")
		}
	}
	e, err := s.change(ctx, tenantID, id, func(e *store.WebhookEndpoint) error {
		now := s.now()
		if keep {
			e.PrevSecret, e.PrevUntil = e.Secret, now.Add(KeepOldSecret)
		} else {
			e.PrevSecret, e.PrevUntil = "", time.Time{}
		}
		e.Secret, e.UpdatedAt = newSecret(), now
		return nil
	})
	if err != nil {
		return Endpoint{}, err
	}
	out := wire(e)
	out.SigningSecret = e.Secret
	return out, nil
}

// Test sends one signed sample event of the type to the endpoint now and answers the status
// code it got; nothing is retried or recorded as a delivery.
func (s *Service) Test(ctx context.Context, tenantID, id string, body []byte) (TestResult, error) {
	m, err := members(body, "event_type")
	if err != nil {
		return TestResult{}, err
	}
	typ, ok, err := str(m, "event_type", 64)
	if err == nil && !ok {
		err = apierr.Invalid("event_type", "event_type is required.")
	}
	if err != nil {
		return TestResult{}, err
	}
	if !slices.Contains(EventTypes, typ) {
		return TestResult{}, apierr.Invalid("event_type", "This service sends only these event types: "+eventTypesList+".")
	}
	e, err := s.Get(ctx, tenantID, id)
	if err != nil {
		return TestResult{}, err
	}
	ep, err := s.Store.WebhookEndpoint(ctx, tenantID, e.ID)
	if err != nil {
		return TestResult{}, err
	}
	now := s.now()
	evID := idgen.New("evt")
	payloadBytes, err := json.Marshal(payload{ID: evID, Object: "event", Type: typ, CreatedAt: now.Unix(), Data: payloadData{ID: sampleObject(typ)}})
	if err != nil {
		return TestResult{}, err
	}
	code, _, sendErr := post(ctx, s.Client, s.timeout(), ep.URL, evID, secrets(ep, now), payloadBytes, now)
	if code == 0 {
		return TestResult{}, &apierr.Error{Kind: apierr.KindInvalid, Code: "webhook_test_failed", Param: "url",
			Message: "The test event could not be delivered: " + sendErr.Error()}
	}
	return TestResult{Object: "webhook_endpoint.test", EventType: typ, StatusCode: code, Success: true, WebhookEndpointID: ep.ID}, nil
}

func publicURLProblem(err error) string { return safefetch.PublicMessage(err) }

// sampleObject is the object id of a test event: a made-up id of the kind the type names.
func sampleObject(typ string) string {
	switch {
	case strings.HasPrefix(typ, "speech."):
		return "speech_test"
	case strings.HasPrefix(typ, "asset.verification."):
		return "vs_test"
	case strings.HasPrefix(typ, "asset."):
		return "asset_test"
	}
	return "video_test"
}
