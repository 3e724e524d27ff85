package admin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// KeyInput is what a new API key is made from.
type KeyInput struct {
	Tenant    string
	Name      string
	Unlimited bool
	ExpiresAt time.Time    // zero: never
	Caps      store.Caps   // zero: none; a cap of 0 lets nothing be spent
	Credit    money.Micros // initial credit, in the same transaction (0: none)
}

// CreateKey makes an API key of a catalog tenant and returns its secret, shown once.
func (s *Service) CreateKey(ctx context.Context, a Actor, in KeyInput) (KeyCreated, error) {
	if err := Need(a, RoleOperator); err != nil {
		return KeyCreated{}, err
	}
	if in.Tenant == "" {
		return KeyCreated{}, invalidf("tenant", "tenant is required.")
	}
	tenant, ok := s.catalog().Tenant(in.Tenant)
	if !ok {
		return KeyCreated{}, invalidf("tenant", "tenant %q is not in the catalog.", in.Tenant)
	}
	if err := checkText("name", in.Name, MaxNameChars, false); err != nil {
		return KeyCreated{}, err
	}
	now := s.Now()
	if err := checkCaps(in.Caps.Daily, in.Caps.Monthly); err != nil {
		return KeyCreated{}, err
	}
	if in.Credit < 0 {
		return KeyCreated{}, invalidf("credit", "credit must be a positive amount, or omitted.")
	}
	if in.Credit > money.MaxAmount {
		return KeyCreated{}, amountAboveCeiling("credit", in.Credit, tenant.Currency)
	}
	secret, k, err := keys.New(keys.Spec{TenantID: tenant.ID, Name: in.Name, Unlimited: in.Unlimited, ExpiresAt: in.ExpiresAt, Caps: in.Caps}, now)
	if errors.Is(err, keys.ErrPastExpiry) {
		return KeyCreated{}, invalidf("expires_at", "expires_at must be in the future.")
	}
	if err != nil {
		return KeyCreated{}, err
	}
	k.CreatedAt = now
	// The key and its initial credit are one transaction (with the audit entry): no key is
	// left without the money it was made with.
	return Write(ctx, s, a, func(tx store.Tx) (KeyCreated, Change, error) {
		if err := tx.CreateKey(ctx, k, tenant.Currency); err != nil {
			return KeyCreated{}, Change{}, err
		}
		v := keyView(k, s.Now())
		audited := v
		v.Balance = &Balance{Currency: tenant.Currency}
		var initial *Credit
		if in.Credit > 0 {
			txn, err := billing.Credit(ctx, tx, k, tenant.Currency, in.Credit, "initial credit", now)
			if err != nil {
				return KeyCreated{}, Change{}, ceilingErr("credit", err)
			}
			v.Balance.Available = in.Credit
			initial = &Credit{Object: "credit", TransactionID: txn, KeyID: k.ID, Amount: in.Credit, Currency: tenant.Currency,
				Note: "initial credit", CreatedAt: now}
		}
		if v.Caps != nil {
			zero := money.Micros(0)
			v.Caps = &KeyCaps{Daily: capPtr(k.Caps.Daily), Monthly: capPtr(k.Caps.Monthly), SpentToday: &zero, SpentInMonth: &zero}
		}
		return KeyCreated{Key: v, Secret: secret, InitialCredit: initial},
			Change{Action: "key.create", TargetType: "key", TargetID: k.ID, After: KeyCreated{Key: audited, InitialCredit: initial}}, nil
	})
}

// KeyFilter selects API keys for a listing.
type KeyFilter struct {
	Tenant     string
	State      string // "", active, expired or revoked
	NamePrefix string
	Cursor     string // next_cursor of the previous page
	Limit      int    // 0: MaxPageSize
}

// Keys lists API keys with their balances, in creation order.
func (s *Service) Keys(ctx context.Context, a Actor, f KeyFilter) (List[Key], error) {
	if err := Need(a, RoleViewer); err != nil {
		return List[Key]{}, err
	}
	switch f.State {
	case "", store.KeyStateActive, store.KeyStateExpired, store.KeyStateRevoked:
	default:
		return List[Key]{}, invalidf("state", "state must be active, expired or revoked.")
	}
	if f.Cursor != "" && !idgen.Plausible(f.Cursor) {
		return List[Key]{}, invalidf("cursor", "cursor is not one this service handed out.")
	}
	if err := checkText("name_prefix", f.NamePrefix, MaxNameChars, false); err != nil {
		return List[Key]{}, err
	}
	if err := checkText("tenant", f.Tenant, MaxNameChars, false); err != nil {
		return List[Key]{}, err
	}
	limit, err := pageSize("limit", f.Limit)
	if err != nil {
		return List[Key]{}, err
	}
	page, err := s.st.KeysPage(ctx, store.KeyQuery{TenantID: f.Tenant, State: f.State, Now: s.Now(), NamePrefix: f.NamePrefix, After: f.Cursor, Limit: limit + 1})
	if err != nil {
		return List[Key]{}, fmt.Errorf("list keys: %w", err)
	}
	more := len(page) > limit
	page = page[:min(len(page), limit)]
	out := make([]Key, 0, len(page))
	for _, k := range page {
		v, err := s.withBalance(ctx, k)
		if err != nil {
			return List[Key]{}, err
		}
		out = append(out, v)
	}
	next := ""
	if len(page) > 0 {
		next = page[len(page)-1].ID
	}
	return newList(out, more, next), nil
}

func (s *Service) withBalance(ctx context.Context, k store.Key) (Key, error) {
	v := keyView(k, s.Now())
	b, err := s.st.Balance(ctx, k.ID)
	if err != nil {
		return Key{}, fmt.Errorf("balance of %s: %w", k.ID, err)
	}
	over, err := s.st.Overage(ctx, k.ID)
	if err != nil {
		return Key{}, fmt.Errorf("overage of %s: %w", k.ID, err)
	}
	v.Balance = &Balance{Currency: b.Currency, Available: b.Available, Reserved: b.Reserved, Used: b.Used, Overage: over}
	if v.Caps != nil {
		day, month, err := billing.SpentNow(ctx, s.st, "key", k.ID, s.Now())
		if err != nil {
			return Key{}, fmt.Errorf("spending of %s: %w", k.ID, err)
		}
		v.Caps.SpentToday, v.Caps.SpentInMonth = &day, &month
	}
	return v, nil
}

// Key reads one API key with its balance.
func (s *Service) Key(ctx context.Context, a Actor, id string) (Key, error) {
	if err := Need(a, RoleViewer); err != nil {
		return Key{}, err
	}
	if err := checkID("key", id); err != nil {
		return Key{}, err
	}
	k, err := s.st.Key(ctx, id)
	if isNotFound(err) {
		return Key{}, notFound("key", id)
	}
	if err != nil {
		return Key{}, fmt.Errorf("key %s: %w", id, err)
	}
	return s.withBalance(ctx, k)
}

// RevokeKey revokes an API key: it stops authenticating within --key-cache-ttl. Revoking a
// revoked key changes nothing but is answered and audited like the first time.
func (s *Service) RevokeKey(ctx context.Context, a Actor, id string) (Key, error) {
	if err := Need(a, RoleOperator); err != nil {
		return Key{}, err
	}
	if err := checkID("key", id); err != nil {
		return Key{}, err
	}
	now := s.Now()
	return Write(ctx, s, a, func(tx store.Tx) (Key, Change, error) {
		old, err := tx.Key(ctx, id)
		if isNotFound(err) {
			return Key{}, Change{}, notFound("key", id)
		}
		if err != nil {
			return Key{}, Change{}, err
		}
		if err := tx.RevokeKey(ctx, id, now); err != nil {
			return Key{}, Change{}, err
		}
		cur := old
		if !cur.Revoked() {
			cur.RevokedAt = now
		}
		after := keyView(cur, s.Now())
		return after, Change{Action: "key.revoke", TargetType: "key", TargetID: id, Before: keyView(old, s.Now()), After: after}, nil
	})
}

// CreditInput is a credit to a key.
type CreditInput struct {
	Amount money.Micros
	Note   string
	// Force credits a revoked key; it needs a Note, and the audit entry records it.
	Force bool
}

// Credit adds money to a key's available balance: one balanced ledger transaction from the
// currency's funding account. A revoked key is refused unless the operator forces it with a
// note (checkRevoked).
func (s *Service) Credit(ctx context.Context, a Actor, keyID string, in CreditInput) (Credit, error) {
	if err := Need(a, RoleOperator); err != nil {
		return Credit{}, err
	}
	if err := checkID("key", keyID); err != nil {
		return Credit{}, err
	}
	if in.Amount <= 0 {
		return Credit{}, invalidf("amount", "amount must be a positive decimal with at most 6 decimal places.")
	}
	if err := checkText("note", in.Note, MaxNoteChars, in.Force); err != nil {
		return Credit{}, forceNeedsNote(err, in.Force)
	}
	// The currency of a key's accounts is fixed when it is made.
	b, err := s.st.Balance(ctx, keyID)
	if isNotFound(err) {
		return Credit{}, notFound("key", keyID)
	}
	if err != nil {
		return Credit{}, fmt.Errorf("credit %s: %w", keyID, err)
	}
	if in.Amount > money.MaxAmount {
		return Credit{}, amountAboveCeiling("amount", in.Amount, b.Currency)
	}
	now := s.Now()
	return Write(ctx, s, a, func(tx store.Tx) (Credit, Change, error) {
		k, err := tx.KeyForUpdate(ctx, keyID)
		if isNotFound(err) {
			return Credit{}, Change{}, notFound("key", keyID)
		}
		if err != nil {
			return Credit{}, Change{}, err
		}
		if err := checkRevoked(k, "credit", in.Force); err != nil {
			return Credit{}, Change{}, err
		}
		txn, err := billing.Credit(ctx, tx, k, b.Currency, in.Amount, in.Note, now)
		if err != nil {
			return Credit{}, Change{}, ceilingErr("amount", err)
		}
		c := Credit{Object: "credit", TransactionID: txn, KeyID: k.ID, Amount: in.Amount, Currency: b.Currency, Note: in.Note,
			Forced: in.Force && k.Revoked(), CreatedAt: now}
		return c, Change{Action: "credit.create", TargetType: "key", TargetID: k.ID, Before: forcedBefore(k, in.Force, now), After: c}, nil
	})
}

// checkRevoked refuses a credit or debit of a revoked key unless forced (docs/admin.md,
// "Credits and debits of a revoked key"): money moved onto a key nobody can use is almost
// always a wrong key id, so the operator must say it is meant.
func checkRevoked(k store.Key, what string, force bool) error {
	if !k.Revoked() || force {
		return nil
	}
	return invalidf("", "The key %s is revoked (since %s): a %s of a revoked key is refused. To %s it anyway, say force with a note saying why; it is audited.",
		k.ID, k.RevokedAt.UTC().Format(time.RFC3339), what, what)
}

// forceNeedsNote words a missing note of a forced write.
func forceNeedsNote(err error, force bool) error {
	if force {
		return invalidf("note", "A forced credit or debit needs a note saying why: it is kept in the audit log.")
	}
	return err
}

// forcedBefore is the audit entry's Before of a forced write: the revoked key, so the entry
// shows the state the operator overrode. Nil otherwise.
func forcedBefore(k store.Key, force bool, now time.Time) any {
	if !force || !k.Revoked() {
		return nil
	}
	return keyView(k, now)
}

// amountAboveCeiling is the 400 of an amount above money.MaxAmount, naming the field.
func amountAboveCeiling(param string, amount money.Micros, currency string) error {
	return invalidf(param, "%s %s %s is above the ceiling of one amount, %s %s (docs/billing.md, \"Ceilings\").",
		param, amount, currency, money.MaxAmount, currency)
}

// ceilingErr words a credit or debit that a ceiling refused as a 400 naming param; other
// errors pass unchanged.
func ceilingErr(param string, err error) error {
	var ce *billing.CeilingError
	if !errors.As(err, &ce) {
		return err
	}
	return invalidf(param, "%s %s (docs/billing.md, \"Ceilings\")", param, ce.Sentence())
}
