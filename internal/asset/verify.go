package asset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	"mediagen/internal/blob"
	"mediagen/internal/contract"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/store"
)

// Real-human verification. validate-session/create makes a session and hands out its token
// twice: as VerifyToken and inside H5Link ({PublicURL}/verify/{token}), the page the end user
// opens. Only the SHA-256 hash of the token is stored. On the page the user starts a
// (simulated) liveness check and confirms it after at least MinCheck, or declines. A pass
// makes a new real-human group; validate-result/get then returns its GroupId, once.

// VerifyPath is the path prefix of the end-user page.
const VerifyPath = "/verify/"

// tokenPrefix starts every VerifyToken; 32 base32 characters (160 bits) follow.
const tokenPrefix = "vt_"

// plausibleToken reports whether token could be one we issued. Only its hash is looked up,
// so the store never sees the text; the check treats tokens like every other id of the API
// (idgen.Plausible) and spares a query for what cannot match.
func plausibleToken(token string) bool {
	return strings.HasPrefix(token, tokenPrefix) && idgen.Plausible(token)
}

func tokenHash(token string) []byte {
	h := sha256.Sum256([]byte(token))
	return h[:]
}

func (s *Service) createSession(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
	b, aerr := decode(raw, []field{str("CallbackURL")}, nil)
	if aerr != nil {
		return nil, aerr
	}
	cb, has := b.strs["CallbackURL"]
	if has {
		if aerr := s.checkCallbackURL(cb); aerr != nil {
			return nil, aerr
		}
	}
	if lib := c.Tenant.AssetLibrary; lib != "" {
		return s.createUpstreamSession(ctx, c, lib, cb)
	}
	token := tokenPrefix + idgen.Secret(20)
	now := s.now()
	v := store.VerifySession{ID: idgen.New("vs"), TokenHash: tokenHash(token), TenantID: c.Tenant.ID, KeyID: c.Key.ID,
		CallbackURL: cb, Status: store.VerifyPending, CreatedAt: now, ExpiresAt: now.Add(s.cfg.VerifyTTL)}
	if err := s.cfg.Store.Transact(ctx, func(tx store.Tx) error { return tx.CreateVerifySession(ctx, v) }); err != nil {
		return nil, err
	}
	// The page is on the tenant's own address when the request named one: the end user
	// sees the tenant's host, not the service's (blob.WithLinkBase).
	base := blob.LinkBase(ctx)
	if base == "" {
		base = strings.TrimRight(s.cfg.PublicURL, "/")
	}
	return contract.VerifySession{H5Link: base + VerifyPath + token, VerifyToken: token,
		ExpiresAt: v.ExpiresAt.Unix()}, nil
}

func (s *Service) checkCallbackURL(u string) *apierr.Error {
	bad := func(msg string) *apierr.Error {
		return &apierr.Error{Kind: apierr.KindInvalid, Code: CodeInvalidCallbackURL, Param: "CallbackURL", Message: msg}
	}
	switch {
	case u == "":
		return bad("CallbackURL must not be empty; omit it when no callback is wanted.")
	case len(u) > MaxCallbackURLBytes:
		return bad(fmt.Sprintf("CallbackURL is longer than %d bytes.", MaxCallbackURLBytes))
	case !strings.HasPrefix(strings.ToLower(u), "https://"):
		return bad("CallbackURL must be an absolute https URL.")
	}
	for i := 0; i < len(u); i++ {
		if c := u[i]; c <= ' ' || c == 0x7f {
			return bad("CallbackURL must not contain spaces or control characters.")
		}
	}
	if s.cfg.Fetch != nil {
		if _, err := s.cfg.Fetch.Check(u, false); err != nil {
			return bad("CallbackURL cannot be called: " + publicFetchMessage(err))
		}
	}
	return nil
}

func tokenErr(kind apierr.Kind, code, msg string) *apierr.Error {
	return &apierr.Error{Kind: kind, Code: code, Param: "VerifyToken", Message: msg}
}

func (s *Service) getResult(ctx context.Context, c keys.Caller, raw []byte) (any, error) {
	b, aerr := decode(raw, []field{reqStr("VerifyToken")}, nil)
	if aerr != nil {
		return nil, aerr
	}
	token := b.strs["VerifyToken"]
	if token == "" {
		return nil, invalid("VerifyToken", "VerifyToken must not be empty.")
	}
	notFound := tokenErr(apierr.KindNotFound, CodeVerifyTokenNotFound,
		"No verification session with this VerifyToken exists for this account.")
	if !plausibleToken(token) {
		return nil, notFound
	}
	v, err := s.cfg.Store.VerifySessionByToken(ctx, tokenHash(token))
	if errors.Is(err, store.ErrNotFound) || (err == nil && v.TenantID != c.Tenant.ID) {
		return nil, notFound
	}
	if err != nil {
		return nil, err
	}
	if vendorPending(v, s.now()) {
		res, err := s.upstreamResult(ctx, v)
		if err != nil {
			return nil, err
		}
		if res != nil {
			return *res, nil
		}
	}
	switch {
	case !v.RedeemedAt.IsZero():
		return nil, tokenErr(apierr.KindInvalid, CodeVerifyTokenUsed,
			"This VerifyToken was already used to get its GroupId; a token is spent once. The group is listed by real-human asset-groups/list.")
	case v.Status == store.VerifyDeclined:
		return nil, tokenErr(apierr.KindInvalid, CodeVerificationDeclined,
			"The end user declined the verification. Start a new session with validate-session/create.")
	case v.Status == store.VerifyPending && !s.now().Before(v.ExpiresAt):
		return nil, tokenErr(apierr.KindInvalid, CodeVerifyTokenExpired,
			"The VerifyToken expired before the end user completed the verification. Start a new session with validate-session/create.")
	case v.Status == store.VerifyPending:
		return nil, tokenErr(apierr.KindInvalid, CodeVerificationPending,
			"The end user has not completed the verification yet. Ask them to finish it on the H5Link page, then call again.")
	}
	err = s.cfg.Store.Transact(ctx, func(tx store.Tx) error { return tx.RedeemVerifySession(ctx, v.ID, s.now()) })
	if errors.Is(err, store.ErrConflict) {
		return nil, tokenErr(apierr.KindInvalid, CodeVerifyTokenUsed,
			"This VerifyToken was already used to get its GroupId; a token is spent once. The group is listed by real-human asset-groups/list.")
	}
	if err != nil {
		return nil, err
	}
	return contract.VerifyResult{GroupID: v.GroupID}, nil
}

// ---------------------------------------------------------------------------------------------
// The end-user page
// ---------------------------------------------------------------------------------------------

// Page states.
const (
	PagePending  = "pending"  // consent not given yet, or the check not started
	PageStarted  = "started"  // the liveness check runs; Confirm is accepted after MinCheck
	PagePassed   = "passed"   // finished: verified
	PageDeclined = "declined" // finished: the user declined
	PageExpired  = "expired"  // the token expired before the user finished
)

// PageState is what the verification page shows.
type PageState struct {
	State        string
	TenantName   string
	ExpiresAt    time.Time
	CheckSeconds int // the length of the liveness check the page runs
}

// ErrUnknownToken is what Page answers for a token that does not exist.
var ErrUnknownToken = errors.New("unknown verification token")

// Codes of refused page actions (400), besides CodeVerifyTokenExpired and
// CodeVerifyTokenNotFound.
const (
	CodeCheckNotStarted = "check_not_started"
	CodeCheckIncomplete = "check_incomplete"
)

func pageErr(kind apierr.Kind, code, msg string) *apierr.Error {
	return &apierr.Error{Kind: kind, Code: code, Message: msg}
}

func (s *Service) pageState(v store.VerifySession) PageState {
	st := PageState{ExpiresAt: v.ExpiresAt, CheckSeconds: max(3, int((s.cfg.MinCheck+time.Second-1)/time.Second))}
	st.TenantName = v.TenantID
	cat := s.cfg.Catalog
	if s.cfg.Catalogs != nil {
		cat = s.cfg.Catalogs()
	}
	if cat != nil {
		if t, ok := cat.Tenant(v.TenantID); ok && t.Name != "" {
			st.TenantName = t.Name
		}
	}
	switch {
	case v.Status == store.VerifyPassed:
		st.State = PagePassed
	case v.Status == store.VerifyDeclined:
		st.State = PageDeclined
	case !s.now().Before(v.ExpiresAt):
		st.State = PageExpired
	case !v.StartedAt.IsZero():
		st.State = PageStarted
	default:
		st.State = PagePending
	}
	return st
}

func (s *Service) session(ctx context.Context, token string) (store.VerifySession, error) {
	if !plausibleToken(token) {
		return store.VerifySession{}, ErrUnknownToken
	}
	v, err := s.cfg.Store.VerifySessionByToken(ctx, tokenHash(token))
	if errors.Is(err, store.ErrNotFound) || (err == nil && v.Upstream != "") {
		// A session the vendor runs is checked on the vendor's page only: this page
		// must never pass it.
		return store.VerifySession{}, ErrUnknownToken
	}
	return v, err
}

// Page returns the state of the session of token for the page. GET never writes.
func (s *Service) Page(ctx context.Context, token string) (PageState, error) {
	v, err := s.session(ctx, token)
	if err != nil {
		return PageState{}, err
	}
	return s.pageState(v), nil
}

// Page actions.
const (
	ActionStart   = "start"
	ActionConfirm = "confirm"
	ActionDecline = "decline"
)

// Act performs a page action and returns the new state. Actions on a finished session change
// nothing and return its state, so a double click or a reload is harmless.
func (s *Service) Act(ctx context.Context, token, action string) (PageState, error) {
	v, err := s.session(ctx, token)
	if errors.Is(err, ErrUnknownToken) {
		return PageState{}, pageErr(apierr.KindNotFound, CodeVerifyTokenNotFound,
			"This verification link is not valid. Ask the service that sent it for a new link.")
	}
	if err != nil {
		return PageState{}, err
	}
	st := s.pageState(v)
	switch st.State {
	case PagePassed, PageDeclined:
		return st, nil
	case PageExpired:
		return st, pageErr(apierr.KindInvalid, CodeVerifyTokenExpired,
			"This verification link has expired. Ask the service that sent it for a new link.")
	}
	now := s.now()
	switch action {
	case ActionStart:
		err = s.cfg.Store.Transact(ctx, func(tx store.Tx) error { return tx.StartVerifySession(ctx, v.ID, now) })
	case ActionConfirm:
		if v.StartedAt.IsZero() {
			return st, pageErr(apierr.KindInvalid, CodeCheckNotStarted, "Start the check before confirming it.")
		}
		if now.Sub(v.StartedAt) < s.cfg.MinCheck {
			return st, pageErr(apierr.KindInvalid, CodeCheckIncomplete,
				"The check is not complete yet. Wait for the countdown to finish, then confirm.")
		}
		err = s.finish(ctx, v, token, store.VerifyPassed, now)
	case ActionDecline:
		err = s.finish(ctx, v, token, store.VerifyDeclined, now)
	default:
		return st, pageErr(apierr.KindNotFound, "unknown_action", "Unknown action.")
	}
	if err != nil && !errors.Is(err, store.ErrConflict) {
		return st, err
	}
	// A concurrent action may have finished the session first: report what it is now.
	if v, err = s.cfg.Store.VerifySession(ctx, v.ID); err != nil {
		return st, err
	}
	return s.pageState(v), nil
}

// finish ends a pending session: a pass makes the real-human group in the same transaction, so
// a passed session always has its group. The callback payload is fixed here, while the token
// is at hand (only its hash is stored).
func (s *Service) finish(ctx context.Context, v store.VerifySession, token, status string, now time.Time) error {
	p := contract.VerifyCallback{VerifyToken: token, Result: "Declined", Timestamp: now.Unix()}
	var g store.AssetGroup
	if status == store.VerifyPassed {
		p.Result = "Passed"
		g = store.AssetGroup{ID: idgen.New("grp"), TenantID: v.TenantID, Library: store.LibraryRealHuman,
			Name: "Verified person " + now.Format("2006-01-02 15:04 UTC"), Origin: store.GroupOriginVerification,
			Status: store.GroupActive, CreatedAt: now, UpdatedAt: now}
		p.GroupID = g.ID
	}
	var payload []byte
	if v.CallbackURL != "" {
		var err error
		if payload, err = json.Marshal(p); err != nil {
			return err
		}
	}
	var announced string
	err := s.cfg.Store.Transact(ctx, func(tx store.Tx) error {
		if status == store.VerifyPassed {
			if err := tx.CreateAssetGroup(ctx, g); err != nil {
				return err
			}
		}
		if err := tx.FinishVerifySession(ctx, v.ID, status, g.ID, payload, now); err != nil {
			return err
		}
		var err error
		if announced, err = s.announce(ctx, tx, verificationEvent(v, status, g.ID, now)); err != nil || v.CallbackURL == "" {
			return err
		}
		return tx.EnqueueJob(ctx, CallbackJob(v, now))
	})
	if err == nil && v.CallbackURL != "" {
		s.notify(CallbackKind)
	}
	if err == nil {
		s.wake(announced)
	}
	return err
}

// ---------------------------------------------------------------------------------------------
// Callbacks
// ---------------------------------------------------------------------------------------------

// post sends the payload through the fetch client (its address policy applies to the callback
// URL and to every hop); redirects are not followed.
func (s *Service) post(ctx context.Context, url string, payload []byte, attempt int) error {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.CallbackTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "mediagen-callback/1")
	req.Header.Set("X-Mediagen-Attempt", strconv.Itoa(attempt))
	hc := s.cfg.Fetch.HTTPClient()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("%s", publicFetchMessage(err))
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the callback URL answered HTTP %d", resp.StatusCode)
	}
	return nil
}
