package keys

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// The lifecycle of a key (docs/admin.md, "Keys: expiry, rotation, caps"): an optional expiry,
// rotation with a grace period for the replaced secret, spend caps. These are the domain
// rules; the admin CLI and API call them inside their own transaction (with their audit row).

// Errors of the lifecycle operations, for the callers to word.
var (
	ErrRevoked     = errors.New("the key is revoked")
	ErrPastExpiry  = errors.New("the expiry is not in the future")
	ErrBadCap      = money.ErrCap
	ErrBadExpiry   = errors.New("an expiry must be a duration such as 720h or 30d, or a time such as 2027-01-01T00:00:00Z")
	ErrBadGrace    = errors.New("a grace period must be a duration of 0 or more, such as 24h, at most 90 days")
	ErrNoSuchField = errors.New("nothing to change")
)

// MaxGrace bounds a rotation's grace period: an old secret that works for months is not a
// rotation.
const MaxGrace = 90 * 24 * time.Hour

// Refusal is why a key that exists may not authenticate: the 401's code and message.
type Refusal struct{ Code, Message string }

// Usable reports whether the key whose secret (current, or the one its last rotation
// replaced) hashes to hash may authenticate at now; nil if it may. It is checked on every
// request, cached key or not, so no cache lets a key through after its expiry.
func Usable(k store.Key, hash []byte, now time.Time) *Refusal {
	switch {
	case k.Revoked():
		return &Refusal{"revoked_api_key", "The API key has been revoked."}
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return &Refusal{"expired_api_key", fmt.Sprintf("The API key expired at %s. Ask the operator for a new key or a new expiry.",
			k.ExpiresAt.UTC().Format(time.RFC3339))}
	case !bytes.Equal(hash, k.Hash):
		// The secret a rotation replaced: valid until the end of its grace period.
		if len(k.PrevHash) == 0 || !bytes.Equal(hash, k.PrevHash) || !now.Before(k.PrevValidUntil) {
			until := k.PrevValidUntil
			if until.IsZero() {
				until = k.RotatedAt
			}
			return &Refusal{"expired_api_key", fmt.Sprintf("This secret of the API key was replaced when the key was rotated at %s and stopped working at %s. Use the key's new secret.",
				k.RotatedAt.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339))}
		}
	}
	return nil
}

// Spec is what a new key is made with.
type Spec struct {
	TenantID  string
	Name      string
	Unlimited bool
	ExpiresAt time.Time // zero: never
	Caps      store.Caps
}

// New makes a key from spec: its id, its secret (returned once, stored only as a hash).
func New(spec Spec, now time.Time) (secret string, k store.Key, err error) {
	if !spec.ExpiresAt.IsZero() && !spec.ExpiresAt.After(now) {
		return "", store.Key{}, ErrPastExpiry
	}
	if !validCap(spec.Caps.Daily) || !validCap(spec.Caps.Monthly) {
		return "", store.Key{}, ErrBadCap
	}
	secret, display, hash := Generate()
	return secret, store.Key{ID: idgen.New("key"), TenantID: spec.TenantID, Name: spec.Name, Prefix: display, Hash: hash,
		Unlimited: spec.Unlimited, CreatedAt: now, ExpiresAt: spec.ExpiresAt.UTC(), Caps: spec.Caps}, nil
}

// Rotate gives key id a new secret, returned once. The secret it replaces keeps working for
// grace (0: it stops at once), then answers 401 saying it was rotated. A secret replaced by an
// earlier rotation stops at once and is then unknown (401 invalid_api_key): a key keeps at
// most two hashes. The id, balance and ledger
// stay. It returns the key before and after.
func Rotate(ctx context.Context, tx store.Tx, id string, grace time.Duration, now time.Time) (secret string, before, after store.Key, err error) {
	if grace < 0 || grace > MaxGrace {
		return "", store.Key{}, store.Key{}, ErrBadGrace
	}
	before, err = tx.KeyForUpdate(ctx, id)
	if err != nil {
		return "", store.Key{}, store.Key{}, err
	}
	if before.Revoked() {
		return "", before, before, ErrRevoked
	}
	secret, display, hash := Generate()
	after = before
	// The replaced hash is kept even without a grace period (valid until now: not at all), so
	// that the old secret is answered "rotated", not "invalid".
	after.Hash, after.Prefix, after.RotatedAt = hash, display, now.UTC()
	after.PrevHash, after.PrevValidUntil = before.Hash, now.Add(grace).UTC()
	if err := tx.RotateKey(ctx, after); err != nil {
		return "", before, before, err
	}
	return secret, before, after, nil
}

// Changes are the fields an update sets; nil leaves a field as it is.
type Changes struct {
	Name      *string
	ExpiresAt *time.Time // a zero time clears the expiry
	Daily     *money.Cap
	Monthly   *money.Cap // money.NoCap clears a cap; a cap of 0 lets nothing be spent
}

// Update applies changes to key id and returns it before and after.
func Update(ctx context.Context, tx store.Tx, id string, c Changes, now time.Time) (before, after store.Key, err error) {
	if c.Name == nil && c.ExpiresAt == nil && c.Daily == nil && c.Monthly == nil {
		return store.Key{}, store.Key{}, ErrNoSuchField
	}
	if c.ExpiresAt != nil && !c.ExpiresAt.IsZero() && !c.ExpiresAt.After(now) {
		return store.Key{}, store.Key{}, ErrPastExpiry
	}
	for _, v := range []*money.Cap{c.Daily, c.Monthly} {
		if v != nil && !validCap(*v) {
			return store.Key{}, store.Key{}, ErrBadCap
		}
	}
	before, err = tx.KeyForUpdate(ctx, id)
	if err != nil {
		return store.Key{}, store.Key{}, err
	}
	if before.Revoked() {
		return before, before, ErrRevoked
	}
	after = before
	if c.Name != nil {
		after.Name = *c.Name
	}
	if c.ExpiresAt != nil {
		after.ExpiresAt = c.ExpiresAt.UTC()
		if c.ExpiresAt.IsZero() {
			after.ExpiresAt = time.Time{}
		}
	}
	if c.Daily != nil {
		after.Caps.Daily = *c.Daily
	}
	if c.Monthly != nil {
		after.Caps.Monthly = *c.Monthly
	}
	if err := tx.UpdateKey(ctx, after); err != nil {
		return before, before, err
	}
	return before, after, nil
}

// ParseExpiry reads an expiry as the operator gives it: a duration from now ("720h", "30d",
// "90m") or an RFC 3339 time. It must be in the future.
func ParseExpiry(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	var at time.Time
	if d, ok := parseDays(s); ok {
		at = now.Add(d)
	} else if d, err := time.ParseDuration(s); err == nil {
		at = now.Add(d)
	} else if t, err := time.Parse(time.RFC3339, s); err == nil {
		at = t
	} else {
		return time.Time{}, ErrBadExpiry
	}
	if !at.After(now) {
		return time.Time{}, ErrPastExpiry
	}
	return at.UTC(), nil
}

// ParseGrace reads a grace period: a duration ("24h", "7d", "0").
func ParseGrace(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	d, ok := parseDays(s)
	if !ok {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, ErrBadGrace
		}
	}
	if d < 0 || d > MaxGrace {
		return 0, ErrBadGrace
	}
	return d, nil
}

// parseDays reads "30d": Go durations stop at hours, operators think in days.
func parseDays(s string) (time.Duration, bool) {
	n, ok := strings.CutSuffix(s, "d")
	if !ok {
		return 0, false
	}
	v, err := strconv.Atoi(n)
	if err != nil || v < 0 || v > 100*366 {
		return 0, false
	}
	return time.Duration(v) * 24 * time.Hour, true
}

// ParseCap reads a cap: "none" for no cap, or an amount from 0 (nothing may be spent) to
// money.MaxAmount (money.ParseCap).
func ParseCap(s string) (money.Cap, error) { return money.ParseCap(s) }

// validCap: no cap, or an amount within [0, money.MaxAmount].
func validCap(c money.Cap) bool {
	m, ok := c.Get()
	return !ok || (m >= 0 && m <= money.MaxAmount)
}
