package billing

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/store/sqlite"
)

// A settlement that returns part of a reservation lands even when an earlier overage left
// the key's available balance below zero; an overage is posted apart and reported.
func TestSettleAfterAnOverageLeftAvailableNegative(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "b.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	k := store.Key{ID: "key_s", TenantID: "acme", Prefix: "mg_x", Hash: []byte("h"), CreatedAt: time.Now()}
	now := time.Now()
	step := func(fn func(tx store.Tx) error) {
		t.Helper()
		if err := db.Transact(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	step(func(tx store.Tx) error {
		if err := tx.CreateKey(ctx, k, "USD"); err != nil {
			return err
		}
		_, err := Credit(ctx, tx, k, "USD", 1_000_000, "", now)
		return err
	})
	// Two tasks reserve 0.4 each; the first settles 1.0 (0.6 of overage) → available -0.4.
	step(func(tx store.Tx) error { return Reserve(ctx, tx, keys.Caller{Key: k}, "t1", 400_000, now) })
	step(func(tx store.Tx) error { return Reserve(ctx, tx, keys.Caller{Key: k}, "t2", 400_000, now) })
	var over money.Micros
	step(func(tx store.Tx) (err error) {
		over, err = Settle(ctx, tx, k.ID, "t1", 400_000, 1_000_000, now)
		return err
	})
	if over != 600_000 {
		t.Fatalf("overage %s, want 0.6", over)
	}
	if b, _ := db.Balance(ctx, k.ID); b.Available != -400_000 {
		t.Fatalf("available %s, want -0.4", b.Available)
	}
	// The second settles 0.1: 0.3 returns to the negative available balance.
	step(func(tx store.Tx) (err error) {
		over, err = Settle(ctx, tx, k.ID, "t2", 400_000, 100_000, now)
		return err
	})
	b, _ := db.Balance(ctx, k.ID)
	if over != 0 || b.Available != -100_000 || b.Reserved != 0 || b.Used != 1_100_000 {
		t.Fatalf("after the second settlement: %+v, overage %s", b, over)
	}
	if got, _ := db.Overage(ctx, k.ID); got != 600_000 {
		t.Fatalf("recorded overage %s, want 0.6", got)
	}
	if err := db.CheckLedger(ctx); err != nil {
		t.Fatal(err)
	}
}
