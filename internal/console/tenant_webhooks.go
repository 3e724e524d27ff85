package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// The tenant console's Webhooks page (GET /console/webhooks): the tenant's endpoints with
// their actions, offered only when the operator switched webhooks on for the tenant
// (docs/webhooks.md); every action goes through the same webhook service, validation and
// messages as /v1/webhook_endpoints. One endpoint's delivery log is its own page
// (GET /console/webhooks/{id}).

// webhooksPage is the data of tenant_webhooks.html.
type webhooksPage struct {
	Endpoints  []endpointRow
	EventTypes []string
	Limit      int
	Form       endpointForm
	// Secret is a signing secret just issued (create or rotate), shown on this answer only:
	// it is never put in a URL.
	Secret, SecretFor string
	Flash             string // what the last action did
	Problem           string // an action refused, with the service's message
}

// endpointRow is one endpoint with what the page says about it.
type endpointRow struct {
	webhook.Endpoint
	FailureRun   int
	AutoDisabled bool
}

// Enabled tells the status.
func (e endpointRow) Enabled() bool { return e.Status == store.WebhookEnabled }

// Created is when it was registered.
func (e endpointRow) Created() time.Time { return time.Unix(e.CreatedAt, 0) }

// Subscribed tells whether the endpoint takes the event type.
func (e endpointRow) Subscribed(t string) bool { return slices.Contains(e.EventTypes, t) }

// AutoDisabled lists the endpoints disabled by their run of failures (the page's notice).
func (p webhooksPage) AutoDisabled() []endpointRow {
	var out []endpointRow
	for _, e := range p.Endpoints {
		if e.AutoDisabled {
			out = append(out, e)
		}
	}
	return out
}

// Full tells the tenant is at its bound of endpoints.
func (p webhooksPage) Full() bool { return len(p.Endpoints) >= p.Limit }

// endpointForm is the add form: its values and the messages next to its fields.
type endpointForm struct {
	Name, URL                      string
	Types                          []string
	NameErr, URLErr, TypesErr, Bad string
}

// Has tells whether the form has the event type ticked.
func (f endpointForm) Has(t string) bool { return slices.Contains(f.Types, t) }

// webhooksOn is the tenant's webhook service, or the console's 404 when its switch is off or
// the service is absent: the page does not exist for it, as the API routes do not.
func (t *Tenant) webhooksOn(s *Session) (*webhook.Service, error) {
	if t.cfg.Webhooks == nil || !s.Caller.Tenant.WebhooksEnabled() {
		return nil, apierr.New(apierr.KindNotFound, "There is no console page at this address.")
	}
	return t.cfg.Webhooks, nil
}

// loadEndpoints reads every endpoint of the tenant: at most its bound, one page.
func loadEndpoints(ctx context.Context, hooks *webhook.Service, tenantID string) ([]endpointRow, error) {
	rows, err := hooks.Store.WebhookEndpoints(ctx, tenantID, "", 100)
	if err != nil {
		return nil, err
	}
	out := make([]endpointRow, 0, len(rows))
	for _, e := range rows {
		out = append(out, endpointRow{Endpoint: webhook.Wire(e), FailureRun: e.FailureRun, AutoDisabled: hooks.AutoDisabled(e)})
	}
	return out, nil
}

func (t *Tenant) renderWebhooks(w http.ResponseWriter, r *http.Request, s *Session, status int, p webhooksPage) error {
	hooks, err := t.webhooksOn(s)
	if err != nil {
		return err
	}
	if p.Endpoints, err = loadEndpoints(r.Context(), hooks, s.Caller.Key.TenantID); err != nil {
		return err
	}
	p.EventTypes, p.Limit = webhook.EventTypes, s.Caller.Tenant.WebhookEndpointLimit()
	t.render(w, r, s, status, "tenant_webhooks", "Webhooks", p)
	return nil
}

// webhooks answers GET /console/webhooks.
func (t *Tenant) webhooks(w http.ResponseWriter, r *http.Request, s *Session) error {
	p := webhooksPage{Form: endpointForm{Types: webhook.EventTypes}}
	switch r.URL.Query().Get("done") {
	case "enabled", "disabled":
		p.Flash = "The endpoint is " + r.URL.Query().Get("done") + "."
	case "deleted":
		p.Flash = "The endpoint is deleted: it is sent nothing more."
	}
	return t.renderWebhooks(w, r, s, http.StatusOK, p)
}

// createEndpoint answers POST /console/webhooks: the page again with the new secret shown
// once, or the form with its errors.
func (t *Tenant) createEndpoint(w http.ResponseWriter, r *http.Request, s *Session) error {
	hooks, err := t.webhooksOn(s)
	if err != nil {
		return err
	}
	f := endpointForm{Name: r.PostForm.Get("name"), URL: strings.TrimSpace(r.PostForm.Get("url")), Types: r.PostForm["event_types"]}
	body, err := json.Marshal(map[string]any{"name": f.Name, "url": f.URL, "event_types": append([]string{}, f.Types...)})
	if err != nil {
		return err
	}
	end, err := t.admit(s.Caller)
	if err == nil {
		var made webhook.Endpoint
		made, err = hooks.Create(r.Context(), s.Caller.Key.TenantID, s.Caller.Tenant.WebhookEndpointLimit(), body)
		end()
		if err == nil {
			return t.renderWebhooks(w, r, s, http.StatusOK, webhooksPage{Secret: made.SigningSecret, SecretFor: made.ID,
				Flash: "Endpoint " + made.Name + " is added.", Form: endpointForm{Types: webhook.EventTypes}})
		}
	}
	e, ok := shownOnForm(err)
	if !ok {
		return err
	}
	switch {
	case e.Param == "name":
		f.NameErr = e.Message
	case e.Param == "url":
		f.URLErr = e.Message
	case strings.HasPrefix(e.Param, "event_types"):
		f.TypesErr = e.Message
	default:
		f.Bad = e.Message
	}
	return t.renderWebhooks(w, r, s, e.Status(), webhooksPage{Form: f})
}

// endpointAction answers POST /console/webhooks/{id}/{action}: status, rotate, test, delete.
func (t *Tenant) endpointAction(w http.ResponseWriter, r *http.Request, s *Session) error {
	hooks, err := t.webhooksOn(s)
	if err != nil {
		return err
	}
	ctx, tenant, id := r.Context(), s.Caller.Key.TenantID, r.PathValue("id")
	end, err := t.admit(s.Caller)
	if err != nil {
		return err
	}
	defer end()
	p := webhooksPage{Form: endpointForm{Types: webhook.EventTypes}}
	switch r.PathValue("action") {
	case "status":
		status := r.PostForm.Get("status")
		if _, err = hooks.SetStatus(ctx, tenant, id, status); err == nil {
			http.Redirect(w, r, "/console/webhooks?done="+url.QueryEscape(status), http.StatusSeeOther)
			return nil
		}
	case "rotate":
		body := []byte(`{"keep_old_secret_active_for_24_hours":false}`)
		if r.PostForm.Get("keep_old") == "on" {
			body = []byte(`{"keep_old_secret_active_for_24_hours":true}`)
		}
		var rot webhook.Endpoint
		if rot, err = hooks.RotateSecret(ctx, tenant, id, body); err == nil {
			p.Secret, p.SecretFor = rot.SigningSecret, rot.ID
			p.Flash = "The secret of " + rot.Name + " is rotated."
			if r.PostForm.Get("keep_old") == "on" {
				p.Flash += " The old one also signs for 24 hours."
			} else {
				p.Flash += " The old one no longer signs."
			}
			return t.renderWebhooks(w, r, s, http.StatusOK, p)
		}
	case "test":
		body, _ := json.Marshal(map[string]string{"event_type": r.PostForm.Get("event_type")})
		var res webhook.TestResult
		if res, err = hooks.Test(ctx, tenant, id, body); err == nil {
			p.Flash = "The test event was sent: the endpoint answered HTTP " + http.StatusText(res.StatusCode) + " (" + strconv.Itoa(res.StatusCode) + ")."
			return t.renderWebhooks(w, r, s, http.StatusOK, p)
		}
	case "delete":
		if _, err = hooks.Delete(ctx, tenant, id); err == nil {
			http.Redirect(w, r, "/console/webhooks?done=deleted", http.StatusSeeOther)
			return nil
		}
	default:
		return apierr.New(apierr.KindNotFound, "There is no console page at this address.")
	}
	e, ok := shownOnForm(err)
	if !ok || e.Kind == apierr.KindNotFound {
		return err
	}
	p.Problem = e.Message
	return t.renderWebhooks(w, r, s, e.Status(), p)
}

// endpointLog answers GET /console/webhooks/{id}: the endpoint's delivery log.
func (t *Tenant) endpointLog(w http.ResponseWriter, r *http.Request, s *Session) error {
	return t.renderLog(w, r, s, http.StatusOK, r.URL.Query(), "", "")
}

func (t *Tenant) renderLog(w http.ResponseWriter, r *http.Request, s *Session, status int, v url.Values, flash, problem string) error {
	hooks, err := t.webhooksOn(s)
	if err != nil {
		return err
	}
	ctx, tenant, id := r.Context(), s.Caller.Key.TenantID, r.PathValue("id")
	ep, err := hooks.Get(ctx, tenant, id)
	if err != nil {
		return err
	}
	row, err := hooks.Store.WebhookEndpoint(ctx, tenant, ep.ID)
	if err != nil {
		return err
	}
	p := logPage{Base: "/console/webhooks/" + url.PathEscape(ep.ID), EndpointName: ep.Name, EndpointID: ep.ID, Status: ep.Status,
		URL: ep.URL, AutoDisabled: hooks.AutoDisabled(row), FailureRun: row.FailureRun, CanRedeliver: true, Flash: flash,
		Problem: problem, Statuses: webhook.Statuses, EventTypes: webhook.EventTypes}
	f, q, ok := parseLogFilters(v)
	p.Filters = f
	if !ok {
		status = http.StatusBadRequest
	} else {
		list, err := hooks.Deliveries(ctx, tenant, ep.ID, q)
		if err != nil {
			return err
		}
		if err := loadLog(ctx, hooks.Store, &p, list); err != nil {
			return err
		}
	}
	t.render(w, r, s, status, "tenant_webhook", ep.Name, p)
	return nil
}

// redeliver answers POST /console/webhooks/{id}/deliveries/{delivery}/redeliver.
func (t *Tenant) redeliver(w http.ResponseWriter, r *http.Request, s *Session) error {
	hooks, err := t.webhooksOn(s)
	if err != nil {
		return err
	}
	end, err := t.admit(s.Caller)
	if err != nil {
		return err
	}
	d, err := hooks.Redeliver(r.Context(), s.Caller.Key.TenantID, r.PathValue("id"), r.PathValue("delivery"))
	end()
	if err == nil {
		return t.renderLog(w, r, s, http.StatusOK, url.Values{}, "Event "+d.EventID+" is queued again as delivery "+d.ID+".", "")
	}
	e, ok := shownOnForm(err)
	if !ok || e.Kind == apierr.KindNotFound {
		return err
	}
	return t.renderLog(w, r, s, e.Status(), url.Values{}, "", e.Message)
}
