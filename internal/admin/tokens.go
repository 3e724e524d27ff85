package admin

import (
	"context"
	"fmt"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/store"
)

// TokenInput is what a new admin token is made from.
type TokenInput struct {
	Name      string
	Role      string
	ExpiresIn time.Duration // 0: never
}

// CreateToken makes an admin token (owners only) and returns its secret, shown once.
func (s *Service) CreateToken(ctx context.Context, a Actor, in TokenInput) (TokenCreated, error) {
	if err := Need(a, RoleOwner); err != nil {
		return TokenCreated{}, err
	}
	if err := checkText("name", in.Name, MaxNameChars, true); err != nil {
		return TokenCreated{}, err
	}
	role, ok := ParseRole(in.Role)
	if !ok {
		return TokenCreated{}, invalidf("role", "role must be owner, operator or viewer.")
	}
	if in.ExpiresIn < 0 || in.ExpiresIn > MaxTokenLifetimeDays*24*time.Hour {
		return TokenCreated{}, invalidf("expires_in", "expires_in must be positive and at most %d days.", MaxTokenLifetimeDays)
	}
	now := s.Now()
	secret, display, hash := GenerateToken()
	tok := store.AdminToken{ID: idgen.New("adt"), Name: in.Name, Role: string(role), Prefix: display, Hash: hash,
		CreatedBy: actorLabel(a), CreatedAt: now}
	if in.ExpiresIn > 0 {
		tok.ExpiresAt = now.Add(in.ExpiresIn)
	}
	return Write(ctx, s, a, func(tx store.Tx) (TokenCreated, Change, error) {
		if err := tx.CreateAdminToken(ctx, tok); err != nil {
			return TokenCreated{}, Change{}, err
		}
		v := tokenView(tok, now)
		return TokenCreated{Token: v, Secret: secret}, Change{Action: "token.create", TargetType: "token", TargetID: tok.ID, After: v}, nil
	})
}

// actorLabel names an actor in created_by: the token id, or cli:USER.
func actorLabel(a Actor) string {
	if a.Via == ViaCLI {
		return "cli:" + a.Name
	}
	return a.TokenID
}

// Tokens lists every admin token (any role: viewers read everything; the list shows no secret).
func (s *Service) Tokens(ctx context.Context, a Actor) (List[Token], error) {
	if err := Need(a, RoleViewer); err != nil {
		return List[Token]{}, err
	}
	list, err := s.st.AdminTokens(ctx)
	if err != nil {
		return List[Token]{}, fmt.Errorf("list admin tokens: %w", err)
	}
	now := s.Now()
	out := make([]Token, 0, len(list))
	for _, t := range list {
		out = append(out, tokenView(t, now))
	}
	return newList(out, false, ""), nil
}

// RevokeToken revokes an admin token (owners only). Revoking a revoked token changes nothing
// but is answered and audited like the first time.
func (s *Service) RevokeToken(ctx context.Context, a Actor, id string) (Token, error) {
	if err := Need(a, RoleOwner); err != nil {
		return Token{}, err
	}
	if err := checkID("admin token", id); err != nil {
		return Token{}, err
	}
	now := s.Now()
	return Write(ctx, s, a, func(tx store.Tx) (Token, Change, error) {
		old, err := tx.AdminTokenForUpdate(ctx, id)
		if isNotFound(err) {
			return Token{}, Change{}, notFound("admin token", id)
		}
		if err != nil {
			return Token{}, Change{}, err
		}
		if err := tx.RevokeAdminToken(ctx, id, now); err != nil {
			return Token{}, Change{}, err
		}
		cur := old
		if !cur.Revoked() {
			cur.RevokedAt = now
		}
		before, after := tokenView(old, now), tokenView(cur, now)
		return after, Change{Action: "token.revoke", TargetType: "token", TargetID: id, Before: before, After: after}, nil
	})
}

// WhoAmI describes the token a request came with.
func (s *Service) WhoAmI(ctx context.Context, a Actor) (Token, error) {
	if a.Via == ViaCLI {
		return Token{Object: "admin_token", ID: a.TokenID, Name: a.Name, Role: string(a.Role), State: "active"}, nil
	}
	t, err := s.st.AdminToken(ctx, a.TokenID)
	if err != nil {
		return Token{}, fmt.Errorf("whoami: %w", err)
	}
	return tokenView(t, s.Now()), nil
}
