package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// The key lifecycle beyond create and revoke (docs/admin.md, "Keys: expiry, rotation, caps"):
// rotation, updates of name, expiry and caps, and debits. The rules are internal/keys' and
// internal/billing's; these methods check the role and the input, and audit.

// checkCaps refuses a cap outside [0, money.MaxAmount]; none is no cap and 0 a cap that lets
// nothing be spent (docs/billing.md, "Spend caps").
func checkCaps(daily, monthly money.Cap) error {
	for _, c := range []struct {
		param string
		v     money.Cap
	}{{"daily_cap", daily}, {"monthly_cap", monthly}} {
		if m, ok := c.v.Get(); ok && (m < 0 || m > money.MaxAmount) {
			return capInvalid(c.param)
		}
	}
	return nil
}

func capInvalid(param string) error {
	return invalidf(param, "%s must be an amount from 0 to %s (0: nothing may be spent), or \"none\" for no cap.", param, money.MaxAmount)
}

// KeyRotated is the answer to a rotation: the key and its new secret, shown once.
type KeyRotated struct {
	Key    `json:",inline"`
	Secret string `json:"secret,omitempty"` // never in the audit entry
}

// RotateKey gives a key a new secret; the one it replaces works for grace (0: not at all).
func (s *Service) RotateKey(ctx context.Context, a Actor, id string, grace time.Duration) (KeyRotated, error) {
	if err := Need(a, RoleOperator); err != nil {
		return KeyRotated{}, err
	}
	if err := checkID("key", id); err != nil {
		return KeyRotated{}, err
	}
	if grace < 0 || grace > keys.MaxGrace {
		return KeyRotated{}, invalidf("grace", "grace must be a number of seconds from 0 to %d (90 days).", int64(keys.MaxGrace/time.Second))
	}
	now := s.Now()
	return Write(ctx, s, a, func(tx store.Tx) (KeyRotated, Change, error) {
		secret, before, after, err := keys.Rotate(ctx, tx, id, grace, now)
		if err != nil {
			return KeyRotated{}, Change{}, keyErr(id, err)
		}
		v := keyView(after, s.Now())
		return KeyRotated{Key: v, Secret: secret},
			Change{Action: "key.rotate", TargetType: "key", TargetID: id, Before: keyView(before, s.Now()), After: v}, nil
	})
}

// KeyUpdate is an update of a key; nil leaves a field as it is. A zero ExpiresAt removes the
// expiry; money.NoCap removes a cap, and a cap of 0 lets nothing be spent.
type KeyUpdate struct {
	Name      *string
	ExpiresAt *time.Time
	Daily     *money.Cap
	Monthly   *money.Cap
}

// UpdateKey changes a key's name, expiry and caps.
func (s *Service) UpdateKey(ctx context.Context, a Actor, id string, in KeyUpdate) (Key, error) {
	if err := Need(a, RoleOperator); err != nil {
		return Key{}, err
	}
	if err := checkID("key", id); err != nil {
		return Key{}, err
	}
	if in.Name != nil {
		if err := checkText("name", *in.Name, MaxNameChars, false); err != nil {
			return Key{}, err
		}
	}
	var daily, monthly money.Cap
	if in.Daily != nil {
		daily = *in.Daily
	}
	if in.Monthly != nil {
		monthly = *in.Monthly
	}
	if err := checkCaps(daily, monthly); err != nil {
		return Key{}, err
	}
	now := s.Now()
	return Write(ctx, s, a, func(tx store.Tx) (Key, Change, error) {
		before, after, err := keys.Update(ctx, tx, id, keys.Changes{Name: in.Name, ExpiresAt: in.ExpiresAt, Daily: in.Daily, Monthly: in.Monthly}, now)
		if err != nil {
			return Key{}, Change{}, keyErr(id, err)
		}
		v := keyView(after, s.Now())
		return v, Change{Action: "key.update", TargetType: "key", TargetID: id, Before: keyView(before, s.Now()), After: v}, nil
	})
}

// keyErr words the lifecycle's refusals for the client.
func keyErr(id string, err error) error {
	switch {
	case isNotFound(err):
		return notFound("key", id)
	case errors.Is(err, keys.ErrRevoked):
		return invalidf("", "The key %s is revoked: it cannot be rotated or updated.", id)
	case errors.Is(err, keys.ErrPastExpiry):
		return invalidf("expires_at", "expires_at must be in the future; to stop a key now, revoke it.")
	case errors.Is(err, keys.ErrNoSuchField):
		return invalidf("", "Give at least one of name, expires_at, daily_cap, monthly_cap.")
	case errors.Is(err, keys.ErrBadCap):
		return capInvalid("daily_cap")
	}
	return err
}

// DebitInput is a correction taking money back from a key.
type DebitInput struct {
	Amount money.Micros
	Note   string // required: a correction says why
	// Force debits a revoked key (audited; the note is required anyway).
	Force bool
}

// Debit is one debit: a ledger transaction from the key to the currency's funding account.
type Debit struct {
	Object        string       `json:"object"` // "debit"
	TransactionID string       `json:"transaction_id"`
	KeyID         string       `json:"key_id"`
	Amount        money.Micros `json:"amount"`
	Currency      string       `json:"currency"`
	Note          string       `json:"note"`
	// Forced: the key was revoked and the operator forced the debit.
	Forced    bool      `json:"forced,omitzero"`
	CreatedAt time.Time `json:"created_at"`
}

// Debit takes money back from a key's available balance (a correction). It never takes a
// limited key below zero: there is no force (docs/admin.md says why).
func (s *Service) Debit(ctx context.Context, a Actor, keyID string, in DebitInput) (Debit, error) {
	if err := Need(a, RoleOperator); err != nil {
		return Debit{}, err
	}
	if err := checkID("key", keyID); err != nil {
		return Debit{}, err
	}
	if in.Amount <= 0 {
		return Debit{}, invalidf("amount", "amount must be a positive decimal with at most 6 decimal places.")
	}
	if err := checkText("note", in.Note, MaxNoteChars, true); err != nil {
		return Debit{}, err
	}
	b, err := s.st.Balance(ctx, keyID)
	if isNotFound(err) {
		return Debit{}, notFound("key", keyID)
	}
	if err != nil {
		return Debit{}, fmt.Errorf("debit %s: %w", keyID, err)
	}
	if in.Amount > money.MaxAmount {
		return Debit{}, amountAboveCeiling("amount", in.Amount, b.Currency)
	}
	now := s.Now()
	return Write(ctx, s, a, func(tx store.Tx) (Debit, Change, error) {
		k, err := tx.KeyForUpdate(ctx, keyID)
		if isNotFound(err) {
			return Debit{}, Change{}, notFound("key", keyID)
		}
		if err != nil {
			return Debit{}, Change{}, err
		}
		if err := checkRevoked(k, "debit", in.Force); err != nil {
			return Debit{}, Change{}, err
		}
		txn, err := billing.Debit(ctx, tx, k, b.Currency, in.Amount, in.Note, now)
		if errors.Is(err, billing.ErrBelowZero) {
			return Debit{}, Change{}, invalidf("amount", "amount %s %s is more than the key's available balance; a key that is not unlimited is never taken below zero.", in.Amount, b.Currency)
		}
		if err != nil {
			return Debit{}, Change{}, ceilingErr("amount", err)
		}
		d := Debit{Object: "debit", TransactionID: txn, KeyID: k.ID, Amount: in.Amount, Currency: b.Currency, Note: in.Note,
			Forced: in.Force && k.Revoked(), CreatedAt: now}
		return d, Change{Action: "debit.create", TargetType: "key", TargetID: k.ID, Before: forcedBefore(k, in.Force, now), After: d}, nil
	})
}
