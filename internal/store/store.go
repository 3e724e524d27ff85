// Package store defines persistence for mediagen: the records it keeps and the interface that
// both the SQLite and the PostgreSQL drivers implement in full (Store, Tx). Each service
// declares the few methods it uses (video.Store, jobs.Store, …); the conformance suite in
// store/storetest runs against both drivers, so they cannot drift apart.
package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/money"
)

// Sentinel errors. Callers test them with errors.Is; drivers wrap them with context.
var (
	ErrNotFound          = errors.New("not found")
	ErrConflict          = errors.New("conflict")
	ErrInsufficientFunds = errors.New("insufficient funds")
	ErrUnbalanced        = errors.New("ledger transaction does not balance")
	// ErrSpendCap: a spend counter's guarded update refused (see SpendCapError).
	ErrSpendCap = errors.New("spend cap exceeded")
	// ErrCeiling: a posting would take an account past its ceiling (see CeilingError).
	ErrCeiling = errors.New("balance ceiling")
)

// CeilingError is a posting refused because it would take an account's balance past its
// ceiling (money.MaxBalance for a key's accounts, money.MaxFunding for a currency's funding
// account), or because one of its amounts is above money.MaxAmount. Nothing was written. It
// matches ErrCeiling.
type CeilingError struct {
	Account string
	Kind    AccountKind  // "" when an amount, not a balance, was refused
	Balance money.Micros // the balance before the posting
	Amount  money.Micros // the posting's amount on the account
	Ceiling money.Micros // the ceiling it would pass, either sign
}

func (e *CeilingError) Error() string {
	if e.Kind == "" {
		return fmt.Sprintf("amount %s on %s is above the ceiling %s: %v", e.Amount, e.Account, e.Ceiling, ErrCeiling)
	}
	return fmt.Sprintf("account %s at %s moved by %s would pass ±%s: %v", e.Account, e.Balance, e.Amount, e.Ceiling, ErrCeiling)
}

// Is makes errors.Is(err, ErrCeiling) true.
func (e *CeilingError) Is(target error) bool { return target == ErrCeiling }

// CeilingOf is the ceiling of an account's balance, either sign: the funding account's is
// higher than a key's because it sums all keys of its currency (money.MaxFunding).
func CeilingOf(kind AccountKind) money.Micros {
	if kind == AccountFunding {
		return money.MaxFunding
	}
	return money.MaxBalance
}

// Key is an API key. Only the SHA-256 hash of the secret is stored: keys are 160+ bits of
// randomness, so a slow password hash would add latency to every request and no security.
type Key struct {
	ID        string
	TenantID  string
	Name      string
	Prefix    string // the first characters of the secret, shown in listings to tell keys apart
	Hash      []byte
	Unlimited bool
	CreatedAt time.Time
	RevokedAt time.Time // zero while the key is active
	// ExpiresAt is when the key stops authenticating (zero: never).
	ExpiresAt time.Time
	// Caps are the key's spend caps per UTC day and month (spend.go).
	Caps Caps
	// PrevHash is the hash of the secret the last rotation replaced, accepted until
	// PrevValidUntil (both zero when there is none); RotatedAt is when the key was last rotated.
	PrevHash       []byte
	PrevValidUntil time.Time
	RotatedAt      time.Time
}

// Revoked reports whether the key may no longer authenticate.
func (k Key) Revoked() bool { return !k.RevokedAt.IsZero() }

// AccountKind distinguishes the accounts of the double-entry ledger.
type AccountKind string

const (
	// AccountAvailable is what a key may spend; it goes negative only for unlimited keys.
	AccountAvailable AccountKind = "available"
	// AccountReserved holds money reserved for accepted, unsettled work.
	AccountReserved AccountKind = "reserved"
	// AccountSpent accumulates settled charges: the key's "used".
	AccountSpent AccountKind = "spent"
	// AccountFunding is the per-currency source of credits; its balance is the negative of all
	// money ever credited, which is what makes every credit balance to zero.
	AccountFunding AccountKind = "funding"
)

// TxnKindOverage is the ledger kind of a charge collected above its reservation (see
// billing.Settle): counted apart so that it can be shown and alerted on.
const TxnKindOverage = "overage"

// AccountID names a key's account of the given kind.
func AccountID(keyID string, kind AccountKind) string { return keyID + ":" + string(kind) }

// FundingAccountID names the funding account of a currency.
func FundingAccountID(currency string) string { return "funding:" + currency }

// Balance is the money view of one key.
type Balance struct {
	KeyID     string
	Currency  string
	Available money.Micros
	Reserved  money.Micros
	Used      money.Micros
	Unlimited bool
	UpdatedAt time.Time
}

// Entry is one leg of a ledger transaction.
type Entry struct {
	Account string
	Amount  money.Micros
}

// Txn is a ledger transaction: its entries sum to zero, always.
type Txn struct {
	ID        string
	Kind      string // credit, reserve, settle, …
	Ref       string // what it is about: a task id, an operator note's subject
	Note      string
	Entries   []Entry
	CreatedAt time.Time
	// AllowOverdraft lets this transaction take an available account below zero. Settlement
	// uses it: the reservation is not a spending cap, so a final amount above it is collected
	// even from an empty balance. Reservations never use it.
	AllowOverdraft bool
}

// Store is the whole persistence interface.
type Store interface {
	// Transact runs fn in one database transaction, committed if fn returns nil and rolled
	// back otherwise, or if fn panics.
	Transact(ctx context.Context, fn func(Tx) error) error

	KeyByHash(ctx context.Context, hash []byte) (Key, error)
	Key(ctx context.Context, id string) (Key, error)
	Keys(ctx context.Context, tenantID string) ([]Key, error) // all tenants when tenantID is ""
	Balance(ctx context.Context, keyID string) (Balance, error)
	Entries(ctx context.Context, account string) ([]Entry, error)
	// Overage is the total a key was charged above its reservations: the sum of what its
	// ledger transactions of kind TxnKindOverage moved into its spent account.
	Overage(ctx context.Context, keyID string) (money.Micros, error)
	// Spent reads spend counters (zero for a period with none).
	Spent(ctx context.Context, counters []SpendCounter) ([]money.Micros, error)
	Meta(ctx context.Context, name string) (string, bool, error)
	TaskStore
	QueueStore
	SpeechStore
	AssetStore
	JobStore
	ExcessStore
	CatalogStore
	UsageStore
	SupportStore
	AdminStore
	ConsoleStore
	OverviewStore
	WebhookStore

	// CheckLedger verifies the ledger invariants: every transaction sums to zero, every
	// account's balance equals the sum of its entries, and no reserved or spent account is
	// negative (available accounts may be, after a settlement collected beyond them). It returns nil or an error listing the violations.
	CheckLedger(ctx context.Context) error

	Ping(ctx context.Context) error
	Close() error
}

// Tx is the write side, used inside Store.Transact.
type Tx interface {
	// CreateKey stores a key and opens its accounts in the given currency.
	CreateKey(ctx context.Context, k Key, currency string) error
	RevokeKey(ctx context.Context, id string, at time.Time) error
	Key(ctx context.Context, id string) (Key, error)
	// KeyForUpdate reads a key and locks its row until the transaction ends, so a read-modify-
	// write of it (UpdateKey, RotateKey) cannot lose a concurrent one.
	KeyForUpdate(ctx context.Context, id string) (Key, error)
	// UpdateKey writes the key's name, expiry and caps.
	UpdateKey(ctx context.Context, k Key) error
	// RotateKey replaces the key's hash and prefix, keeping the replaced hash valid until
	// k.PrevValidUntil (k.PrevHash, k.PrevValidUntil and k.RotatedAt as given).
	RotateKey(ctx context.Context, k Key) error
	SpendTx
	// Post appends a balanced transaction and moves the account balances. It fails with
	// ErrInsufficientFunds, changing nothing, when an account that may not go negative would;
	// and with a *CeilingError, changing nothing, when an entry's amount is above
	// money.MaxAmount or, unless AllowOverdraft, an account would pass its ceiling (CeilingOf).
	// Settlements (AllowOverdraft) are exempt from the balance ceiling: they only move what a
	// reservation already moved, and a settlement refused would leave a task unsettled.
	Post(ctx context.Context, t Txn) error
	// SetMetaOnce records name=value unless name is already set; it reports whether it wrote.
	SetMetaOnce(ctx context.Context, name, value string) (bool, error)
	TaskTx
	InFlightTx
	QueueTx
	SpeechTx
	AssetTx
	JobTx
	ExcessTx
	UsageTx
	SupportTx
	AdminTx
	CatalogTx
	WebhookTx
}
