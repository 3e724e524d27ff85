package adminapi

import (
	"net/http"

	"mediagen/internal/admin"
)

// CatalogRoutes adds the live catalog reload (docs/catalog.md, "Reload"): every replica's
// version, and the reload of this process's catalog, which every other replica follows.
func (s *Server) CatalogRoutes(reload admin.CatalogReloader) {
	svc := s.svc
	s.Read("GET /admin/v1/catalog", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.CatalogStatus(r.Context(), r.Actor)
	})
	s.Write("POST /admin/v1/catalog/reload", admin.RoleOwner, http.StatusOK, func(r *Request) (any, error) {
		if _, err := r.Decode(); err != nil {
			return nil, err
		}
		return svc.ReloadCatalog(r.Context(), r.Actor, reload)
	})
}
