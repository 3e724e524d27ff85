package adminapi

import (
	"net/http"
	"net/url"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// webhookRoutes: any tenant's webhook endpoints and their delivery logs (docs/admin.md,
// "Webhooks"); the writes (disable, enable, redeliver) are audited like every admin write.
func (s *Server) webhookRoutes() {
	svc := s.svc
	s.Read("GET /admin/v1/webhook_endpoints", admin.RoleViewer, func(r *Request) (any, error) {
		q, err := r.Query("tenant", "cursor", "limit")
		if err != nil {
			return nil, err
		}
		limit, err := q.Int("limit")
		if err != nil {
			return nil, err
		}
		return svc.WebhookEndpoints(r.Context(), r.Actor, admin.WebhookEndpointFilter{Tenant: q.Str("tenant"), Cursor: q.Str("cursor"), Limit: limit})
	})
	s.Read("GET /admin/v1/webhook_endpoints/{id}", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.WebhookEndpoint(r.Context(), r.Actor, r.PathValue("id"))
	})
	for action, status := range map[string]string{"disable": store.WebhookDisabled, "enable": store.WebhookEnabled} {
		s.Write("POST /admin/v1/webhook_endpoints/{id}/"+action, admin.RoleOperator, http.StatusOK, func(r *Request) (any, error) {
			if _, err := r.Decode(); err != nil {
				return nil, err
			}
			return svc.SetWebhookEndpointStatus(r.Context(), r.Actor, r.PathValue("id"), status)
		})
	}
	s.Read("GET /admin/v1/webhook_endpoints/{id}/deliveries", admin.RoleViewer, func(r *Request) (any, error) {
		q, err := r.Query("status", "event_type", "event_id", "since", "until", "cursor", "limit")
		if err != nil {
			return nil, err
		}
		// The public API's parser, with the admin API's cursor and RFC 3339 times.
		v := q.v
		if c := v.Get("cursor"); c != "" {
			v = cloneValues(v)
			v.Del("cursor")
			v.Set("after", c)
		}
		for _, name := range []string{"since", "until"} {
			if _, err := q.Time(name); err != nil {
				return nil, err
			}
		}
		lq, err := webhook.ParseLogQuery(v)
		if err != nil {
			return nil, cursorParam(err)
		}
		return svc.WebhookDeliveries(r.Context(), r.Actor, r.PathValue("id"), lq)
	})
	s.Read("GET /admin/v1/webhook_endpoints/{id}/deliveries/{delivery_id}", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.WebhookDelivery(r.Context(), r.Actor, r.PathValue("id"), r.PathValue("delivery_id"))
	})
	s.Write("POST /admin/v1/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver", admin.RoleOperator, http.StatusCreated, func(r *Request) (any, error) {
		if _, err := r.Decode(); err != nil {
			return nil, err
		}
		return svc.RedeliverWebhook(r.Context(), r.Actor, r.PathValue("id"), r.PathValue("delivery_id"))
	})
}

func cloneValues(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

// cursorParam names the admin API's cursor where the public parser named its after.
func cursorParam(err error) error {
	if e := apierr.As(err); e.Param == "after" {
		return invalid("cursor", "cursor is not one this service handed out.")
	}
	return err
}
