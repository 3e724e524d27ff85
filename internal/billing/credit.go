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

// CeilingError is a credit or debit refused by a ceiling (docs/billing.md, "Ceilings"): the
// amount itself is above money.MaxAmount, or it would take the key's available balance past
// money.MaxBalance, or the currency's funding account past money.MaxFunding. Nothing was
// written. It matches store.ErrCeiling.
type CeilingError struct {
	Amount   money.Micros
	Currency string
	// Subject is what would pass its ceiling: "amount", "balance" or "funding".
	Subject string
	Ceiling money.Micros
	// Balance is the account's balance before the refused posting (balance and funding).
	Balance money.Micros
}

func (e *CeilingError) Error() string {
	return fmt.Sprintf("%s ceiling %s: %v", e.Subject, e.Ceiling, store.ErrCeiling)
}

// Is makes errors.Is(err, store.ErrCeiling) true.
func (e *CeilingError) Is(target error) bool { return target == store.ErrCeiling }

// Sentence words the refusal for an operator, naming the ceiling.
func (e *CeilingError) Sentence() string {
	switch e.Subject {
	case "balance":
		return fmt.Sprintf("%s %s would take the key's available balance (now %s %s) past its ceiling of ±%s %s.",
			e.Amount, e.Currency, e.Balance, e.Currency, e.Ceiling, e.Currency)
	case "funding":
		return fmt.Sprintf("%s %s would take the total credited in %s less debits (now %s) past its ceiling of %s %s.",
			e.Amount, e.Currency, e.Currency, -e.Balance, e.Ceiling, e.Currency)
	}
	return fmt.Sprintf("%s %s is above the ceiling of one amount, %s %s.", e.Amount, e.Currency, e.Ceiling, e.Currency)
}

// ceiling turns a posting's refusal by a store ceiling into a *CeilingError; other errors pass.
func ceiling(err error, amount money.Micros, currency string) error {
	var se *store.CeilingError
	if !errors.As(err, &se) {
		return err
	}
	e := &CeilingError{Amount: amount, Currency: currency, Subject: "amount", Ceiling: se.Ceiling, Balance: se.Balance}
	switch se.Kind {
	case store.AccountFunding:
		e.Subject = "funding"
	case "":
	default:
		e.Subject = "balance"
	}
	return e
}

// checkAmount refuses an amount that is not positive or above the ceiling of one amount.
func checkAmount(amount money.Micros, currency string) error {
	if amount <= 0 {
		return ErrAmount
	}
	if amount > money.MaxAmount {
		return &CeilingError{Amount: amount, Currency: currency, Subject: "amount", Ceiling: money.MaxAmount}
	}
	return nil
}

// Credit adds money to a key's available balance, drawn from the currency's funding account.
//
// It is refused with a *CeilingError, changing nothing, when the amount is above
// money.MaxAmount or would take the key's available balance or the funding account past its
// ceiling: the check is the store's guarded update, exact across replicas.
func Credit(ctx context.Context, tx store.Tx, key store.Key, currency string, amount money.Micros, note string, at time.Time) (string, error) {
	if err := checkAmount(amount, currency); err != nil {
		return "", fmt.Errorf("credit %s: %w", key.ID, err)
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
		return "", fmt.Errorf("credit %s: %w", key.ID, ceiling(err, amount, currency))
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
	if errors.Is(err, store.ErrCeiling) {
		// Only an unlimited key gets here: its available balance would pass −MaxBalance (or
		// the reservation itself is above MaxAmount). For the tenant that is a balance too
		// low for the request, answered as such: the operator must credit the key.
		return fmt.Errorf("reserve %s for %s: %w: %w", amount, taskID, store.ErrInsufficientFunds, err)
	}
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
//
// The ceilings are Credit's: an unlimited key's available balance may go below zero, but not
// below −money.MaxBalance, and the funding account not above money.MaxFunding.
func Debit(ctx context.Context, tx store.Tx, key store.Key, currency string, amount money.Micros, note string, at time.Time) (string, error) {
	if err := checkAmount(amount, currency); err != nil {
		return "", fmt.Errorf("debit %s: %w", key.ID, err)
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
		return "", fmt.Errorf("debit %s: %w", key.ID, ceiling(err, amount, currency))
	}
	return id, nil
}
