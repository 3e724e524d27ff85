package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/store/sqldb"
)

// The key lifecycle on the command line (docs/admin.md, "Keys: expiry, rotation, caps"): the
// rules are internal/keys' and internal/billing's; these commands parse, run them in one
// transaction and print.

func adminKeyCommands() []adminCmd {
	return []adminCmd{
		{path: "key rotate", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			grace := fs.String("grace", "0", "how long the replaced secret keeps working, e.g. 24h or 7d (0: it stops at once)")
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"key rotate: give exactly one key id"}
				}
				return e.keyRotate(context.Background(), args[0], *grace)
			}
		}},
		{path: "key update", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			name := fs.String("name", "", "a new label")
			expires := fs.String("expires", "", "a new expiry: a duration from now (720h, 30d) or a time (2027-01-01T00:00:00Z)")
			noExpiry := fs.Bool("no-expiry", false, "remove the expiry")
			daily := fs.String("daily-cap", "", "spend cap per UTC day, e.g. 5.00 (0 or none: no cap)")
			monthly := fs.String("monthly-cap", "", "spend cap per UTC month, e.g. 100 (0 or none: no cap)")
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"key update: give exactly one key id"}
				}
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				now := nowUTC()
				var c keys.Changes
				if set["name"] {
					c.Name = name
				}
				switch {
				case set["expires"] && *noExpiry:
					return usageError{"key update: give --expires or --no-expiry, not both"}
				case set["expires"]:
					at, err := keys.ParseExpiry(*expires, now)
					if err != nil {
						return usageError{fmt.Sprintf("key update: --expires %q: %v", *expires, err)}
					}
					c.ExpiresAt = &at
				case *noExpiry:
					c.ExpiresAt = &time.Time{}
				}
				for _, f := range []struct {
					name string
					v    *string
					to   **money.Micros
				}{{"daily-cap", daily, &c.Daily}, {"monthly-cap", monthly, &c.Monthly}} {
					if !set[f.name] {
						continue
					}
					m, err := keys.ParseCap(*f.v)
					if err != nil {
						return usageError{fmt.Sprintf("key update: --%s %q: %v", f.name, *f.v, err)}
					}
					*f.to = &m
				}
				return e.keyUpdate(context.Background(), args[0], c, now)
			}
		}},
		{path: "debit", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			key := fs.String("key", "", "key id (required)")
			amount := fs.String("amount", "", "amount in currency units, e.g. 2.50 (required)")
			note := fs.String("note", "", "why: stored with the ledger transaction (required)")
			return func(e *adminEnv, _ []string) error {
				return e.debit(context.Background(), *key, *amount, *note)
			}
		}},
	}
}

// keyCreateOpts are key create's lifecycle flags.
type keyCreateOpts struct {
	expires, daily, monthly, credit *string
}

func keyCreateFlags(fs *flag.FlagSet) *keyCreateOpts {
	return &keyCreateOpts{
		expires: fs.String("expires", "", "expiry: a duration from now (720h, 30d) or a time (2027-01-01T00:00:00Z); default never"),
		daily:   fs.String("daily-cap", "", "spend cap per UTC day, e.g. 5.00"),
		monthly: fs.String("monthly-cap", "", "spend cap per UTC month, e.g. 100"),
		credit:  fs.String("credit", "", "initial credit, e.g. 10, in the same transaction as the key"),
	}
}

// spec reads the flags into a key spec (tenant, name and unlimited left to the caller) and the
// initial credit.
func (o *keyCreateOpts) spec(now time.Time) (keys.Spec, money.Micros, error) {
	var spec keys.Spec
	if *o.expires != "" {
		at, err := keys.ParseExpiry(*o.expires, now)
		if err != nil {
			return spec, 0, usageError{fmt.Sprintf("key create: --expires %q: %v", *o.expires, err)}
		}
		spec.ExpiresAt = at
	}
	for _, f := range []struct {
		name string
		v    *string
		to   *money.Micros
	}{{"daily-cap", o.daily, &spec.Caps.Daily}, {"monthly-cap", o.monthly, &spec.Caps.Monthly}} {
		if *f.v == "" {
			continue
		}
		m, err := keys.ParseCap(*f.v)
		if err != nil {
			return spec, 0, usageError{fmt.Sprintf("key create: --%s %q: %v", f.name, *f.v, err)}
		}
		*f.to = m
	}
	var credit money.Micros
	if *o.credit != "" {
		m, err := money.Parse(*o.credit)
		if err != nil || m <= 0 {
			return spec, 0, usageError{fmt.Sprintf("key create: --credit %q must be a positive decimal with at most 6 decimal places", *o.credit)}
		}
		credit = m
	}
	return spec, credit, nil
}

// printKeyTerms prints a key's expiry and caps, where it has them.
func printKeyTerms(w io.Writer, k store.Key, currency string) {
	if !k.ExpiresAt.IsZero() {
		fmt.Fprintf(w, "expires: %s\n", k.ExpiresAt.Format(time.RFC3339))
	}
	if k.Caps.Daily > 0 {
		fmt.Fprintf(w, "daily cap:   %s %s per UTC day\n", k.Caps.Daily, currency)
	}
	if k.Caps.Monthly > 0 {
		fmt.Fprintf(w, "monthly cap: %s %s per UTC month\n", k.Caps.Monthly, currency)
	}
}

// keyState is a key's state as key list shows it.
func keyState(k store.Key, now time.Time) string {
	switch {
	case k.Revoked():
		return "revoked"
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return "expired"
	case len(k.PrevHash) > 0 && now.Before(k.PrevValidUntil):
		return "rotating" // the replaced secret is still in its grace period
	}
	return "active"
}

func timeOrDash(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339)
}

// capColumns shows each cap with what the current period has spent against it, for a key
// with caps: "5.00 (1.25 spent)".
func capColumns(ctx context.Context, db *sqldb.DB, k store.Key, currency string, now time.Time) (daily, monthly string, err error) {
	daily, monthly = "-", "-"
	if !k.Caps.Any() {
		return daily, monthly, nil
	}
	d, m, err := billing.SpentNow(ctx, db, "key", k.ID, now)
	if err != nil {
		return "", "", err
	}
	if k.Caps.Daily > 0 {
		daily = fmt.Sprintf("%s (%s spent)", k.Caps.Daily, d)
	}
	if k.Caps.Monthly > 0 {
		monthly = fmt.Sprintf("%s (%s spent)", k.Caps.Monthly, m)
	}
	return daily, monthly, nil
}

func (e *adminEnv) keyRotate(ctx context.Context, id, graceText string) error {
	grace, err := keys.ParseGrace(graceText)
	if err != nil {
		return usageError{fmt.Sprintf("key rotate: --grace %q: %v", graceText, err)}
	}
	now := nowUTC()
	var secret string
	var after store.Key
	err = e.db.Transact(ctx, func(tx store.Tx) error {
		var err error
		secret, _, after, err = keys.Rotate(ctx, tx, id, grace, now)
		return err
	})
	switch {
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("key rotate: no key with id %q", id)
	case errors.Is(err, keys.ErrRevoked):
		return fmt.Errorf("key rotate: key %s is revoked", id)
	case err != nil:
		return err
	}
	fmt.Fprintf(e.stdout, "key id:  %s\nsecret:  %s\n(the new secret is shown only now; it is stored as a hash)\n", after.ID, secret)
	if grace > 0 {
		fmt.Fprintf(e.stdout, "the previous secret works until %s\n", after.PrevValidUntil.Format(time.RFC3339))
	} else {
		fmt.Fprintln(e.stdout, "the previous secret no longer works")
	}
	return nil
}

func (e *adminEnv) keyUpdate(ctx context.Context, id string, c keys.Changes, now time.Time) error {
	var after store.Key
	err := e.db.Transact(ctx, func(tx store.Tx) error {
		var err error
		_, after, err = keys.Update(ctx, tx, id, c, now)
		return err
	})
	switch {
	case errors.Is(err, keys.ErrNoSuchField):
		return usageError{"key update: give at least one of --name, --expires, --no-expiry, --daily-cap, --monthly-cap"}
	case errors.Is(err, store.ErrNotFound):
		return fmt.Errorf("key update: no key with id %q", id)
	case errors.Is(err, keys.ErrRevoked):
		return fmt.Errorf("key update: key %s is revoked", id)
	case err != nil:
		return err
	}
	b, err := e.db.Balance(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "updated %s (name %q, expires %s)\n", after.ID, after.Name, timeOrDash(after.ExpiresAt))
	printKeyTerms(e.stdout, after, b.Currency)
	return nil
}

func (e *adminEnv) debit(ctx context.Context, keyID, amountText, note string) error {
	if keyID == "" || amountText == "" || note == "" {
		return usageError{"debit: --key, --amount and --note are required (a correction says why)"}
	}
	amount, err := money.Parse(amountText)
	if err != nil || amount <= 0 {
		return usageError{fmt.Sprintf("debit: --amount %q must be a positive decimal with at most 6 decimal places", amountText)}
	}
	k, err := e.db.Key(ctx, keyID)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("debit: no key with id %q", keyID)
	}
	if err != nil {
		return err
	}
	b, err := e.db.Balance(ctx, k.ID)
	if err != nil {
		return err
	}
	var txn string
	err = e.db.Transact(ctx, func(tx store.Tx) error {
		txn, err = billing.Debit(ctx, tx, k, b.Currency, amount, note, nowUTC())
		return err
	})
	if errors.Is(err, billing.ErrBelowZero) {
		return fmt.Errorf("debit: %s %s is more than the %s %s available to key %s; a limited key is never taken below zero",
			amount, b.Currency, b.Available, b.Currency, k.ID)
	}
	if err != nil {
		return err
	}
	after, err := e.db.Balance(ctx, k.ID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "debited %s %s from %s (ledger transaction %s); available now %s %s\n",
		amount, b.Currency, k.ID, txn, after.Available, after.Currency)
	return nil
}
