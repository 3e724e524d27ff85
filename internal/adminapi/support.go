package adminapi

import (
	"mediagen/internal/admin"
)

// supportRoutes are the support reads (docs/admin.md, "Support: finding a task"): one task,
// speech record or asset by id, of any tenant, and searches. Reads, so the viewer role may use
// them; they write nothing.
func (s *Server) supportRoutes() {
	svc := s.svc
	search := func(r *Request, names ...string) (admin.SearchInput, error) {
		q, err := r.Query(append(names, "since", "until", "order", "cursor", "limit")...)
		if err != nil {
			return admin.SearchInput{}, err
		}
		in := admin.SearchInput{Tenant: q.Str("tenant"), Key: q.Str("key"), Status: q.Str("status"), Alias: q.Str("alias"),
			Route: q.Str("route"), UpstreamJob: q.Str("upstream_job"), Group: q.Str("group"), Order: q.Str("order"), Cursor: q.Str("cursor")}
		if in.Since, err = q.Time("since"); err != nil {
			return in, err
		}
		if in.Until, err = q.Time("until"); err != nil {
			return in, err
		}
		if in.Limit, err = q.Int("limit"); err != nil {
			return in, err
		}
		if in.Limit == 0 && q.Str("limit") != "" {
			in.Limit = -1 // an explicit 0 is out of range, not the default
		}
		return in, nil
	}
	s.Read("GET /admin/v1/tasks/{id}", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.Task(r.Context(), r.Actor, r.PathValue("id"))
	})
	s.Read("GET /admin/v1/tasks", admin.RoleViewer, func(r *Request) (any, error) {
		in, err := search(r, "tenant", "key", "status", "alias", "route", "upstream_job")
		if err != nil {
			return nil, err
		}
		return svc.SearchTasks(r.Context(), r.Actor, in)
	})
	s.Read("GET /admin/v1/speech/{id}", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.Speech(r.Context(), r.Actor, r.PathValue("id"))
	})
	s.Read("GET /admin/v1/speech", admin.RoleViewer, func(r *Request) (any, error) {
		in, err := search(r, "tenant", "key", "status", "alias")
		if err != nil {
			return nil, err
		}
		return svc.SearchSpeeches(r.Context(), r.Actor, in)
	})
	s.Read("GET /admin/v1/assets/{id}", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.Asset(r.Context(), r.Actor, r.PathValue("id"))
	})
	s.Read("GET /admin/v1/assets", admin.RoleViewer, func(r *Request) (any, error) {
		in, err := search(r, "tenant", "key", "group", "status")
		if err != nil {
			return nil, err
		}
		return svc.SearchAssets(r.Context(), r.Actor, in)
	})
}
