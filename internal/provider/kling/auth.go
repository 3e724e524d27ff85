package kling

import (
	"fmt"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Kling's API token: a JWT (HS256) the account signs itself with its secret key, iss the
// access key, valid from nbf to exp. docs/upstreams.md#kling cites the reference.
const (
	// tokenTTL is a token's life. Kling's reference signs tokens for 30 minutes; a shorter
	// life bounds what a leaked token is worth, a longer one is not accepted by every region.
	tokenTTL = 30 * time.Minute
	// tokenRenewBefore: a token with less than this left is replaced before a call, so no
	// call leaves with a token that expires on the way (a call takes at most 10 minutes,
	// timeout_seconds' bound, and usually seconds).
	tokenRenewBefore = 10 * time.Minute
	// tokenSkew is how far in the past nbf is set: Kling's servers' clocks and ours differ
	// by seconds, and a token "not yet valid" is refused (code 1003).
	tokenSkew = 5 * time.Second
)

// signer makes and renews the account's tokens. The secret key never leaves it.
type signer struct {
	access string
	secret []byte
	now    func() time.Time

	mu    sync.Mutex
	token string
	exp   time.Time
}

// bearer is a token valid for at least tokenRenewBefore more, made anew when the last one
// is closer to its exp.
func (s *signer) bearer() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.token != "" && now.Add(tokenRenewBefore).Before(s.exp) {
		return s.token, nil
	}
	exp := now.Add(tokenTTL)
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{
		Issuer:    s.access,
		ExpiresAt: jwt.NewNumericDate(exp),
		NotBefore: jwt.NewNumericDate(now.Add(-tokenSkew)),
	})
	signed, err := t.SignedString(s.secret)
	if err != nil {
		return "", fmt.Errorf("kling: signing the API token: %w", err)
	}
	s.token, s.exp = signed, exp
	return signed, nil
}
