package admin

import (
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// The admin API's wire types (docs/admin-openapi.yaml). Times are RFC 3339 in UTC; amounts are
// exact decimals of the currency (12.5), like the public API's balance.

// List is a page of a listing. NextCursor, when set, asks for the next page.
type List[T any] struct {
	Object     string `json:"object"` // "list"
	Data       []T    `json:"data"`
	HasMore    bool   `json:"has_more"`
	NextCursor string `json:"next_cursor,omitempty"`
}

func newList[T any](data []T, hasMore bool, next string) List[T] {
	if data == nil {
		data = []T{}
	}
	if !hasMore {
		next = ""
	}
	return List[T]{Object: "list", Data: data, HasMore: hasMore, NextCursor: next}
}

// Token is an admin token as listed (never its secret).
type Token struct {
	Object    string    `json:"object"` // "admin_token"
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	Role      string    `json:"role"`
	Prefix    string    `json:"prefix"`
	State     string    `json:"state"` // active, revoked, expired
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
}

// TokenCreated is the answer to a token creation: the only time the secret is shown.
type TokenCreated struct {
	Token  `json:",inline"`
	Secret string `json:"secret"`
}

func tokenView(t store.AdminToken, now time.Time) Token {
	state := "active"
	switch {
	case t.Revoked():
		state = "revoked"
	case t.Expired(now):
		state = "expired"
	}
	return Token{Object: "admin_token", ID: t.ID, Name: t.Name, Role: t.Role, Prefix: t.Prefix, State: state,
		CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt.UTC(), ExpiresAt: utc(t.ExpiresAt), RevokedAt: utc(t.RevokedAt)}
}

// Key is an API key (never its secret).
type Key struct {
	Object    string    `json:"object"` // "api_key"
	ID        string    `json:"id"`
	Tenant    string    `json:"tenant"`
	Name      string    `json:"name"`
	Prefix    string    `json:"prefix"`
	Unlimited bool      `json:"unlimited"`
	State     string    `json:"state"` // active, expired, revoked
	CreatedAt time.Time `json:"created_at"`
	RevokedAt time.Time `json:"revoked_at,omitzero"`
	// ExpiresAt: from then on the key answers 401 expired_api_key (absent: never).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// RotatedAt is the last rotation; the secret it replaced works until
	// PreviousSecretValidUntil (absent, or past: not at all).
	RotatedAt                time.Time `json:"rotated_at,omitzero"`
	PreviousSecretValidUntil time.Time `json:"previous_secret_valid_until,omitzero"`
	// Caps are the key's spend caps, with what the current UTC day and month spent against
	// them where the answer reads balances (absent: no cap).
	Caps *KeyCaps `json:"caps,omitempty"`
	// Balance is set where the answer reads it (get, list, create).
	Balance *Balance `json:"balance,omitempty"`
}

// KeyCaps are a key's spend caps per UTC day and month (docs/billing.md, "Spend caps").
type KeyCaps struct {
	// Daily and Monthly are the caps; absent is no cap, 0 a cap that lets nothing be spent.
	Daily        *money.Micros `json:"daily,omitempty"`
	Monthly      *money.Micros `json:"monthly,omitempty"`
	SpentToday   *money.Micros `json:"spent_today,omitempty"`
	SpentInMonth *money.Micros `json:"spent_this_month,omitempty"`
}

// Balance is a key's money.
type Balance struct {
	Currency  string       `json:"currency"`
	Available money.Micros `json:"available"`
	Reserved  money.Micros `json:"reserved"`
	Used      money.Micros `json:"used"`
	Overage   money.Micros `json:"overage"`
}

// KeyCreated is the answer to a key creation: the only time the secret is shown.
type KeyCreated struct {
	Key    `json:",inline"`
	Secret string `json:"secret,omitempty"` // never in the audit entry
	// InitialCredit is the credit made with the key, in the same transaction.
	InitialCredit *Credit `json:"initial_credit,omitempty"`
}

// keyView shows k as it stands at now: a key past its expiry is "expired" until revoked.
func keyView(k store.Key, now time.Time) Key {
	state := store.KeyStateActive
	switch {
	case k.Revoked():
		state = store.KeyStateRevoked
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		state = store.KeyStateExpired
	}
	v := Key{Object: "api_key", ID: k.ID, Tenant: k.TenantID, Name: k.Name, Prefix: k.Prefix, Unlimited: k.Unlimited,
		State: state, CreatedAt: k.CreatedAt.UTC(), RevokedAt: utc(k.RevokedAt),
		ExpiresAt: utc(k.ExpiresAt), RotatedAt: utc(k.RotatedAt)}
	if len(k.PrevHash) > 0 {
		v.PreviousSecretValidUntil = utc(k.PrevValidUntil)
	}
	if k.Caps.Any() {
		v.Caps = &KeyCaps{Daily: capPtr(k.Caps.Daily), Monthly: capPtr(k.Caps.Monthly)}
	}
	return v
}

// capPtr is a cap as the key view shows it: nil for none.
func capPtr(c money.Cap) *money.Micros {
	m, ok := c.Get()
	if !ok {
		return nil
	}
	return &m
}

// Credit is one credit: a ledger transaction from the currency's funding account to the key.
type Credit struct {
	Object        string       `json:"object"` // "credit"
	TransactionID string       `json:"transaction_id"`
	KeyID         string       `json:"key_id"`
	Amount        money.Micros `json:"amount"`
	Currency      string       `json:"currency"`
	Note          string       `json:"note,omitempty"`
	// Forced: the key was revoked and the operator forced the credit (with a note).
	Forced    bool      `json:"forced,omitzero"`
	CreatedAt time.Time `json:"created_at"`
}

// AssetGroup is a virtual asset group as the operator sees it.
type AssetGroup struct {
	Object      string    `json:"object"` // "asset_group"
	ID          string    `json:"id"`
	Tenant      string    `json:"tenant"`
	Name        string    `json:"name"`
	Description string    `json:"description,omitempty"`
	Library     string    `json:"library"`
	Origin      string    `json:"origin"`
	Status      string    `json:"status"`
	AssetCount  int       `json:"asset_count"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// GroupGranted is the answer to a grant: the group, and whether the grant created it.
type GroupGranted struct {
	AssetGroup `json:",inline"`
	Created    bool `json:"created"`
}

func groupView(g store.AssetGroup) AssetGroup {
	return AssetGroup{Object: "asset_group", ID: g.ID, Tenant: g.TenantID, Name: g.Name, Description: g.Description,
		Library: g.Library, Origin: g.Origin, Status: g.Status, AssetCount: g.AssetCount,
		CreatedAt: g.CreatedAt.UTC(), UpdatedAt: g.UpdatedAt.UTC()}
}

// AuditEntry is one entry of the audit log.
type AuditEntry struct {
	Object    string         `json:"object"` // "audit_entry"
	ID        string         `json:"id"`
	Actor     AuditActor     `json:"actor"`
	Action    string         `json:"action"`
	Target    AuditTarget    `json:"target"`
	Before    jsontext.Value `json:"before,omitzero"`
	After     jsontext.Value `json:"after,omitzero"`
	RequestID string         `json:"request_id,omitempty"` // the service's own
	// CallerRequestID is the X-Request-Id the caller sent, verbatim (printable ASCII, at most
	// 128 bytes), labelled apart from the service's id.
	CallerRequestID string    `json:"caller_request_id,omitempty"`
	RemoteAddr      string    `json:"remote_addr,omitempty"`
	CreatedAt       time.Time `json:"created_at"`
}

// AuditActor is who acted.
type AuditActor struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Role string `json:"role"`
	Via  string `json:"via"`
}

// AuditTarget is what was acted on.
type AuditTarget struct {
	Type string `json:"type"`
	ID   string `json:"id"`
}

func auditView(e store.AuditEntry) AuditEntry {
	return AuditEntry{Object: "audit_entry", ID: e.ID, Actor: AuditActor{ID: e.ActorID, Name: e.ActorName, Role: e.ActorRole, Via: e.Via},
		Action: e.Action, Target: AuditTarget{Type: e.TargetType, ID: e.TargetID}, Before: jsontext.Value(e.Before),
		After: jsontext.Value(e.After), RequestID: e.RequestID, CallerRequestID: e.CallerRequestID, RemoteAddr: e.RemoteAddr,
		CreatedAt: e.CreatedAt.UTC()}
}

// Tenant is a tenant of the catalog in force.
type Tenant struct {
	Object   string   `json:"object"` // "tenant"
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Currency string   `json:"currency"`
	Aliases  []string `json:"aliases"`
}

func utc(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.UTC()
}
