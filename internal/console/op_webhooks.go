package console

import (
	"net/http"
	"net/url"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// The operator console's Webhooks page (GET /console/webhooks?tenant=T): any tenant's
// endpoints, with disable and enable for an operator; one endpoint's delivery log with
// redeliver (GET /console/webhooks/{id}). Every write goes through the admin service and is
// audited as the API's are.

// opWebhooksPage is the data of op_webhooks.html.
type opWebhooksPage struct {
	Tenants   []admin.Tenant
	Tenant    string
	Endpoints []admin.WebhookEndpoint
	Next      string
	Flash     string
}

// opWebhooks answers GET /console/webhooks.
func (o *Operator) opWebhooks(w http.ResponseWriter, r *http.Request, s *Session) error {
	ctx, a := r.Context(), o.actor(r, s)
	tenants, err := o.cfg.Admin.Tenants(ctx, a)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	p := opWebhooksPage{Tenants: tenants.Data, Tenant: q.Get("tenant")}
	if d := q.Get("done"); d == store.WebhookEnabled || d == store.WebhookDisabled {
		p.Flash = "The endpoint is " + d + "; the change is in the audit log."
	}
	if p.Tenant != "" {
		list, err := o.cfg.Admin.WebhookEndpoints(ctx, a, admin.WebhookEndpointFilter{Tenant: p.Tenant, Cursor: q.Get("cursor")})
		if err != nil {
			return err
		}
		p.Endpoints = list.Data
		if list.HasMore {
			p.Next = "/console/webhooks?" + url.Values{"tenant": {p.Tenant}, "cursor": {list.NextCursor}}.Encode()
		}
	}
	o.Render(w, r, s, "op_webhooks", "Webhooks", p)
	return nil
}

// opWebhookStatus answers POST /console/webhooks/{id}/status (operator).
func (o *Operator) opWebhookStatus(w http.ResponseWriter, r *http.Request, s *Session) error {
	status := r.PostForm.Get("status")
	if status != store.WebhookEnabled && status != store.WebhookDisabled {
		return apierr.Invalid("status", "Choose enabled or disabled.")
	}
	ep, err := o.cfg.Admin.SetWebhookEndpointStatus(r.Context(), o.actor(r, s), r.PathValue("id"), status)
	if err != nil {
		return err
	}
	http.Redirect(w, r, "/console/webhooks?"+url.Values{"tenant": {ep.Tenant}, "done": {ep.Status}}.Encode(), http.StatusSeeOther)
	return nil
}

// opWebhookLog answers GET /console/webhooks/{id}.
func (o *Operator) opWebhookLog(w http.ResponseWriter, r *http.Request, s *Session) error {
	return o.renderOpLog(w, r, s, http.StatusOK, r.URL.Query(), "", "")
}

func (o *Operator) renderOpLog(w http.ResponseWriter, r *http.Request, s *Session, status int, v url.Values, flash, problem string) error {
	ctx, a := r.Context(), o.actor(r, s)
	ep, err := o.cfg.Admin.WebhookEndpoint(ctx, a, r.PathValue("id"))
	if err != nil {
		return err
	}
	p := logPage{Base: "/console/webhooks/" + url.PathEscape(ep.ID), EndpointName: ep.Name, EndpointID: ep.ID, Tenant: ep.Tenant,
		Status: ep.Status, URL: ep.URL, AutoDisabled: ep.AutoDisabled, FailureRun: ep.FailureRun, CanRedeliver: s.Can(admin.RoleOperator),
		Flash: flash, Problem: problem, Statuses: webhook.Statuses, EventTypes: webhook.EventTypes}
	f, q, ok := parseLogFilters(v)
	p.Filters = f
	if !ok {
		status = http.StatusBadRequest
	} else {
		list, err := o.cfg.Admin.WebhookDeliveries(ctx, a, ep.ID, q)
		if err != nil {
			return err
		}
		for _, d := range list.Data {
			one, err := o.cfg.Admin.WebhookDelivery(ctx, a, ep.ID, d.ID)
			if err != nil {
				return err
			}
			row := deliveryRow{ID: d.ID, EventID: d.EventID, EventType: d.EventType, Status: d.Status, AttemptCount: d.AttemptCount,
				Created: d.CreatedAt, Updated: d.UpdatedAt}
			for _, at := range one.Attempts {
				row.Attempts = append(row.Attempts, attemptRow{N: at.Attempt, At: at.At, StatusCode: at.StatusCode,
					Latency: time.Duration(at.LatencyMS) * time.Millisecond, Error: at.Error})
			}
			p.Rows = append(p.Rows, row)
		}
		if list.HasMore {
			p.Next = f.nextURL(p.Base, list.NextCursor)
		}
	}
	o.render(w, r, s, status, "op_webhook", ep.Name, p)
	return nil
}

// opRedeliver answers POST /console/webhooks/{id}/deliveries/{delivery}/redeliver (operator).
func (o *Operator) opRedeliver(w http.ResponseWriter, r *http.Request, s *Session) error {
	d, err := o.cfg.Admin.RedeliverWebhook(r.Context(), o.actor(r, s), r.PathValue("id"), r.PathValue("delivery"))
	if err == nil {
		return o.renderOpLog(w, r, s, http.StatusOK, url.Values{}, "Event "+d.EventID+" is queued again as delivery "+d.ID+"; the redelivery is in the audit log.", "")
	}
	e := apierr.As(err)
	if e.Kind != apierr.KindInvalid {
		return err
	}
	return o.renderOpLog(w, r, s, e.Status(), url.Values{}, "", e.Message)
}
