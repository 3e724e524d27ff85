package vertex

import (
	"context"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"cloud.google.com/go/auth"

	"mediagen/internal/provider"
)

// Scope is the OAuth2 scope Vertex AI's REST API takes (the reference's "Authorization
// scopes": https://www.googleapis.com/auth/cloud-platform).
const Scope = "https://www.googleapis.com/auth/cloud-platform"

// DefaultTokenURL is Google's OAuth2 token endpoint, where a service account's key file's
// token_uri points.
const DefaultTokenURL = "https://oauth2.googleapis.com/token"

// expireEarly: a cached token is replaced this long before Google's expiry, so a call never
// starts with a token that runs out on the way (Google's libraries use 3 m 45 s).
const expireEarly = 5 * time.Minute

// ServiceAccount is the part of a service account's JSON key file the token exchange reads
// (cloud.google.com/go/auth's credentials/internal/credsfile ServiceAccountFile).
type ServiceAccount struct {
	Type         string `json:"type"`
	ProjectID    string `json:"project_id"`
	PrivateKeyID string `json:"private_key_id"`
	PrivateKey   string `json:"private_key"`
	ClientEmail  string `json:"client_email"`
	TokenURI     string `json:"token_uri"`
}

// ParseServiceAccount reads a service account's JSON key. The error never quotes the file.
func ParseServiceAccount(data []byte) (ServiceAccount, error) {
	var sa ServiceAccount
	if err := json.Unmarshal(data, &sa); err != nil {
		return ServiceAccount{}, errors.New("the credentials are not a service account's JSON key file")
	}
	switch {
	case sa.Type != "service_account":
		return ServiceAccount{}, errors.New(`the credentials are not a service account's JSON key file (its "type" is not service_account)`)
	case sa.ClientEmail == "" || sa.PrivateKey == "":
		return ServiceAccount{}, errors.New("the service account's key file has no client_email or no private_key")
	case !rsaKey(sa.PrivateKey):
		return ServiceAccount{}, errors.New("the service account's private_key is not a PEM RSA private key")
	}
	return sa, nil
}

// rsaKey: the key signs RS256 JWTs, checked once here so a bad file fails at start rather
// than at every call.
func rsaKey(pemKey string) bool {
	b, _ := pem.Decode([]byte(pemKey))
	if b == nil {
		return false
	}
	if k, err := x509.ParsePKCS8PrivateKey(b.Bytes); err == nil {
		_, ok := k.(*rsa.PrivateKey)
		return ok
	}
	_, err := x509.ParsePKCS1PrivateKey(b.Bytes)
	return err == nil
}

// tokens exchanges the service account's signed JWT for access tokens at the token URL (the
// OAuth2 JWT bearer grant, RFC 7523, which auth.New2LOTokenProvider makes) and keeps the
// last one until expireEarly before its expiry. A token the API refused (401) is dropped, so
// the next call fetches a new one.
type tokens struct {
	tp  auth.TokenProvider // not cached: the cache is here, so a refused token can be dropped
	now func() time.Time

	mu      sync.Mutex
	token   string
	expiry  time.Time
	fetches int
}

func newTokens(sa ServiceAccount, tokenURL string, hc *http.Client) (*tokens, error) {
	u, err := url.Parse(tokenURL)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, errors.New("the token URL must be an https URL such as " + DefaultTokenURL)
	}
	tp, err := auth.New2LOTokenProvider(&auth.Options2LO{Email: sa.ClientEmail, PrivateKey: []byte(sa.PrivateKey), PrivateKeyID: sa.PrivateKeyID,
		TokenURL: tokenURL, Scopes: []string{Scope}, Client: hc})
	if err != nil {
		return nil, errors.New("the service account's key cannot sign tokens")
	}
	return &tokens{tp: tp, now: time.Now}, nil
}

// get is a valid access token: the cached one, or a new one. Callers wait for one fetch.
func (t *tokens) get(ctx context.Context) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.token != "" && (t.expiry.IsZero() || t.now().Before(t.expiry.Add(-expireEarly))) {
		return t.token, nil
	}
	t.fetches++
	tok, err := t.tp.Token(ctx)
	if err != nil {
		return "", classifyToken(err)
	}
	if tok.Value == "" {
		return "", fmt.Errorf("vertex: the token endpoint answered no access token: %w", provider.ErrTransient)
	}
	t.token, t.expiry = tok.Value, time.Time{}
	if !tok.Expiry.IsZero() { // expires_in, counted on this clock
		t.expiry = t.now().Add(time.Until(tok.Expiry))
	}
	return t.token, nil
}

// drop forgets the cached token: the API refused it (expired or revoked before its time).
func (t *tokens) drop() {
	t.mu.Lock()
	t.token = ""
	t.mu.Unlock()
}

// Fetches is how many tokens were fetched (for tests and the check).
func (t *tokens) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.fetches
}

// classifyToken maps a failed token exchange: the endpoint refused the key (400
// invalid_grant, 401 invalid_client, 403) is the account's (tasks wait for the operator);
// anything else transient. Never the endpoint's body, which may echo the assertion.
func classifyToken(err error) error {
	var ae *auth.Error
	if errors.As(err, &ae) && ae.Response != nil {
		switch c := ae.Response.StatusCode; {
		case c == http.StatusBadRequest || c == http.StatusUnauthorized || c == http.StatusForbidden:
			return fmt.Errorf("vertex: the token endpoint refused the service account (HTTP %d): %w", c, provider.ErrAccount)
		default:
			return fmt.Errorf("vertex: the token endpoint answered HTTP %d: %w", c, provider.ErrTransient)
		}
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("vertex: fetching a token: %w: %w", err, provider.ErrTransient)
	}
	return fmt.Errorf("vertex: fetching a token failed: %w", provider.ErrTransient)
}
