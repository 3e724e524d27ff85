package billing

import (
	"context"
	"fmt"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// TxnOverage is the ledger kind of the part of a final charge above its reservation. Every
// charge is bounded by its reservation (Final, SpeechFinal; docs/billing.md) — what an upstream
// does beyond the request is upstream excess, the operator's — so no overage should ever be
// posted. Settle still collects one if a bug computes a charge above the reservation: posted
// as its own transaction, counted, logged as an error and shown per key (`admin key list`),
// never confused with ordinary spending.
const TxnOverage = store.TxnKindOverage

// Settle posts a task's one settlement: the reservation leaves the reserved account, the final
// amount goes to spent, and the difference returns to available. When final exceeds the
// reservation, the excess is collected from available (even below zero) by a second, separate
// "overage" transaction, and its amount is returned so the caller counts and logs it. It runs
// inside the same transaction as the task's terminal transition, whose compare-and-swap makes
// it happen once.
func Settle(ctx context.Context, tx store.Tx, keyID, taskID string, reserved, final money.Micros, at time.Time) (overage money.Micros, err error) {
	if final < 0 {
		return 0, fmt.Errorf("settle %s: negative final amount %s", taskID, final)
	}
	overage = max(final-reserved, 0)
	covered := final - overage
	entries := []store.Entry{
		{Account: store.AccountID(keyID, store.AccountReserved), Amount: -reserved},
		{Account: store.AccountID(keyID, store.AccountSpent), Amount: covered},
	}
	if diff := reserved - covered; diff != 0 {
		entries = append(entries, store.Entry{Account: store.AccountID(keyID, store.AccountAvailable), Amount: diff})
	}
	kind := "settle"
	if final == 0 {
		kind = "release"
	}
	// The spend counters the reservation grew (if a cap counted it) now hold the final charge,
	// overage included, in the period the reservation was made (caps.go). First, as in
	// Reserve: counters are locked before the key's accounts.
	if err := tx.SettleSpend(ctx, taskID, final); err != nil {
		return 0, fmt.Errorf("settle %s: %w", taskID, err)
	}
	// The settlement only returns money to available, never takes it; AllowOverdraft lets
	// that return land on an available balance an earlier overage left below zero.
	if err := tx.Post(ctx, store.Txn{ID: idgen.New("txn"), Kind: kind, Ref: taskID, CreatedAt: at, Entries: entries, AllowOverdraft: true}); err != nil {
		return 0, fmt.Errorf("settle %s: %w", taskID, err)
	}
	if overage == 0 {
		return 0, nil
	}
	err = tx.Post(ctx, store.Txn{ID: idgen.New("txn"), Kind: TxnOverage, Ref: taskID, CreatedAt: at,
		Note: fmt.Sprintf("final %s above the reservation %s", final, reserved),
		Entries: []store.Entry{
			{Account: store.AccountID(keyID, store.AccountAvailable), Amount: -overage},
			{Account: store.AccountID(keyID, store.AccountSpent), Amount: overage},
		}, AllowOverdraft: true})
	if err != nil {
		return 0, fmt.Errorf("settle %s overage: %w", taskID, err)
	}
	return overage, nil
}
