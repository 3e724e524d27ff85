package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/keys"
	"mediagen/internal/logctx"
	"mediagen/internal/store"
)

// CallerFrom returns the caller of an authenticated request.
func CallerFrom(ctx context.Context) (keys.Caller, bool) {
	if i := infoFrom(ctx); i != nil && i.principal != nil {
		return *i.principal, true
	}
	return keys.Caller{}, false
}

func authErr(code, msg string) *apierr.Error {
	return &apierr.Error{Kind: apierr.KindAuthentication, Code: code, Message: msg}
}

// auth requires a Bearer key that exists, is not revoked, and belongs to a configured tenant,
// and then admits the request under the key's and the tenant's limits (limits.go).
func (s *Server) auth(next handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		h := r.Header.Get("Authorization")
		if h == "" {
			return authErr("missing_api_key", "Missing Authorization header. Send Authorization: Bearer <API key>.")
		}
		scheme, token, _ := strings.Cut(strings.TrimSpace(h), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			return authErr("invalid_auth_scheme", "The Authorization header must use the Bearer scheme: Authorization: Bearer <API key>.")
		}
		token = strings.TrimSpace(token)
		if token == "" {
			return authErr("missing_api_key", "The Bearer token is empty. Send Authorization: Bearer <API key>.")
		}
		if !keys.WellFormed(token) {
			return authErr("invalid_api_key", "The API key is not valid.")
		}
		hash := keys.Hash(token)
		now := s.now()
		key, cached := s.keys.get(hash, now)
		if !cached {
			var err error
			key, err = s.store.KeyByHash(r.Context(), hash)
			if errors.Is(err, store.ErrNotFound) {
				return authErr("invalid_api_key", "The API key is not valid.")
			}
			if err != nil {
				return err
			}
			s.keys.put(hash, key, now)
		}
		// A tenant's own address takes only its keys: another tenant's key is refused there
		// exactly as an unknown one is (before its state is looked at), so an address tells
		// nothing about the keys of others (catalog addresses).
		cat := s.catalogs.Current() // this request's catalog, to its end
		if owner, ok := cat.TenantByHost(r.Host); ok && owner.ID != key.TenantID {
			return authErr("invalid_api_key", "The API key is not valid.")
		}
		// Revocation, expiry and a rotated-out secret are checked on every request against
		// the request's clock, cached key or not: the cache can keep a key for its TTL, never
		// let it through past its expiry or its old secret's grace.
		if no := keys.Usable(key, hash, now); no != nil {
			return authErr(no.Code, no.Message)
		}
		tenant, ok := cat.Tenant(key.TenantID)
		if !ok {
			return apierr.New(apierr.KindPermission, "The API key's account is not configured on this service. Contact the operator.")
		}
		info := infoFrom(r.Context())
		if info == nil { // auth used without the middleware chain (tests)
			info = &reqInfo{}
			r = r.WithContext(logctx.WithCarrier(r.Context(), info))
		}
		// Links and pages in the answer are on the tenant's address: the one the request came
		// in on, else its first; none: the service's own (--public-url).
		r = r.WithContext(blob.WithLinkBase(r.Context(), tenant.AddressFor(r.Host)))
		info.keyID = key.ID
		info.principal = &keys.Caller{Key: key, Tenant: tenant, Catalog: cat}
		end, err := s.admit(info.principal)
		if err != nil {
			return err
		}
		defer end()
		return next(w, r)
	}
}
