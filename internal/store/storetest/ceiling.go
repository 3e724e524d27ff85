package storetest

import (
	"context"
	"errors"
	"testing"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Ceilings (docs/billing.md, "Ceilings"): no posting takes an account past its ceiling and no
// entry is above the ceiling of one amount, so every sum the database computes stays inside
// int64. Before, one credit of 9223372036774.775807 units pushed the funding account to the
// int64 floor on PostgreSQL, and every later credit in the currency answered "bigint out of
// range"; on SQLite the credit itself failed as a REAL in a STRICT column.

// wantCeiling checks err is a *store.CeilingError on kind (or on an amount: kind "").
func wantCeiling(t *testing.T, what string, err error, kind store.AccountKind) {
	t.Helper()
	var ce *store.CeilingError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrCeiling) || ce.Kind != kind {
		t.Fatalf("%s: %v, want a ceiling refusal on %q", what, err, kind)
	}
}

// entriesOf counts an account's ledger entries: a refusal must write none.
func entriesOf(t *testing.T, s store.Store, account string) int {
	t.Helper()
	es, err := s.Entries(context.Background(), account)
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

func testCeilingsRefuseWithNothingWritten(t *testing.T, s store.Store) {
	ctx := t.Context()
	funding := store.FundingAccountID("USD")
	k := newKey(t, s, "acme", false)

	// The credit: an amount above the ceiling of one amount never reaches the
	// database, and the currency's next ordinary credit still lands.
	huge, _ := money.Parse("9223372036774.775807")
	wantCeiling(t, "the issue's credit", credit(ctx, s, k, huge), "")
	if n := entriesOf(t, s, funding); n != 0 {
		t.Fatalf("a refused credit wrote %d funding entries", n)
	}
	if err := credit(ctx, s, k, 5_000_000); err != nil {
		t.Fatalf("an ordinary credit after the refusal: %v", err)
	}

	// A key's available balance stops at MaxBalance: up to it is accepted, one micro-unit
	// beyond is refused, and the balance and the ledger stay as they were.
	if err := credit(ctx, s, k, money.MaxBalance-5_000_000); err != nil {
		t.Fatalf("credit up to the ceiling: %v", err)
	}
	before := entriesOf(t, s, store.AccountID(k.ID, store.AccountAvailable))
	wantCeiling(t, "credit past the key's ceiling", credit(ctx, s, k, 1), store.AccountAvailable)
	if b := balance(t, s, k); b.Available != money.MaxBalance {
		t.Fatalf("available %s after a refused credit, want the ceiling", b.Available)
	}
	if after := entriesOf(t, s, store.AccountID(k.ID, store.AccountAvailable)); after != before {
		t.Fatalf("a refused credit wrote entries: %d → %d", before, after)
	}

	// The funding account stops at MaxFunding: four keys at the ceiling fill it, a fifth
	// credit is refused, and a debit (money back to funding) makes room again.
	keys := []store.Key{k}
	for len(keys) < int(money.MaxFunding/money.MaxBalance) {
		o := newKey(t, s, "acme", false)
		if err := credit(ctx, s, o, money.MaxBalance); err != nil {
			t.Fatalf("credit key %d to the ceiling: %v", len(keys), err)
		}
		keys = append(keys, o)
	}
	last := newKey(t, s, "other", false)
	wantCeiling(t, "credit past the funding ceiling", credit(ctx, s, last, 1), store.AccountFunding)
	if err := post(ctx, s, "debit",
		store.Entry{Account: store.AccountID(keys[1].ID, store.AccountAvailable), Amount: -money.MaxAmount},
		store.Entry{Account: funding, Amount: money.MaxAmount}); err != nil {
		t.Fatalf("debit back to funding: %v", err)
	}
	if err := credit(ctx, s, last, 1); err != nil {
		t.Fatalf("credit after the debit made room: %v", err)
	}
}

func testCeilingOfAnUnlimitedKeyAndSettlements(t *testing.T, s store.Store) {
	ctx := t.Context()
	u := newKey(t, s, "acme", true)
	// An unlimited key may go below zero, down to −MaxBalance and no further.
	debit := func(amount money.Micros) error {
		return post(ctx, s, "debit",
			store.Entry{Account: store.AccountID(u.ID, store.AccountAvailable), Amount: -amount},
			store.Entry{Account: store.FundingAccountID("USD"), Amount: amount})
	}
	if err := debit(money.MaxBalance - 10); err != nil {
		t.Fatalf("debit to near the floor: %v", err)
	}
	if err := reserve(ctx, s, u, 10); err != nil {
		t.Fatalf("reserve down to the floor: %v", err)
	}
	wantCeiling(t, "reservation past the floor", reserve(ctx, s, u, 1), store.AccountAvailable)
	wantCeiling(t, "debit past the floor", debit(1), store.AccountAvailable)
	if b := balance(t, s, u); b.Available != -money.MaxBalance || b.Reserved != 10 {
		t.Fatalf("after refusals: %+v", b)
	}

	// A settlement is never refused by a ceiling (it only moves what a reservation already
	// moved; refusing it would leave a task unsettled): a key's spent account may pass
	// MaxBalance through settlements.
	k := newKey(t, s, "acme", false)
	for i := range 2 {
		if err := credit(ctx, s, k, money.MaxAmount); err != nil {
			t.Fatalf("credit %d: %v", i, err)
		}
		if err := reserve(ctx, s, k, money.MaxAmount); err != nil {
			t.Fatalf("reserve %d: %v", i, err)
		}
		err := s.Transact(ctx, func(tx store.Tx) error {
			return tx.Post(ctx, store.Txn{ID: "txn_settle_ceiling_" + k.ID + string(rune('a'+i)), Kind: "settle", AllowOverdraft: true,
				Entries: []store.Entry{
					{Account: store.AccountID(k.ID, store.AccountReserved), Amount: -money.MaxAmount},
					{Account: store.AccountID(k.ID, store.AccountSpent), Amount: money.MaxAmount},
				}})
		})
		if err != nil {
			t.Fatalf("settlement %d: %v", i, err)
		}
	}
	if b := balance(t, s, k); b.Used != 2*money.MaxAmount || b.Available != 0 {
		t.Fatalf("after two settlements at the ceiling: %+v", b)
	}
	// Even a settlement's amounts are bounded by the ceiling of one amount.
	err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.Post(ctx, store.Txn{ID: "txn_settle_huge_" + k.ID, Kind: "settle", AllowOverdraft: true,
			Entries: []store.Entry{
				{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -money.MaxAmount - 1},
				{Account: store.AccountID(k.ID, store.AccountSpent), Amount: money.MaxAmount + 1},
			}})
	})
	wantCeiling(t, "a settlement above the ceiling of one amount", err, "")
}
