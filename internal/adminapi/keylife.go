package adminapi

import (
	"net/http"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/money"
)

// keyLifecycleRoutes: key updates, rotation and debits (docs/admin.md, "Keys: expiry, rotation,
// caps"). Key creation's expiry, caps and initial credit are members of POST /admin/v1/keys
// (routes.go).
func (s *Server) keyLifecycleRoutes() {
	svc := s.svc
	s.Write("PATCH /admin/v1/keys/{id}", admin.RoleOperator, http.StatusOK, func(r *Request) (any, error) {
		b, err := r.Decode(Str("name"), Str("expires_at"), Cap("daily_cap"), Cap("monthly_cap"))
		if err != nil {
			return nil, err
		}
		var in admin.KeyUpdate
		if b.Has("name") {
			name := b.Str("name")
			in.Name = &name
		}
		if b.Has("expires_at") {
			at, err := optionalTime(b, "expires_at")
			if err != nil {
				return nil, err
			}
			in.ExpiresAt = &at
		}
		for _, f := range []struct {
			name string
			to   **money.Cap
		}{{"daily_cap", &in.Daily}, {"monthly_cap", &in.Monthly}} {
			if b.Has(f.name) {
				v := b.Cap(f.name)
				*f.to = &v
			}
		}
		return svc.UpdateKey(r.Context(), r.Actor, r.PathValue("id"), in)
	})
	s.Write("POST /admin/v1/keys/{id}/rotate", admin.RoleOperator, http.StatusOK, func(r *Request) (any, error) {
		b, err := r.Decode(Int("grace"))
		if err != nil {
			return nil, err
		}
		g := b.Int("grace")
		if g < 0 || g > int64(maxGraceSeconds) {
			return nil, invalid("grace", "grace must be a number of seconds from 0 to %d (90 days).", maxGraceSeconds)
		}
		return svc.RotateKey(r.Context(), r.Actor, r.PathValue("id"), time.Duration(g)*time.Second)
	})
	s.Write("POST /admin/v1/keys/{id}/debits", admin.RoleOperator, http.StatusCreated, func(r *Request) (any, error) {
		b, err := r.Decode(Dec("amount").Req(), Str("note").Req(), Bool("force"))
		if err != nil {
			return nil, err
		}
		return svc.Debit(r.Context(), r.Actor, r.PathValue("id"), admin.DebitInput{Amount: b.Dec("amount"), Note: b.Str("note"), Force: b.Bool("force")})
	})
}

const maxGraceSeconds = 90 * 24 * 3600

// optionalTime reads an RFC 3339 time member; "" is the zero time (no expiry).
func optionalTime(b *Body, name string) (time.Time, error) {
	v := b.Str(name)
	if v == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, invalid(name, "%s must be an RFC 3339 time such as 2027-01-01T00:00:00Z, or \"\" for none.", name)
	}
	return t.UTC(), nil
}
