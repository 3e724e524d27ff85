package store

import (
	"context"
	"time"
)

// The operator plane's records (internal/admin): admin tokens, the audit log and the stored
// answers of idempotent admin writes.

// AdminToken is a credential of the admin API. Like an API key only the SHA-256 hash of its
// secret is stored.
type AdminToken struct {
	ID        string
	Name      string
	Role      string // owner, operator or viewer (admin.Role)
	Prefix    string // the first characters of the secret, shown in listings
	Hash      []byte
	CreatedBy string // the actor that made it ("cli:alice", or a token id)
	CreatedAt time.Time
	ExpiresAt time.Time // zero: never
	RevokedAt time.Time // zero while the token is active
}

// Revoked reports whether the token was revoked.
func (t AdminToken) Revoked() bool { return !t.RevokedAt.IsZero() }

// Expired reports whether the token has expired at now.
func (t AdminToken) Expired(now time.Time) bool {
	return !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt)
}

// AuditEntry is one operator action. Entries are appended in the transaction of the change
// they describe and never changed: the store has no method to update or delete them.
type AuditEntry struct {
	ID         string // time-ordered (idgen), so the newest sort last
	ActorID    string // the admin token's id, or "cli"
	ActorName  string // the token's name, or the OS user of a CLI command
	ActorRole  string
	Via        string // api or cli
	Action     string // key.create, credit.create, token.revoke, …
	TargetType string // key, token, asset_group, …
	TargetID   string
	Before     []byte // JSON of the target before the change; nil when it did not exist
	After      []byte // JSON of the target after the change
	// RequestID is the service's own id of the request (never one a client chose);
	// CallerRequestID is the X-Request-Id the caller sent, if any, kept verbatim apart from it.
	RequestID       string
	CallerRequestID string
	RemoteAddr      string
	CreatedAt       time.Time
}

// AuditQuery selects audit entries, newest first. Empty fields select everything.
type AuditQuery struct {
	ActorID    string
	Action     string
	TargetType string
	TargetID   string
	Since      time.Time // inclusive
	Until      time.Time // exclusive
	Before     string    // cursor: only entries whose id sorts before this one
	Limit      int       // at most this many (0: DefaultAuditLimit)
}

// DefaultAuditLimit is the page size of an audit listing unless asked otherwise.
const DefaultAuditLimit = 100

// KeyQuery selects API keys in id order (ids sort by creation), for paged listings.
type KeyQuery struct {
	TenantID   string
	State      string    // "" for every key, "active", "expired" (at Now) or "revoked"
	Now        time.Time // the instant "active" and "expired" are judged at
	NamePrefix string
	After      string // cursor: only keys whose id sorts after this one
	Limit      int    // at most this many (0: DefaultKeyLimit)
}

// Key states of a KeyQuery.
const (
	KeyStateActive  = "active"
	KeyStateRevoked = "revoked"
	KeyStateExpired = "expired" // not revoked, past its expires_at
)

// DefaultKeyLimit is the page size of a key listing unless asked otherwise.
const DefaultKeyLimit = 100

// IdempotentAnswer is the stored first answer of an admin write, replayed for the same
// token, Idempotency-Key and request.
type IdempotentAnswer struct {
	TokenID     string
	Key         string // the Idempotency-Key header
	RequestHash []byte // SHA-256 of method, path and body: a different request is a conflict
	Status      int
	Body        []byte // sealed (admin.sealAnswer): readable only with the token's secret
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// AdminStore reads the operator plane's records.
type AdminStore interface {
	AdminTokenByHash(ctx context.Context, hash []byte) (AdminToken, error)
	AdminToken(ctx context.Context, id string) (AdminToken, error)
	AdminTokens(ctx context.Context) ([]AdminToken, error) // oldest first
	Audit(ctx context.Context, q AuditQuery) ([]AuditEntry, error)
	KeysPage(ctx context.Context, q KeyQuery) ([]Key, error)
	// IdempotentAnswer returns the stored answer for the token and key that has not expired at
	// now, or ErrNotFound.
	IdempotentAnswer(ctx context.Context, tokenID, key string, now time.Time) (IdempotentAnswer, error)
}

// AdminTx writes them, in the transaction of the change they belong to.
type AdminTx interface {
	CreateAdminToken(ctx context.Context, t AdminToken) error
	// RevokeAdminToken marks the token revoked (a second revocation keeps the first time).
	RevokeAdminToken(ctx context.Context, id string, at time.Time) error
	AdminTokenForUpdate(ctx context.Context, id string) (AdminToken, error)
	AppendAudit(ctx context.Context, e AuditEntry) error
	// PutIdempotentAnswer stores a, replacing an expired answer of the same token and key; it
	// fails with ErrConflict when a live one exists (a concurrent duplicate committed first).
	// It also deletes a bounded number of expired answers: the lazy sweep.
	PutIdempotentAnswer(ctx context.Context, a IdempotentAnswer, now time.Time) error
}
