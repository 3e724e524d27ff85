package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/keys"
	"mediagen/internal/store"
)

// Session is a signed-in person: a tenant's key, or an operator's admin token.
type Session struct {
	Kind      Kind
	CSRF      string
	ExpiresAt time.Time
	hash      []byte
	// Caller is the tenant console's principal, the same one the public API builds for the key.
	Caller keys.Caller
	// Actor and Token are the operator console's principal.
	Actor admin.Actor
	Token store.AdminToken
}

// Can reports whether an operator session's role includes role (a tenant session: false).
func (s *Session) Can(role admin.Role) bool {
	return s != nil && s.Kind == KindOperator && s.Actor.Role.Allows(role)
}

// cookieName differs between the consoles: cookies do not tell ports apart, and both consoles
// often run on one host.
func (k *core) cookieName() string {
	if k.kind == KindOperator {
		return "mediagen_admin_session"
	}
	return "mediagen_session"
}

var errNoSession = errors.New("console: no session")

// session finds the request's session and re-checks the credential that opened it.
func (k *core) session(r *http.Request) (*Session, error) {
	c, err := r.Cookie(k.cookieName())
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil, errNoSession
	}
	hash := hashSecret(c.Value)
	row, err := k.Sessions.ConsoleSession(r.Context(), hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, errNoSession
	}
	if err != nil {
		return nil, fmt.Errorf("console session: %w", err)
	}
	now := k.Now()
	if row.Kind != string(k.kind) || !row.Open(now) {
		return nil, errNoSession
	}
	s := &Session{Kind: k.kind, CSRF: row.CSRF, ExpiresAt: row.ExpiresAt, hash: hash}
	if err := k.authenticate(r.Context(), row.CredentialHash, s); err != nil {
		if e := apierr.As(err); e.Kind == apierr.KindAuthentication || e.Kind == apierr.KindPermission {
			// The key or token was revoked, expired or rotated out: the session ends with it.
			_ = k.Sessions.EndConsoleSession(r.Context(), hash, now)
			return nil, errNoSession
		}
		return nil, err
	}
	return s, nil
}

func hashSecret(v string) []byte {
	h := sha256.Sum256([]byte(v))
	return h[:]
}

func randomToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b)
}

type signInPage struct {
	Next    string
	Problem string
}

func (k *core) signInPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if s, err := k.session(r); err == nil {
		http.Redirect(w, r, safeNext(r.URL.Query().Get("next")), http.StatusSeeOther)
		_ = s
		return
	}
	k.render(w, r, nil, http.StatusOK, "signin", "Sign in", signInPage{Next: safeNext(r.URL.Query().Get("next"))})
}

// signIn exchanges the key or token typed into the form for a session. The credential is read
// from the body only and never echoed, stored or logged.
func (k *core) signIn(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if !k.sameOrigin(r) {
		k.renderError(w, r, nil, &apierr.Error{Kind: apierr.KindPermission, Code: "csrf_failed", Message: "Sign in from this console's own page."})
		return
	}
	if err := k.SignInRates.Allow(k.Proxies.ClientOfRequest(r)); err != nil {
		w.Header().Set("Retry-After", "10")
		k.render(w, r, nil, http.StatusTooManyRequests, "signin", "Sign in",
			signInPage{Next: safeNext(r.FormValue("next")), Problem: "Too many sign-in attempts from this address. Wait a minute and try again."})
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, MaxFormBytes)
	if err := r.ParseForm(); err != nil {
		k.renderError(w, r, nil, formErr(err))
		return
	}
	next := safeNext(r.PostForm.Get("next"))
	credHash, err := k.checkSecret(r.Context(), strings.TrimSpace(r.PostForm.Get("secret")))
	if err != nil {
		e := apierr.As(err)
		if e.Kind != apierr.KindAuthentication && e.Kind != apierr.KindPermission && e.Kind != apierr.KindInvalid {
			k.renderError(w, r, nil, err)
			return
		}
		k.render(w, r, nil, http.StatusUnauthorized, "signin", "Sign in", signInPage{Next: next, Problem: e.Message})
		return
	}
	secret := randomToken()
	now := k.Now()
	row := store.ConsoleSession{Hash: hashSecret(secret), Kind: string(k.kind), CredentialHash: credHash,
		CSRF: randomToken(), CreatedAt: now, ExpiresAt: now.Add(k.SessionTTL)}
	if err := k.Sessions.CreateConsoleSession(r.Context(), row, now); err != nil {
		k.renderError(w, r, nil, fmt.Errorf("sign in: %w", err))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: k.cookieName(), Value: secret, Path: "/console/", Expires: row.ExpiresAt,
		MaxAge: int(k.SessionTTL / time.Second), HttpOnly: true, Secure: k.https(r), SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, next, http.StatusSeeOther)
}

// signOut ends the session in the store (so a copied cookie stops working too) and clears it.
func (k *core) signOut(w http.ResponseWriter, r *http.Request) {
	k.handle(func(w http.ResponseWriter, r *http.Request, s *Session) error {
		if err := k.Sessions.EndConsoleSession(r.Context(), s.hash, k.Now()); err != nil {
			return fmt.Errorf("sign out: %w", err)
		}
		http.SetCookie(w, &http.Cookie{Name: k.cookieName(), Value: "", Path: "/console/", MaxAge: -1,
			HttpOnly: true, Secure: k.https(r), SameSite: http.SameSiteStrictMode})
		http.Redirect(w, r, "/console/signin", http.StatusSeeOther)
		return nil
	})(w, r)
}

// checkSecret is set by each console: it checks the typed key or token and returns the hash
// the session keeps.
func (k *core) checkSecret(ctx context.Context, secret string) ([]byte, error) {
	if secret == "" {
		return nil, apierr.Invalid("secret", "Enter your "+k.credentialName()+".")
	}
	return k.check(ctx, secret)
}

func (k *core) credentialName() string {
	if k.kind == KindOperator {
		return "admin token"
	}
	return "API key"
}

// safeNext keeps a post-sign-in redirect inside the console.
func safeNext(next string) string {
	if !strings.HasPrefix(next, "/console/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") ||
		strings.HasPrefix(next, "/console/signin") || len(next) > 2000 {
		return "/console/"
	}
	return next
}
