package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// testConcurrentMixedOutcomes runs many transactions at once, some of which fail, panic, hit a
// unique key or are cancelled before they start. Each caller must get its own outcome, and
// exactly the writes of the transactions that reported success must be in the store: a
// driver that shares commits between transactions (SQLite's group commit) must not let one
// transaction's failure undo, or smuggle in, another's writes.
func testConcurrentMixedOutcomes(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	const n = 120
	boom := errors.New("boom")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	outcome := make([]error, n)
	panicked := make([]bool, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			txctx := ctx
			if i%11 == 5 {
				txctx = cancelled
			}
			defer func() {
				if p := recover(); p != nil {
					panicked[i] = true
				}
			}()
			outcome[i] = s.Transact(txctx, func(tx store.Tx) error {
				amount := money.Micros(1 << (i % 20))
				if err := tx.Post(txctx, store.Txn{ID: fmt.Sprintf("txn_mix_%d", i), Kind: "credit", Entries: []store.Entry{
					{Account: store.FundingAccountID("USD"), Amount: -amount},
					{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: amount}}}); err != nil {
					return err
				}
				switch i % 7 {
				case 3:
					return boom
				case 4:
					panic("boom")
				case 6:
					// The same ledger transaction id twice: the second insert conflicts.
					return tx.Post(txctx, store.Txn{ID: fmt.Sprintf("txn_mix_%d", i), Kind: "credit", Entries: []store.Entry{
						{Account: store.FundingAccountID("USD"), Amount: -1},
						{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: 1}}})
				}
				return nil
			})
		})
	}
	close(start)
	wg.Wait()
	var want money.Micros
	for i := range n {
		switch {
		case i%11 == 5:
			// Cancelled before it ran, or ran with a cancelled context: either way not committed.
			if outcome[i] == nil && !panicked[i] {
				t.Errorf("tx %d with a cancelled context reported success", i)
			}
			continue
		case i%7 == 3:
			if !errors.Is(outcome[i], boom) {
				t.Errorf("tx %d: err = %v, want boom", i, outcome[i])
			}
		case i%7 == 4:
			if !panicked[i] {
				t.Errorf("tx %d: panic not re-raised (err %v)", i, outcome[i])
			}
		case i%7 == 6:
			if outcome[i] == nil {
				t.Errorf("tx %d: duplicate ledger id accepted", i)
			}
		default:
			if outcome[i] != nil || panicked[i] {
				t.Errorf("tx %d: err = %v, panicked %v", i, outcome[i], panicked[i])
			}
			want += money.Micros(1 << (i % 20))
		}
	}
	if b := balance(t, s, k); b.Available != want {
		t.Fatalf("available = %d, want %d (the sum of the successful transactions)", b.Available, want)
	}
	// The store still serves a plain transaction afterwards.
	deadline, stop := context.WithTimeout(ctx, 10*time.Second)
	defer stop()
	if err := credit(deadline, s, k, 1); err != nil {
		t.Fatal(err)
	}
}
