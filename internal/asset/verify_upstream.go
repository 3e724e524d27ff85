package asset

import (
	"context"
	"errors"
	"strings"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/contract"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/provider"
	"mediagen/internal/provider/arkassets"
	"mediagen/internal/store"
)

// Real-person verification through the tenant's upstream library (kind ark_assets): the check
// is ModelArk's own H5 consent and liveness page, not this service's. validate-session/create
// starts a vendor session (CreateVisualValidateSession, with the tenant's CallbackURL, where
// the vendor's page sends the person when done) and hands out the vendor's H5Link with a
// VerifyToken of ours; validate-result/get asks the vendor (GetVisualValidateResult) and, on a
// pass, binds the vendor's real-person group to a new real-human group of the tenant — once:
// a vendor group is bound to one group of one tenant (the store's unique binding) — and
// returns our GroupId.

// CodeVerificationUnavailable is the 503 of a verification the vendor cannot be asked about now.
const CodeVerificationUnavailable = "verification_unavailable"

func unavailable() *apierr.Error {
	return &apierr.Error{Kind: apierr.KindUnavailable, Code: CodeVerificationUnavailable,
		Message: "The verification service cannot be reached right now. Try again in a minute."}
}

// createUpstreamSession starts a verification at the tenant's library.
func (s *Service) createUpstreamSession(ctx context.Context, c keys.Caller, library, cb string) (any, error) {
	lib, ok := s.library(library)
	if !ok {
		s.log.ErrorContext(ctx, "asset library account missing", "upstream", library)
		return nil, unavailable()
	}
	vs, err := lib.CreateVisualValidateSession(ctx, cb)
	if err != nil {
		s.log.WarnContext(ctx, "asset library refused a verification session", "upstream", library, "err", err)
		return nil, unavailable()
	}
	token := tokenPrefix + idgen.Secret(20)
	now := s.now()
	// No CallbackURL of ours: the vendor's page takes the person to it when done; this
	// service's callback job is for its own page.
	v := store.VerifySession{ID: idgen.New("vs"), TokenHash: tokenHash(token), TenantID: c.Tenant.ID, KeyID: c.Key.ID,
		Status: store.VerifyPending, CreatedAt: now, ExpiresAt: now.Add(s.cfg.VerifyTTL), Upstream: library, UpstreamToken: vs.Token}
	if err := s.cfg.Store.Transact(ctx, func(tx store.Tx) error { return tx.CreateVerifySession(ctx, v) }); err != nil {
		return nil, err
	}
	return contract.VerifySession{H5Link: vs.H5Link, VerifyToken: token, ExpiresAt: v.ExpiresAt.Unix()}, nil
}

// upstreamResult asks the vendor about a pending session of its own and settles it: nil, nil
// while it is still pending (the caller answers verification_pending).
func (s *Service) upstreamResult(ctx context.Context, v store.VerifySession) (*contract.VerifyResult, error) {
	lib, ok := s.library(v.Upstream)
	if !ok {
		s.log.ErrorContext(ctx, "asset library account missing", "upstream", v.Upstream)
		return nil, unavailable()
	}
	vendorGroup, err := lib.GetVisualValidateResult(ctx, v.UpstreamToken)
	switch {
	case errors.Is(err, arkassets.ErrPending):
		return nil, nil
	case errors.Is(err, provider.ErrPermanent):
		// Failed, expired or refused at the vendor: the session ends declined.
		now := s.now()
		var announced string
		ferr := s.cfg.Store.Transact(ctx, func(tx store.Tx) error {
			if err := tx.FinishVerifySession(ctx, v.ID, store.VerifyDeclined, "", nil, now); err != nil {
				return err
			}
			var err error
			announced, err = s.announce(ctx, tx, verificationEvent(v, store.VerifyDeclined, "", now))
			return err
		})
		if ferr != nil && !errors.Is(ferr, store.ErrConflict) {
			return nil, ferr
		}
		if ferr == nil {
			s.wake(announced)
		}
		return nil, tokenErr(apierr.KindInvalid, CodeVerificationDeclined,
			"The verification did not pass. Start a new session with validate-session/create.")
	case err != nil:
		s.log.WarnContext(ctx, "asset library verification result unavailable", "upstream", v.Upstream, "err", err)
		return nil, unavailable()
	}
	now := s.now()
	g := store.AssetGroup{ID: idgen.New("grp"), TenantID: v.TenantID, Library: store.LibraryRealHuman,
		Name: "Verified person " + now.Format("2006-01-02 15:04 UTC"), Origin: store.GroupOriginVerification,
		Status: store.GroupActive, CreatedAt: now, UpdatedAt: now, Upstream: v.Upstream, UpstreamID: vendorGroup}
	var announced string
	err = s.cfg.Store.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateAssetGroup(ctx, g); err != nil {
			return err
		}
		if err := tx.FinishVerifySession(ctx, v.ID, store.VerifyPassed, g.ID, nil, now); err != nil {
			return err
		}
		if err := tx.RedeemVerifySession(ctx, v.ID, now); err != nil {
			return err
		}
		var err error
		announced, err = s.announce(ctx, tx, verificationEvent(v, store.VerifyPassed, g.ID, now))
		return err
	})
	if err == nil {
		s.wake(announced)
	}
	if errors.Is(err, store.ErrConflict) {
		// A concurrent call settled it, or the vendor group is bound already: either way
		// this token has been spent.
		return nil, tokenErr(apierr.KindInvalid, CodeVerifyTokenUsed,
			"This VerifyToken was already used to get its GroupId; a token is spent once. The group is listed by real-human asset-groups/list.")
	}
	if err != nil {
		return nil, err
	}
	return &contract.VerifyResult{GroupID: g.ID}, nil
}

// vendorPending reports a session of the vendor's still waiting for its result.
func vendorPending(v store.VerifySession, now time.Time) bool {
	return v.Upstream != "" && v.Status == store.VerifyPending && now.Before(v.ExpiresAt) && strings.TrimSpace(v.UpstreamToken) != ""
}
