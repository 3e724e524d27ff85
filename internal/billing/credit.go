// Package billing prices work and moves money through the ledger: credits, reservations at
// acceptance, and one settlement at the end. It is the only package that builds ledger
// transactions; services ask it. See docs/billing.md.
package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// ErrAmount reports a credit that is not a positive amount.
var ErrAmount = errors.New("amount must be positive")

// Credit adds money to a key's available balance, drawn from the currency's funding account.
func Credit(ctx context.Context, tx store.Tx, key store.Key, currency string, amount money.Micros, note string, at time.Time) (string, error) {
	if amount <= 0 {
		return "", fmt.Errorf("credit %s: %w", key.ID, ErrAmount)
	}
	id := idgen.New("txn")
	err := tx.Post(ctx, store.Txn{
		ID: id, Kind: "credit", Ref: key.ID, Note: note, CreatedAt: at,
		Entries: []store.Entry{
			{Account: store.FundingAccountID(currency), Amount: -amount},
			{Account: store.AccountID(key.ID, store.AccountAvailable), Amount: amount},
		},
	})
	if err != nil {
		return "", fmt.Errorf("credit %s: %w", key.ID, err)
	}
	return id, nil
}

// Reserve moves a task's estimate from the key's available balance to its reserved balance.
// For a key that is not unlimited it fails with store.ErrInsufficientFunds, changing nothing,
// when the available balance is below the amount: the check and the debit are one guarded
// statement in the store, so concurrent reservations cannot overdraw. Where the key or its
// tenant has a spend cap it first counts the amount against each (caps.go), failing with a
// *CapError that matches store.ErrSpendCap; the caller rolls the transaction back, so nothing
// is written.
func Reserve(ctx context.Context, tx store.Tx, c keys.Caller, taskID string, amount money.Micros, at time.Time) error {
	key := c.Key
	// Spend counters are locked before the key's accounts, in reservations and settlements
	// alike (store.SpendTx), so the two never wait for each other in opposite orders.
	if err := holdCaps(ctx, tx, c, taskID, amount, at); err != nil {
		return fmt.Errorf("reserve %s for %s: %w", amount, taskID, err)
	}
	err := tx.Post(ctx, store.Txn{
		ID: idgen.New("txn"), Kind: "reserve", Ref: taskID, CreatedAt: at,
		Entries: []store.Entry{
			{Account: store.AccountID(key.ID, store.AccountAvailable), Amount: -amount},
			{Account: store.AccountID(key.ID, store.AccountReserved), Amount: amount},
		},
	})
	if err != nil {
		return fmt.Errorf("reserve %s for %s: %w", amount, taskID, err)
	}
	return nil
}

// ErrBelowZero reports a debit larger than a limited key's available balance.
var ErrBelowZero = errors.New("the debit would take the available balance below zero")

// Debit takes money back from a key's available balance into the currency's funding account:
// a correction, the reverse of Credit. It is refused with ErrBelowZero, changing nothing,
// when a key that is not unlimited has less available than the amount: a limited key is never
// put below zero by hand (docs/admin.md says why there is no force).
func Debit(ctx context.Context, tx store.Tx, key store.Key, currency string, amount money.Micros, note string, at time.Time) (string, error) {
	if amount <= 0 {
		return "", fmt.Errorf("debit %s: %w", key.ID, ErrAmount)
	}
	id := idgen.New("txn")
	err := tx.Post(ctx, store.Txn{
		ID: id, Kind: "debit", Ref: key.ID, Note: note, CreatedAt: at,
		Entries: []store.Entry{
			{Account: store.AccountID(key.ID, store.AccountAvailable), Amount: -amount},
			{Account: store.FundingAccountID(currency), Amount: amount},
		},
	})
	if errors.Is(err, store.ErrInsufficientFunds) {
		return "", fmt.Errorf("debit %s of %s: %w", amount, key.ID, ErrBelowZero)
	}
	if err != nil {
		return "", fmt.Errorf("debit %s: %w", key.ID, err)
	}
	return id, nil
}
