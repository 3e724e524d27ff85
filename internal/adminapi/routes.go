package adminapi

import (
	"net/http"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/store"
)

// coreRoutes are the routes of the admin framework itself: who am I, tokens, keys, credits,
// asset groups, audit and tenants. Roles: docs/admin.md.
func (s *Server) coreRoutes() {
	svc := s.svc
	s.usageRoutes() // usage.go
	s.Read("GET /admin/v1/whoami", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.WhoAmI(r.Context(), r.Actor)
	})

	s.Write("POST /admin/v1/tokens", admin.RoleOwner, http.StatusCreated, func(r *Request) (any, error) {
		b, err := r.Decode(Str("name").Req(), Str("role").Req(), Int("expires_in"))
		if err != nil {
			return nil, err
		}
		exp := b.Int("expires_in")
		if b.Has("expires_in") && (exp <= 0 || exp > admin.MaxTokenLifetimeDays*86400) {
			return nil, invalid("expires_in", "expires_in must be a number of seconds between 1 and %d.", admin.MaxTokenLifetimeDays*86400)
		}
		return svc.CreateToken(r.Context(), r.Actor, admin.TokenInput{Name: b.Str("name"), Role: b.Str("role"), ExpiresIn: time.Duration(exp) * time.Second})
	})
	s.Read("GET /admin/v1/tokens", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.Tokens(r.Context(), r.Actor)
	})
	s.Write("POST /admin/v1/tokens/{id}/revoke", admin.RoleOwner, http.StatusOK, func(r *Request) (any, error) {
		if _, err := r.Decode(); err != nil {
			return nil, err
		}
		return svc.RevokeToken(r.Context(), r.Actor, r.PathValue("id"))
	})

	s.Write("POST /admin/v1/keys", admin.RoleOperator, http.StatusCreated, func(r *Request) (any, error) {
		b, err := r.Decode(Str("tenant").Req(), Str("name"), Bool("unlimited"), Str("expires_at"), Cap("daily_cap"), Cap("monthly_cap"), Dec("credit"))
		if err != nil {
			return nil, err
		}
		in := admin.KeyInput{Tenant: b.Str("tenant"), Name: b.Str("name"), Unlimited: b.Bool("unlimited"),
			Caps: store.Caps{Daily: b.Cap("daily_cap"), Monthly: b.Cap("monthly_cap")}, Credit: b.Dec("credit")}
		if in.ExpiresAt, err = optionalTime(b, "expires_at"); err != nil {
			return nil, err
		}
		if b.Has("credit") && in.Credit <= 0 {
			return nil, invalid("credit", "credit must be a positive amount, or omitted.")
		}
		return svc.CreateKey(r.Context(), r.Actor, in)
	})
	s.Read("GET /admin/v1/keys", admin.RoleViewer, func(r *Request) (any, error) {
		q, err := r.Query("tenant", "state", "name_prefix", "cursor", "limit")
		if err != nil {
			return nil, err
		}
		limit, err := q.Int("limit")
		if err != nil {
			return nil, err
		}
		return svc.Keys(r.Context(), r.Actor, admin.KeyFilter{Tenant: q.Str("tenant"), State: q.Str("state"),
			NamePrefix: q.Str("name_prefix"), Cursor: q.Str("cursor"), Limit: limit})
	})
	s.Read("GET /admin/v1/keys/{id}", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.Key(r.Context(), r.Actor, r.PathValue("id"))
	})
	s.Write("POST /admin/v1/keys/{id}/revoke", admin.RoleOperator, http.StatusOK, func(r *Request) (any, error) {
		if _, err := r.Decode(); err != nil {
			return nil, err
		}
		return svc.RevokeKey(r.Context(), r.Actor, r.PathValue("id"))
	})
	s.Write("POST /admin/v1/keys/{id}/credits", admin.RoleOperator, http.StatusCreated, func(r *Request) (any, error) {
		b, err := r.Decode(Dec("amount").Req(), Str("note"), Bool("force"))
		if err != nil {
			return nil, err
		}
		return svc.Credit(r.Context(), r.Actor, r.PathValue("id"), admin.CreditInput{Amount: b.Dec("amount"), Note: b.Str("note"), Force: b.Bool("force")})
	})

	s.Write("POST /admin/v1/asset-groups", admin.RoleOperator, http.StatusOK, func(r *Request) (any, error) {
		b, err := r.Decode(Str("tenant").Req(), Str("id"), Str("name"), Str("description"))
		if err != nil {
			return nil, err
		}
		return svc.GrantGroup(r.Context(), r.Actor, admin.GroupInput{Tenant: b.Str("tenant"), ID: b.Str("id"), Name: b.Str("name"), Description: b.Str("description")})
	})
	s.Read("GET /admin/v1/asset-groups", admin.RoleViewer, func(r *Request) (any, error) {
		q, err := r.Query("tenant", "cursor", "limit")
		if err != nil {
			return nil, err
		}
		limit, err := q.Int("limit")
		if err != nil {
			return nil, err
		}
		return svc.Groups(r.Context(), r.Actor, admin.GroupFilter{Tenant: q.Str("tenant"), Cursor: q.Str("cursor"), Limit: limit})
	})
	s.Write("POST /admin/v1/asset-groups/{id}/revoke", admin.RoleOperator, http.StatusOK, func(r *Request) (any, error) {
		if _, err := r.Decode(); err != nil {
			return nil, err
		}
		return svc.RevokeGroup(r.Context(), r.Actor, r.PathValue("id"))
	})

	s.Read("GET /admin/v1/audit", admin.RoleViewer, func(r *Request) (any, error) {
		q, err := r.Query("actor", "action", "target", "since", "until", "cursor", "limit")
		if err != nil {
			return nil, err
		}
		f := admin.AuditFilter{Actor: q.Str("actor"), Action: q.Str("action"), Target: q.Str("target"), Cursor: q.Str("cursor")}
		if f.Since, err = q.Time("since"); err != nil {
			return nil, err
		}
		if f.Until, err = q.Time("until"); err != nil {
			return nil, err
		}
		if f.Limit, err = q.Int("limit"); err != nil {
			return nil, err
		}
		return svc.Audit(r.Context(), r.Actor, f)
	})
	s.Read("GET /admin/v1/tenants", admin.RoleViewer, func(r *Request) (any, error) {
		if _, err := r.Query(); err != nil {
			return nil, err
		}
		return svc.Tenants(r.Context(), r.Actor)
	})
}
