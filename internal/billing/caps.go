package billing

import (
	"context"
	"errors"
	"fmt"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Spend caps (docs/billing.md, "Spend caps"). A key and a tenant may each cap what they spend
// per UTC calendar day and per UTC calendar month. What counts in a period is every
// reservation made in it, adjusted at settlement to the final charge (overage included) and
// given back by a release: settled charges plus open reservations, which is why a reservation
// is refused when it would take the period over the cap. The counting is done by the store,
// one guarded statement per counter inside the reservation's transaction (store.SpendTx), so
// it is exact across replicas.

// CodeSpendCap is the 402 code of a refusal by a spend cap; the contract's
// insufficient_balance stays for a balance that cannot cover the reservation.
const CodeSpendCap = "spend_cap_exceeded"

// Period names for messages and counters.
const (
	Daily   = "daily"
	Monthly = "monthly"
)

// PeriodOf is the counter period of at for a daily or monthly cap, and when it ends (UTC).
func PeriodOf(kind string, at time.Time) (period string, resets time.Time) {
	at = at.UTC()
	y, m, d := at.Date()
	if kind == Daily {
		start := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return "day:" + start.Format("2006-01-02"), start.AddDate(0, 0, 1)
	}
	start := time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
	return "month:" + start.Format("2006-01"), start.AddDate(0, 1, 0)
}

// counterOf is the daily or monthly counter of an owner at at, with the period's bounds: the
// store seeds a new counter with what the period spent before a cap counted it (a cap set
// mid-period), and a read of a period with no counter yet answers that.
func counterOf(scope, owner, kind string, at time.Time) store.SpendCounter {
	period, resets := PeriodOf(kind, at)
	from := resets.AddDate(0, 0, -1)
	if kind == Monthly {
		from = resets.AddDate(0, -1, 0)
	}
	return store.SpendCounter{Scope: scope, Owner: owner, Period: period, From: from, Until: resets}
}

// CapError is a reservation refused by a cap: which one, and when its period resets.
type CapError struct {
	Scope    string // "key" or "tenant"
	Owner    string
	Kind     string // Daily or Monthly
	Cap      money.Micros
	Spent    money.Micros // what the period held when refused; -1 if unknown
	Amount   money.Micros // the reservation refused
	Currency string
	Resets   time.Time
}

func (e *CapError) Error() string {
	return fmt.Sprintf("%s %s %s cap %s: %v", e.Scope, e.Owner, e.Kind, e.Cap, store.ErrSpendCap)
}

// Is makes errors.Is(err, store.ErrSpendCap) true.
func (e *CapError) Is(target error) bool { return target == store.ErrSpendCap }

// APIError is the client's answer: 402 spend_cap_exceeded naming the cap and its reset.
func (e *CapError) APIError() *apierr.Error {
	whose := "this API key's"
	if e.Scope == "tenant" {
		whose = "this account's"
	}
	period := "UTC day"
	if e.Kind == Monthly {
		period = "UTC month"
	}
	spent := ""
	if e.Spent >= 0 {
		spent = fmt.Sprintf(" (%s %s spent or reserved so far)", e.Spent, e.Currency)
	}
	return &apierr.Error{Kind: apierr.KindInsufficientBalance, Code: CodeSpendCap, Err: e,
		Message: fmt.Sprintf("This request's reservation of %s %s would take %s spending over its %s spend cap of %s %s for the %s%s. The cap resets at %s.",
			e.Amount, e.Currency, whose, e.Kind, e.Cap, e.Currency, period, spent, e.Resets.Format(time.RFC3339))}
}

// AsCapError returns the client's answer for a refusal by a spend cap in err's chain.
func AsCapError(err error) (*apierr.Error, bool) {
	var ce *CapError
	if errors.As(err, &ce) {
		return ce.APIError(), true
	}
	return nil, false
}

// IsCapRefusal reports whether err is a reservation refused by a spend cap.
func IsCapRefusal(err error) bool { return errors.Is(err, store.ErrSpendCap) }

type capped struct {
	store.CappedCounter
	kind   string
	resets time.Time
}

// capCounters lists the counters a reservation of c at at must fit: the tenant's, then the
// key's, daily then monthly.
func capCounters(c keys.Caller, at time.Time) []capped {
	var out []capped
	add := func(scope, owner string, caps store.Caps) {
		for _, p := range []struct {
			kind string
			cap  money.Cap
		}{{Daily, caps.Daily}, {Monthly, caps.Monthly}} {
			// A cap of 0 is counted like any other: it admits only a reservation of 0.
			amount, ok := p.cap.Get()
			if !ok {
				continue
			}
			_, resets := PeriodOf(p.kind, at)
			out = append(out, capped{CappedCounter: store.CappedCounter{
				SpendCounter: counterOf(scope, owner, p.kind, at), Cap: amount},
				kind: p.kind, resets: resets})
		}
	}
	if c.Tenant != nil {
		d, m := c.Tenant.SpendCaps.Amounts()
		add("tenant", c.Tenant.ID, store.Caps{Daily: d, Monthly: m})
	}
	add("key", c.Key.ID, c.Key.Caps)
	return out
}

// holdCaps counts a reservation against the caller's caps, refusing it with a *CapError.
func holdCaps(ctx context.Context, tx store.Tx, c keys.Caller, ref string, amount money.Micros, at time.Time) error {
	cs := capCounters(c, at)
	if len(cs) == 0 {
		return nil
	}
	h := store.SpendHold{Ref: ref, Amount: amount}
	for _, x := range cs {
		h.Counters = append(h.Counters, x.CappedCounter)
	}
	err := tx.HoldSpend(ctx, h)
	var se *store.SpendCapError
	if errors.As(err, &se) && se.Index >= 0 && se.Index < len(cs) {
		x := cs[se.Index]
		currency := ""
		if c.Tenant != nil {
			currency = c.Tenant.Currency
		}
		return &CapError{Scope: x.Scope, Owner: x.Owner, Kind: x.kind, Cap: x.Cap, Spent: se.Spent,
			Amount: amount, Currency: currency, Resets: x.resets}
	}
	return err
}

// SpentNow reads what a key or a tenant spent in the current day and month; a period no cap
// has counted yet reads what its records spent.
func SpentNow(ctx context.Context, s interface {
	Spent(context.Context, []store.SpendCounter) ([]money.Micros, error)
}, scope, owner string, at time.Time) (day, month money.Micros, err error) {
	v, err := s.Spent(ctx, []store.SpendCounter{counterOf(scope, owner, Daily, at), counterOf(scope, owner, Monthly, at)})
	if err != nil {
		return 0, 0, err
	}
	return v[0], v[1], nil
}
