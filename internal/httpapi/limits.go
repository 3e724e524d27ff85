package httpapi

import (
	"errors"
	"net/http"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/keys"
	"mediagen/internal/limits"
)

// rateLimited counts requests refused by a limit. Its labels come from closed sets (limits'
// scopes and kinds), never from the key or tenant, so a client cannot grow the series.
func newRateLimited(reg *prometheus.Registry) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_rate_limited_total",
		Help: "Requests refused with 429 by a limit, by scope (key, tenant; client, link, server for file downloads) and limit (rate, in_flight).",
	}, []string{"scope", "limit"})
	reg.MustRegister(c)
	// Every series that can move exists from the start, at 0.
	for _, scope := range []string{limits.ScopeKey, limits.ScopeTenant, limits.ScopeClient} {
		for _, limit := range []string{limits.LimitRate, limits.LimitInFlight} {
			c.WithLabelValues(scope, limit)
		}
	}
	c.WithLabelValues(limits.ScopeLink, limits.LimitInFlight)
	c.WithLabelValues(limits.ScopeServer, limits.LimitInFlight)
	return c
}

// admit applies the per-replica limits to an authenticated request, right after
// authentication and before the body is read: the request rate of the key and of its tenant,
// then the key's requests being processed. The returned function ends the request's count.
func (s *Server) admit(p *keys.Caller) (end func(), err error) {
	lim := p.Tenant.Limits()
	if err := s.limiter.Allow(p.Key.ID, p.Tenant.ID, lim); err != nil {
		return nil, err
	}
	return s.limiter.Begin(p.Key.ID, lim)
}

// noteRefusal sets Retry-After and counts a request refused by a limit (in this process, or
// an in-flight limit checked where the work would have been accepted).
func (s *Server) noteRefusal(w http.ResponseWriter, err error) {
	var ref *limits.Refusal
	if !errors.As(err, &ref) {
		return
	}
	w.Header().Set("Retry-After", strconv.Itoa(ref.RetryAfter))
	s.rateLimited.WithLabelValues(ref.Scope, ref.Limit).Inc()
}
