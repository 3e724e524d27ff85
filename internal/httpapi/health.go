package httpapi

import (
	"context"
	"net/http"
	"time"

	"mediagen/internal/apierr"
)

type healthBody struct {
	Status string `json:"status"`
}

// healthz says the process is up; it touches nothing else so it cannot fail for other reasons.
func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, healthBody{Status: "ok"})
	return nil
}

// readyz says the database answers within a second.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), time.Second)
	defer cancel()
	if err := s.store.Ping(ctx); err != nil {
		return &apierr.Error{Kind: apierr.KindUnavailable, Message: "The database is not reachable.", Err: err}
	}
	writeJSON(w, http.StatusOK, healthBody{Status: "ready"})
	return nil
}
