package billing

import (
	"context"
	"fmt"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Settle posts a task's one settlement: the reservation leaves the reserved account, the final
// amount goes to spent, and the difference returns to (or, when final exceeds the reservation,
// is collected from) available. It runs inside the same transaction as the task's terminal
// transition, whose compare-and-swap makes it happen once.
func Settle(ctx context.Context, tx store.Tx, keyID, taskID string, reserved, final money.Micros, at time.Time) error {
	if final < 0 {
		return fmt.Errorf("settle %s: negative final amount %s", taskID, final)
	}
	entries := []store.Entry{
		{Account: store.AccountID(keyID, store.AccountReserved), Amount: -reserved},
		{Account: store.AccountID(keyID, store.AccountSpent), Amount: final},
	}
	if diff := reserved - final; diff != 0 {
		entries = append(entries, store.Entry{Account: store.AccountID(keyID, store.AccountAvailable), Amount: diff})
	}
	kind := "settle"
	if final == 0 {
		kind = "release"
	}
	err := tx.Post(ctx, store.Txn{ID: idgen.New("txn"), Kind: kind, Ref: taskID, CreatedAt: at, Entries: entries, AllowOverdraft: true})
	if err != nil {
		return fmt.Errorf("settle %s: %w", taskID, err)
	}
	return nil
}
