package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/idgen"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// Store is what the service uses of the store.
type Store interface {
	Transact(ctx context.Context, fn func(store.Tx) error) error
	Key(ctx context.Context, id string) (store.Key, error)
	KeysPage(ctx context.Context, q store.KeyQuery) ([]store.Key, error)
	Keys(ctx context.Context, tenantID string) ([]store.Key, error)
	Balance(ctx context.Context, keyID string) (store.Balance, error)
	Overage(ctx context.Context, keyID string) (money.Micros, error)
	Spent(ctx context.Context, counters []store.SpendCounter) ([]money.Micros, error)
	AdminTokenByHash(ctx context.Context, hash []byte) (store.AdminToken, error)
	AdminToken(ctx context.Context, id string) (store.AdminToken, error)
	AdminTokens(ctx context.Context) ([]store.AdminToken, error)
	Audit(ctx context.Context, q store.AuditQuery) ([]store.AuditEntry, error)
	AssetGroups(ctx context.Context, q store.AssetGroupQuery) ([]store.AssetGroup, int, error)
	AssetGroup(ctx context.Context, id string) (store.AssetGroup, error)
	IdempotentAnswer(ctx context.Context, tokenID, key string, now time.Time) (store.IdempotentAnswer, error)
	UsageReport(ctx context.Context, q store.UsageQuery) ([]store.UsageRow, error)
}

// Config is what New needs.
type Config struct {
	Store Store
	// Catalog returns the catalog in force; a function so that a reloaded catalog is seen by
	// the next call.
	Catalog func() *catalog.Catalog
	// Now is the clock (nil: time.Now); tests move it to expire tokens.
	Now func() time.Time
	// Registerer, when set, receives mediagen_admin_audit_entries_total.
	Registerer prometheus.Registerer
	// Webhooks, when set, serves the operator's webhook actions (webhooks.go); nil: they
	// answer 404.
	Webhooks *webhook.Service
}

// Service is the operator plane's one implementation of every operator action.
type Service struct {
	st      Store
	catalog func() *catalog.Catalog
	now     func() time.Time
	audited *prometheus.CounterVec
	hooks   *webhook.Service
}

// New returns a Service.
func New(cfg Config) *Service {
	s := &Service{st: cfg.Store, catalog: cfg.Catalog, now: cfg.Now, hooks: cfg.Webhooks}
	if s.now == nil {
		s.now = time.Now
	}
	s.audited = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mediagen_admin_audit_entries_total",
		Help: "Audit entries written by operator actions, by action (API and CLI of this process).",
	}, []string{"action"})
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(s.audited)
	}
	return s
}

// Now is the service's clock, in UTC, to the microsecond the store keeps: an answer shows the
// same times as a later read of what it made.
func (s *Service) Now() time.Time { return s.now().UTC().Truncate(time.Microsecond) }

// Catalog is the catalog in force.
func (s *Service) Catalog() *catalog.Catalog { return s.catalog() }

// Store is the store the service writes (for the HTTP layer's idempotency reads).
func (s *Service) Store() Store { return s.st }

// Change describes one write for the audit log. Before and After are the target's views
// (marshalled to JSON); a nil Before means the target did not exist.
type Change struct {
	Action     string
	TargetType string
	TargetID   string
	Before     any
	After      any
}

// Answer is called inside a write's transaction with the write's result, after the change and
// its audit entry: what it writes commits with them or not at all. The admin API uses it to
// record the answer an idempotent replay gets.
type Answer func(ctx context.Context, tx store.Tx, result any) error

type answerKey struct{}

// WithAnswer attaches an Answer to the writes made with ctx.
func WithAnswer(ctx context.Context, fn Answer) context.Context {
	return context.WithValue(ctx, answerKey{}, fn)
}

// Write runs fn in one transaction with the audit entry its Change describes and the answer
// hook (WithAnswer): the one way every operator write is made. Packages of the operator plane
// outside this one use it too, after checking the actor's role with Need.
func Write[T any](ctx context.Context, s *Service, a Actor, fn func(tx store.Tx) (T, Change, error)) (T, error) {
	var out T
	var action string
	err := s.st.Transact(ctx, func(tx store.Tx) error {
		res, c, err := fn(tx)
		if err != nil {
			return err
		}
		e := store.AuditEntry{ID: idgen.New("aud"), ActorID: a.TokenID, ActorName: a.Name, ActorRole: string(a.Role), Via: a.Via,
			Action: c.Action, TargetType: c.TargetType, TargetID: c.TargetID, RequestID: a.RequestID, CallerRequestID: a.CallerRequestID,
			RemoteAddr: a.RemoteAddr, CreatedAt: s.Now()}
		if e.Before, err = marshalOrNil(c.Before); err != nil {
			return fmt.Errorf("audit %s: %w", c.Action, err)
		}
		if e.After, err = marshalOrNil(c.After); err != nil {
			return fmt.Errorf("audit %s: %w", c.Action, err)
		}
		if err := tx.AppendAudit(ctx, e); err != nil {
			return err
		}
		if hook, ok := ctx.Value(answerKey{}).(Answer); ok {
			if err := hook(ctx, tx, res); err != nil {
				return err
			}
		}
		out, action = res, c.Action
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	s.audited.WithLabelValues(action).Inc()
	return out, nil
}

func marshalOrNil(v any) ([]byte, error) {
	if v == nil {
		return nil, nil
	}
	return json.Marshal(v, json.Deterministic(true))
}

// notFound is the 404 of an id that names nothing of the kind.
func notFound(what, id string) *apierr.Error {
	return apierr.New(apierr.KindNotFound, fmt.Sprintf("No %s with id %q.", what, id))
}

// isNotFound reports a store miss.
func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }

// unauthenticated is the 401 of a bad admin token; code tells which, the message stays vague
// about whether a token exists.
func unauthenticated(code, msg string) *apierr.Error {
	return &apierr.Error{Kind: apierr.KindAuthentication, Code: code, Message: msg}
}

// Authenticate finds the token a secret names and checks it is usable now. A malformed
// secret is refused without reading the store.
func (s *Service) Authenticate(ctx context.Context, secret string) (store.AdminToken, error) {
	if !TokenWellFormed(secret) {
		return store.AdminToken{}, unauthenticated("invalid_admin_token", "The admin token is not valid.")
	}
	return s.AuthenticateHash(ctx, HashToken(secret))
}

// AuthenticateHash is Authenticate for the hash of a secret: the web console keeps the hash of
// the token a session signed in with and re-checks it on every request.
func (s *Service) AuthenticateHash(ctx context.Context, hash []byte) (store.AdminToken, error) {
	tok, err := s.st.AdminTokenByHash(ctx, hash)
	if isNotFound(err) {
		return store.AdminToken{}, unauthenticated("invalid_admin_token", "The admin token is not valid.")
	}
	if err != nil {
		return store.AdminToken{}, fmt.Errorf("authenticate: %w", err)
	}
	if tok.Revoked() {
		return store.AdminToken{}, unauthenticated("revoked_admin_token", "The admin token has been revoked.")
	}
	if tok.Expired(s.Now()) {
		return store.AdminToken{}, unauthenticated("expired_admin_token",
			fmt.Sprintf("The admin token expired at %s.", tok.ExpiresAt.UTC().Format(time.RFC3339)))
	}
	if _, ok := ParseRole(tok.Role); !ok {
		return store.AdminToken{}, unauthenticated("invalid_admin_token", "The admin token is not valid.")
	}
	return tok, nil
}

// write and need are Write and Need under the names the first framework commit (CORE_READY)
// documented, so code written against it in this package keeps compiling.
func write[T any](ctx context.Context, s *Service, a Actor, fn func(tx store.Tx) (T, Change, error)) (T, error) {
	return Write(ctx, s, a, fn)
}

func need(a Actor, r Role) error { return Need(a, r) }

var (
	_ = write[struct{}]
	_ = need
)
