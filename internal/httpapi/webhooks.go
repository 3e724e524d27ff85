package httpapi

import (
	"net/http"
	"strconv"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
	"mediagen/internal/webhook"
)

// webhookRoutes registers /v1/webhook_endpoints in the paths of OpenAI's API (its SDKs'
// client.webhooks.create/retrieve/update/list/delete/rotateSecret/test). A tenant whose
// operator has not switched webhooks on gets the unknown route's 404 from every one of them.
func (s *Server) webhookRoutes() {
	s.handle("POST /v1/webhook_endpoints", s.webhooksOn(s.createWebhookEndpoint))
	s.handle("GET /v1/webhook_endpoints", s.webhooksOn(s.listWebhookEndpoints))
	s.handle("GET /v1/webhook_endpoints/{id}", s.webhooksOn(s.getWebhookEndpoint))
	s.handle("POST /v1/webhook_endpoints/{id}", s.webhooksOn(s.updateWebhookEndpoint))
	s.handle("DELETE /v1/webhook_endpoints/{id}", s.webhooksOn(s.deleteWebhookEndpoint))
	s.handle("POST /v1/webhook_endpoints/{id}/rotate_secret", s.webhooksOn(s.rotateWebhookSecret))
	s.handle("POST /v1/webhook_endpoints/{id}/test", s.webhooksOn(s.testWebhookEndpoint))
	// Ours, not OpenAI's (its API has no delivery log): the endpoint's deliveries, one with its
	// attempts, and a redelivery by hand (docs/webhooks.md, "Delivery log").
	s.handle("GET /v1/webhook_endpoints/{id}/deliveries", s.webhooksOn(s.listWebhookDeliveries))
	s.handle("GET /v1/webhook_endpoints/{id}/deliveries/{delivery_id}", s.webhooksOn(s.getWebhookDelivery))
	s.handle("POST /v1/webhook_endpoints/{id}/deliveries/{delivery_id}/redeliver", s.webhooksOn(s.redeliverWebhook))
}

// webhooksOn answers the unknown route's 404 unless webhooks are on: for every tenant when no
// tenant of the catalog has them (before authentication, as for any unknown path), else for
// the caller's tenant.
func (s *Server) webhooksOn(next handlerFunc) handlerFunc {
	authed := s.auth(func(w http.ResponseWriter, r *http.Request) error {
		c, _ := CallerFrom(r.Context())
		if s.webhooks == nil || !c.Tenant.WebhooksEnabled() {
			return apiErrNotFound()
		}
		return next(w, r)
	})
	return func(w http.ResponseWriter, r *http.Request) error {
		if s.webhooks == nil || !s.catalogs.Current().AnyWebhooks() {
			return apiErrNotFound()
		}
		return authed(w, r)
	}
}

// webhookBody reads a JSON body; calls without parameters may send none at all.
func (s *Server) webhookBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength == 0 && r.Header.Get("Content-Type") == "" {
		return nil, nil
	}
	return s.readJSONBody(w, r)
}

func (s *Server) createWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	body, err := s.readJSONBody(w, r)
	if err != nil {
		return err
	}
	c, _ := CallerFrom(r.Context())
	out, err := s.webhooks.Create(r.Context(), c.Key.TenantID, c.Tenant.WebhookEndpointLimit(), body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) listWebhookEndpoints(w http.ResponseWriter, r *http.Request) error {
	c, _ := CallerFrom(r.Context())
	out, err := s.webhooks.List(r.Context(), c.Key.TenantID, r.URL.Query())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	c, _ := CallerFrom(r.Context())
	out, err := s.webhooks.Get(r.Context(), c.Key.TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) updateWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	body, err := s.webhookBody(w, r)
	if err != nil {
		return err
	}
	c, _ := CallerFrom(r.Context())
	out, err := s.webhooks.Update(r.Context(), c.Key.TenantID, r.PathValue("id"), body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) deleteWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	c, _ := CallerFrom(r.Context())
	out, err := s.webhooks.Delete(r.Context(), c.Key.TenantID, r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) rotateWebhookSecret(w http.ResponseWriter, r *http.Request) error {
	body, err := s.webhookBody(w, r)
	if err != nil {
		return err
	}
	c, _ := CallerFrom(r.Context())
	out, err := s.webhooks.RotateSecret(r.Context(), c.Key.TenantID, r.PathValue("id"), body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) testWebhookEndpoint(w http.ResponseWriter, r *http.Request) error {
	body, err := s.webhookBody(w, r)
	if err != nil {
		return err
	}
	c, _ := CallerFrom(r.Context())
	out, err := s.webhooks.Test(r.Context(), c.Key.TenantID, r.PathValue("id"), body)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) listWebhookDeliveries(w http.ResponseWriter, r *http.Request) error {
	c, _ := CallerFrom(r.Context())
	q, err := webhook.ParseLogQuery(r.URL.Query())
	if err != nil {
		return err
	}
	out, err := s.webhooks.Deliveries(r.Context(), c.Key.TenantID, r.PathValue("id"), q)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) getWebhookDelivery(w http.ResponseWriter, r *http.Request) error {
	c, _ := CallerFrom(r.Context())
	out, err := s.webhooks.Delivery(r.Context(), c.Key.TenantID, r.PathValue("id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func (s *Server) redeliverWebhook(w http.ResponseWriter, r *http.Request) error {
	body, err := s.webhookBody(w, r)
	if err != nil {
		return err
	}
	if len(body) > 0 {
		var m map[string]jsontext.Value
		if err := json.Unmarshal(body, &m); err != nil {
			return apierr.Invalid("", "The request body must be one JSON object.")
		}
		for k := range m {
			return apierr.Invalid(k, "Unknown parameter "+strconv.Quote(k)+": this call takes none.")
		}
	}
	c, _ := CallerFrom(r.Context())
	out, err := s.webhooks.Redeliver(r.Context(), c.Key.TenantID, r.PathValue("id"), r.PathValue("delivery_id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
