package vertexfake

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	mrand "math/rand/v2"
	"net/http"
	"slices"
	"strings"

	"github.com/golang-jwt/jwt/v5"
)

// The fake's service account and its token endpoint: the OAuth2 JWT bearer grant (RFC 7523)
// a service account's key file's token_uri answers.

// KeyJSON is a service account's JSON key file of the fake's key, whose token_uri is the
// fake's token endpoint.
func (s *Server) KeyJSON() []byte { return keyJSON(s.key, s.TokenURL()) }

// OtherKeyJSON is a well-formed key file of a key the fake does not know (a deleted key).
func (s *Server) OtherKeyJSON() []byte {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return keyJSON(k, s.TokenURL())
}

func keyJSON(k *rsa.PrivateKey, tokenURL string) []byte {
	der, _ := x509.MarshalPKCS8PrivateKey(k)
	b, _ := json.Marshal(map[string]string{"type": "service_account", "project_id": Project, "private_key_id": "fake-key-1",
		"private_key": string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})), "client_email": Email,
		"client_id": "1", "token_uri": tokenURL})
	return b
}

// ExpireTokens ends every token issued so far before its time (a revoked or expired token):
// the next call with one is answered 401 UNAUTHENTICATED.
func (s *Server) ExpireTokens() {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	for t := range s.tokens {
		s.tokens[t] = false
	}
}

// TokensIssued is how many tokens the token endpoint gave.
func (s *Server) TokensIssued() int {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	return s.issued
}

// token answers the JWT bearer grant: a JWT signed RS256 by the fake's key, from its service
// account, for the token endpoint and the cloud-platform scope.
func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	oauthError := func(code int, e, desc string) {
		s.refuse()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(map[string]string{"error": e, "error_description": desc})
	}
	if r.Method != http.MethodPost || r.ParseForm() != nil || r.PostForm.Get("grant_type") != "urn:ietf:params:oauth:grant-type:jwt-bearer" {
		s.Violate("token: not a POST of grant_type jwt-bearer")
		oauthError(http.StatusBadRequest, "unsupported_grant_type", "Invalid grant_type.")
		return
	}
	var claims struct {
		jwt.RegisteredClaims
		Scope string `json:"scope"`
	}
	_, err := jwt.ParseWithClaims(r.PostForm.Get("assertion"), &claims, func(*jwt.Token) (any, error) { return &s.key.PublicKey, nil },
		jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuedAt(), jwt.WithExpirationRequired(), jwt.WithAudience(s.TokenURL()), jwt.WithIssuer(Email))
	if err != nil {
		oauthError(http.StatusBadRequest, "invalid_grant", "Invalid JWT Signature.")
		return
	}
	if !slices.Contains(strings.Fields(claims.Scope), Scope) {
		s.Violate("token: scope %q", claims.Scope)
		oauthError(http.StatusBadRequest, "invalid_scope", "Invalid OAuth scope.")
		return
	}
	s.Mu.Lock()
	s.issued++
	tok := fmt.Sprintf("ya29.fake-%d-%d", s.issued, mrand.Int64())
	s.tokens[tok] = true
	s.Mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"access_token": tok, "token_type": "Bearer", "expires_in": s.cfg.TokenSeconds})
}
