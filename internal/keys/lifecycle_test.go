package keys_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

var t0 = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

func TestUsableRefusesRevokedExpiredAndRotatedOutSecrets(t *testing.T) {
	t.Parallel()
	cur, prev := keys.Hash("current"), keys.Hash("previous")
	base := store.Key{ID: "key_1", Hash: cur}
	expiring := base
	expiring.ExpiresAt = t0.Add(time.Hour)
	revoked := base
	revoked.RevokedAt = t0
	rotated := base
	rotated.PrevHash, rotated.PrevValidUntil, rotated.RotatedAt = prev, t0.Add(24*time.Hour), t0
	tests := []struct {
		name    string
		key     store.Key
		hash    []byte
		at      time.Time
		code    string // "" = usable
		mention string
	}{
		{"usable without expiry", base, cur, t0, "", ""},
		{"usable before expiry", expiring, cur, t0.Add(time.Hour - time.Microsecond), "", ""},
		{"expired at its expiry", expiring, cur, t0.Add(time.Hour), "expired_api_key", "expired at 2026-11-25T13:00:00Z"},
		{"revoked", revoked, cur, t0, "revoked_api_key", "revoked"},
		{"old secret inside the grace", rotated, prev, t0.Add(24*time.Hour - time.Microsecond), "", ""},
		{"old secret after the grace", rotated, prev, t0.Add(24 * time.Hour), "expired_api_key", "rotated at 2026-11-25T12:00:00Z"},
		{"new secret after the grace", rotated, cur, t0.Add(48 * time.Hour), "", ""},
		{"unknown secret", rotated, keys.Hash("other"), t0, "expired_api_key", "rotated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			no := keys.Usable(tt.key, tt.hash, tt.at)
			switch {
			case tt.code == "" && no != nil:
				t.Fatalf("refused: %+v", no)
			case tt.code != "" && (no == nil || no.Code != tt.code || !strings.Contains(no.Message, tt.mention)):
				t.Fatalf("got %+v, want %s mentioning %q", no, tt.code, tt.mention)
			}
		})
	}
}

func TestParseExpiryGraceAndCap(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in   string
		want time.Time
		err  error
	}{
		{"720h", t0.Add(720 * time.Hour), nil},
		{"30d", t0.Add(30 * 24 * time.Hour), nil},
		{"2027-01-01T00:00:00Z", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), nil},
		{"2027-01-01T01:00:00+01:00", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), nil},
		{"2020-01-01T00:00:00Z", time.Time{}, keys.ErrPastExpiry},
		{"-1h", time.Time{}, keys.ErrPastExpiry},
		{"soon", time.Time{}, keys.ErrBadExpiry},
	} {
		got, err := keys.ParseExpiry(tt.in, t0)
		if !errors.Is(err, tt.err) || !got.Equal(tt.want) {
			t.Errorf("ParseExpiry(%q) = %v, %v; want %v, %v", tt.in, got, err, tt.want, tt.err)
		}
	}
	for _, tt := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{{"0", 0, true}, {"24h", 24 * time.Hour, true}, {"7d", 7 * 24 * time.Hour, true}, {"-1h", 0, false}, {"91d", 0, false}, {"x", 0, false}} {
		got, err := keys.ParseGrace(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseGrace(%q) = %v, %v", tt.in, got, err)
		}
	}
	for _, tt := range []struct {
		in   string
		want money.Cap
		ok   bool
	}{{"5.00", money.CapOf(5_000_000), true}, {"100", money.CapOf(100_000_000), true}, {"0", money.CapOf(0), true},
		{"none", money.NoCap, true}, {"NONE", money.NoCap, true}, {"-1", money.NoCap, false}, {"1.0000001", money.NoCap, false},
		{"lots", money.NoCap, false}, {"1000000000000.000001", money.NoCap, false}} {
		got, err := keys.ParseCap(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseCap(%q) = %v, %v", tt.in, got, err)
		}
	}
}

func TestRotateAndUpdate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.SQLite(t)
	secret, k, err := keys.New(keys.Spec{TenantID: "acme", Name: "a", ExpiresAt: t0.Add(time.Hour), Caps: store.Caps{Daily: money.CapOf(1)}}, t0)
	if err != nil || !keys.WellFormed(secret) || k.Caps.Daily != money.CapOf(1) {
		t.Fatalf("New = %q %+v %v", secret, k, err)
	}
	if _, _, err := keys.New(keys.Spec{TenantID: "acme", ExpiresAt: t0}, t0); !errors.Is(err, keys.ErrPastExpiry) {
		t.Errorf("New with a past expiry: %v", err)
	}
	if err := db.Transact(ctx, func(tx store.Tx) error { return tx.CreateKey(ctx, k, "USD") }); err != nil {
		t.Fatal(err)
	}
	var fresh string
	var after store.Key
	if err := db.Transact(ctx, func(tx store.Tx) (err error) {
		fresh, _, after, err = keys.Rotate(ctx, tx, k.ID, 24*time.Hour, t0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if fresh == secret || after.ID != k.ID || !after.PrevValidUntil.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("rotated %+v", after)
	}
	for _, s := range []string{secret, fresh} {
		found, err := db.KeyByHash(ctx, keys.Hash(s))
		if err != nil || found.ID != k.ID || keys.Usable(found, keys.Hash(s), t0.Add(time.Minute)) != nil {
			t.Errorf("secret %s: %+v %v", s[:6], found, err)
		}
	}

	name := "renamed"
	never, noCap := time.Time{}, money.NoCap
	var before store.Key
	if err := db.Transact(ctx, func(tx store.Tx) (err error) {
		before, after, err = keys.Update(ctx, tx, k.ID, keys.Changes{Name: &name, ExpiresAt: &never, Daily: &noCap}, t0)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if before.Name != "a" || after.Name != "renamed" || !after.ExpiresAt.IsZero() || after.Caps.Any() {
		t.Errorf("update: before %+v after %+v", before, after)
	}
	past := t0.Add(-time.Second)
	for name, c := range map[string]keys.Changes{"nothing": {}, "past expiry": {ExpiresAt: &past}} {
		err := db.Transact(ctx, func(tx store.Tx) error { _, _, err := keys.Update(ctx, tx, k.ID, c, t0); return err })
		if err == nil {
			t.Errorf("update with %s accepted", name)
		}
	}
	if err := db.Transact(ctx, func(tx store.Tx) error { return tx.RevokeKey(ctx, k.ID, t0) }); err != nil {
		t.Fatal(err)
	}
	err = db.Transact(ctx, func(tx store.Tx) error { _, _, _, err := keys.Rotate(ctx, tx, k.ID, 0, t0); return err })
	if !errors.Is(err, keys.ErrRevoked) {
		t.Errorf("rotate a revoked key: %v", err)
	}
}
