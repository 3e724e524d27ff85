package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"time"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/keys"
	"mediagen/internal/money"
)

// The key lifecycle on the command line (docs/admin.md, "Keys: expiry, rotation, caps"): these
// commands parse the operator's flags and call admin.Service, the one implementation the admin
// API calls too, so both are validated and audited alike.

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
			daily := fs.String("daily-cap", "", "spend cap per UTC day, e.g. 5.00 (0: nothing may be spent; none: no cap)")
			monthly := fs.String("monthly-cap", "", "spend cap per UTC month, e.g. 100 (0: nothing may be spent; none: no cap)")
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"key update: give exactly one key id"}
				}
				set := map[string]bool{}
				fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
				var in opadmin.KeyUpdate
				if set["name"] {
					in.Name = name
				}
				switch {
				case set["expires"] && *noExpiry:
					return usageError{"key update: give --expires or --no-expiry, not both"}
				case set["expires"]:
					at, err := keys.ParseExpiry(*expires, e.svc.Now())
					if err != nil {
						return usageError{fmt.Sprintf("key update: --expires %q: %v", *expires, err)}
					}
					in.ExpiresAt = &at
				case *noExpiry:
					in.ExpiresAt = &time.Time{}
				}
				for _, f := range []struct {
					name string
					v    *string
					to   **money.Cap
				}{{"daily-cap", daily, &in.Daily}, {"monthly-cap", monthly, &in.Monthly}} {
					if !set[f.name] {
						continue
					}
					m, err := keys.ParseCap(*f.v)
					if err != nil {
						return usageError{fmt.Sprintf("key update: --%s %q: %v", f.name, *f.v, err)}
					}
					*f.to = &m
				}
				if in == (opadmin.KeyUpdate{}) {
					return usageError{"key update: give at least one of --name, --expires, --no-expiry, --daily-cap, --monthly-cap"}
				}
				return e.keyUpdate(context.Background(), args[0], in)
			}
		}},
		{path: "debit", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			key := fs.String("key", "", "key id (required)")
			amount := fs.String("amount", "", "amount in currency units, e.g. 2.50 (required)")
			note := fs.String("note", "", "why: stored with the ledger transaction (required)")
			force := fs.Bool("force", false, "debit a revoked key anyway (audited)")
			return func(e *adminEnv, _ []string) error {
				return e.debit(context.Background(), *key, *amount, *note, *force)
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
		daily:   fs.String("daily-cap", "", "spend cap per UTC day, e.g. 5.00 (0: nothing may be spent; none or absent: no cap)"),
		monthly: fs.String("monthly-cap", "", "spend cap per UTC month, e.g. 100 (0: nothing may be spent; none or absent: no cap)"),
		credit:  fs.String("credit", "", "initial credit, e.g. 10, in the same transaction as the key"),
	}
}

// input reads the flags into a key input (tenant, name and unlimited left to the caller).
func (o *keyCreateOpts) input(now time.Time) (opadmin.KeyInput, error) {
	var in opadmin.KeyInput
	if *o.expires != "" {
		at, err := keys.ParseExpiry(*o.expires, now)
		if err != nil {
			return in, usageError{fmt.Sprintf("key create: --expires %q: %v", *o.expires, err)}
		}
		in.ExpiresAt = at
	}
	for _, f := range []struct {
		name string
		v    *string
		to   *money.Cap
	}{{"daily-cap", o.daily, &in.Caps.Daily}, {"monthly-cap", o.monthly, &in.Caps.Monthly}} {
		if *f.v == "" {
			continue
		}
		m, err := keys.ParseCap(*f.v)
		if err != nil {
			return in, usageError{fmt.Sprintf("key create: --%s %q: %v", f.name, *f.v, err)}
		}
		*f.to = m
	}
	if *o.credit != "" {
		m, err := money.Parse(*o.credit)
		if err != nil || m <= 0 {
			return in, usageError{fmt.Sprintf("key create: --credit %q must be a positive decimal with at most 6 decimal places", *o.credit)}
		}
		in.Credit = m
	}
	return in, nil
}

// printKeyTerms prints a key's expiry and caps, where it has them.
func printKeyTerms(w io.Writer, k opadmin.Key, currency string) {
	if !k.ExpiresAt.IsZero() {
		fmt.Fprintf(w, "expires: %s\n", k.ExpiresAt.Format(time.RFC3339))
	}
	if c := k.Caps; c != nil && c.Daily != nil {
		fmt.Fprintf(w, "daily cap:   %s %s per UTC day\n", *c.Daily, currency)
	}
	if c := k.Caps; c != nil && c.Monthly != nil {
		fmt.Fprintf(w, "monthly cap: %s %s per UTC month\n", *c.Monthly, currency)
	}
}

// printKeyLifecycle prints what key get shows of a key's lifecycle: expiry, last rotation and
// the old secret's grace, caps with the current periods' spending.
func printKeyLifecycle(w io.Writer, k opadmin.Key) {
	fmt.Fprintf(w, "expires:    %s\n", timeOrDash(k.ExpiresAt))
	if !k.RotatedAt.IsZero() {
		fmt.Fprintf(w, "rotated:    %s (previous secret valid until %s)\n", k.RotatedAt.Format(time.RFC3339), timeOrDash(k.PreviousSecretValidUntil))
	}
	daily, monthly := capColumns(k)
	fmt.Fprintf(w, "daily cap:  %s\nmonthly cap: %s\n", daily, monthly)
}

// keyState is a key's state as key list shows it.
func keyState(k opadmin.Key, now time.Time) string {
	switch {
	case !k.RevokedAt.IsZero():
		return "revoked"
	case !k.ExpiresAt.IsZero() && !now.Before(k.ExpiresAt):
		return "expired"
	case now.Before(k.PreviousSecretValidUntil):
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

// capColumns shows each cap with what the current period has spent against it:
// "5.00 (1.25 spent)".
func capColumns(k opadmin.Key) (daily, monthly string) {
	daily, monthly = "-", "-"
	c := k.Caps
	if c == nil {
		return daily, monthly
	}
	spent := func(v *money.Micros) money.Micros {
		if v == nil {
			return 0
		}
		return *v
	}
	if c.Daily != nil {
		daily = fmt.Sprintf("%s (%s spent)", *c.Daily, spent(c.SpentToday))
	}
	if c.Monthly != nil {
		monthly = fmt.Sprintf("%s (%s spent)", *c.Monthly, spent(c.SpentInMonth))
	}
	return daily, monthly
}

func (e *adminEnv) keyRotate(ctx context.Context, id, graceText string) error {
	grace, err := keys.ParseGrace(graceText)
	if err != nil {
		return usageError{fmt.Sprintf("key rotate: --grace %q: %v", graceText, err)}
	}
	k, err := e.svc.RotateKey(ctx, e.actor, id, grace)
	if err != nil {
		return cliError("key rotate", err)
	}
	fmt.Fprintf(e.stdout, "key id:  %s\nsecret:  %s\n(the new secret is shown only now; it is stored as a hash)\n", k.ID, k.Secret)
	if grace > 0 {
		fmt.Fprintf(e.stdout, "the previous secret works until %s\n", k.PreviousSecretValidUntil.Format(time.RFC3339))
	} else {
		fmt.Fprintln(e.stdout, "the previous secret no longer works")
	}
	return nil
}

func (e *adminEnv) keyUpdate(ctx context.Context, id string, in opadmin.KeyUpdate) error {
	k, err := e.svc.UpdateKey(ctx, e.actor, id, in)
	if err != nil {
		return cliError("key update", err)
	}
	b, err := e.db.Balance(ctx, id)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "updated %s (name %q, expires %s)\n", k.ID, k.Name, timeOrDash(k.ExpiresAt))
	printKeyTerms(e.stdout, k, b.Currency)
	return nil
}

func (e *adminEnv) debit(ctx context.Context, keyID, amountText, note string, force bool) error {
	if keyID == "" || amountText == "" || note == "" {
		return usageError{"debit: --key, --amount and --note are required (a correction says why)"}
	}
	amount, err := money.Parse(amountText)
	if err != nil || amount <= 0 {
		return usageError{fmt.Sprintf("debit: --amount %q must be a positive decimal with at most 6 decimal places", amountText)}
	}
	d, err := e.svc.Debit(ctx, e.actor, keyID, opadmin.DebitInput{Amount: amount, Note: note, Force: force})
	if err != nil {
		return cliError("debit", err)
	}
	after, err := e.db.Balance(ctx, keyID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "debited %s %s from %s (ledger transaction %s); available now %s %s\n",
		d.Amount, d.Currency, d.KeyID, d.TransactionID, after.Available, after.Currency)
	return nil
}
