package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"os/user"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/money"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/webhook"
)

func nowUTC() time.Time { return time.Now().UTC() }

const adminUsage = `Operator commands (they work on the same database as serve):

  mediagen admin tenant list
  mediagen admin token create --name N --role owner|operator|viewer [--expires DURATION]
  mediagen admin token list
  mediagen admin token revoke ID
  mediagen admin audit [--actor ID] [--action A] [--target [TYPE:]ID] [--since TIME] [--limit N]
  mediagen admin key create --tenant T [--name N] [--unlimited] [--expires 720h|2027-01-01T00:00:00Z]
                            [--daily-cap 5.00] [--monthly-cap 100] [--credit 10]
  mediagen admin key list [--tenant T]
  mediagen admin key get ID
  mediagen admin key revoke ID
  mediagen admin key rotate ID [--grace 24h]
  mediagen admin key update ID [--name N] [--expires D|T | --no-expiry] [--daily-cap A|none] [--monthly-cap A|none]
  mediagen admin credit --key ID --amount 12.50 [--note TEXT]
  mediagen admin debit --key ID --amount 2.50 --note TEXT
  mediagen admin blob init [--blob s3://BUCKET?endpoint=HOST:PORT]
  mediagen admin ledger check
  mediagen admin catalog check FILE [--public-url URL] [--role R] [--blob B]
  mediagen admin catalog reload [--wait 30s]
  mediagen admin catalog status
  mediagen admin asset-group grant --tenant T [--name N] [--description D] [--id ID]
  mediagen admin asset-group revoke ID
  mediagen admin asset-group list [--tenant T]
  mediagen admin upstream list
  mediagen admin upstream check NAME
  mediagen admin upstream excess [--upstream NAME] [--ref ID] [--limit N]
  mediagen admin usage --from DATE [--to DATE] [--group-by tenant,key,alias,route,upstream,day|hour]
                       [--tenant T] [--key ID] [--format table|json|csv]
  mediagen admin usage rebuild
  mediagen admin task show ID [--json]
  mediagen admin task search [--tenant T] [--key ID] [--status S] [--alias A] [--route R]
                             [--upstream-job JOB] [--since TIME] [--until TIME] [--limit N] [--after CURSOR]
  mediagen admin speech show ID [--json]
  mediagen admin speech search [--tenant T] [--key ID] [--status S] [--alias A] [--since TIME] [--until TIME] …
  mediagen admin asset show ID [--json]
  mediagen admin asset search [--tenant T] [--key ID] [--group G] [--status S] [--since TIME] [--until TIME] …
  mediagen admin webhook list --tenant T
  mediagen admin webhook disable ENDPOINT
  mediagen admin webhook enable ENDPOINT
  mediagen admin webhook deliveries ENDPOINT [--status S] [--event-type T] [--event-id ID] [--limit N]
  mediagen admin webhook redeliver ENDPOINT DELIVERY

Every command also takes --db, --data-dir and --catalog (and their MEDIAGEN_* variables).
The commands work on the database directly, so they are for the people who hold it (owners):
each write is audited as "cli" with the OS user ($USER); the admin API (docs/admin.md) is the
way to give others narrower access.`

// adminEnv is what an admin command has open.
type adminEnv struct {
	cfg     Config
	db      *sqldb.DB
	catalog *catalog.Catalog
	stdout  io.Writer
	getenv  func(string) string // where remote upstreams' keys are read from
	tls     *tls.Config         // roots for remote upstreams (nil: the system's; tests: a fake's)
	// svc is the operator plane's one implementation of every write (internal/admin), and
	// actor who the command's writes are audited as.
	svc   *opadmin.Service
	actor opadmin.Actor
}

type adminCmd struct {
	path  string // "key create"
	flags func(fs *flag.FlagSet) func(env *adminEnv, args []string) error
	nodb  bool
}

func adminCommands() []adminCmd {
	return append([]adminCmd{
		{path: "tenant list", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, _ []string) error { return e.tenantList(context.Background()) }
		}},
		{path: "key create", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			tenant := fs.String("tenant", "", "tenant id (required)")
			name := fs.String("name", "", "a label for the key")
			unlimited := fs.Bool("unlimited", false, "the key may spend without a balance")
			opts := keyCreateFlags(fs)
			return func(e *adminEnv, _ []string) error {
				return e.keyCreate(context.Background(), *tenant, *name, *unlimited, opts)
			}
		}},
		{path: "key list", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			tenant := fs.String("tenant", "", "only this tenant's keys")
			return func(e *adminEnv, _ []string) error { return e.keyList(context.Background(), *tenant) }
		}},
		{path: "key get", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"key get: give exactly one key id"}
				}
				return e.keyGet(context.Background(), args[0])
			}
		}},
		{path: "key revoke", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"key revoke: give exactly one key id"}
				}
				return e.keyRevoke(context.Background(), args[0])
			}
		}},
		{path: "credit", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			key := fs.String("key", "", "key id (required)")
			amount := fs.String("amount", "", "amount in currency units, e.g. 12.50 (required)")
			note := fs.String("note", "", "a note stored with the ledger transaction (required with --force)")
			force := fs.Bool("force", false, "credit a revoked key anyway (needs --note; audited)")
			return func(e *adminEnv, _ []string) error {
				return e.credit(context.Background(), *key, *amount, *note, *force)
			}
		}},
		{path: "ledger check", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, _ []string) error {
				// After a restore or an incident: every transaction sums to zero and every
				// balance is the sum of its entries.
				if err := e.db.CheckLedger(context.Background()); err != nil {
					return fmt.Errorf("ledger check: %w", err)
				}
				fmt.Fprintln(e.stdout, "ledger: OK")
				return nil
			}
		}},
	}, append(append(append(append(append(append(append(append(adminAssetCommands(), adminUpstreamCommands()...), adminTokenCommands()...), adminCatalogCommands()...), adminUsageCommands()...), adminSupportCommands()...), adminKeyCommands()...), adminBlobCommands()...), adminWebhookCommands()...)...)
}

func runAdmin(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runAdminTLS(ctx, args, getenv, stdout, stderr, nil)
}

// runAdminTLS is runAdmin with the TLS roots remote upstream checks trust (nil: the system's).
func runAdminTLS(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer, roots *tls.Config) error {
	for _, cmd := range adminCommands() {
		words := strings.Fields(cmd.path)
		if len(args) < len(words) || strings.Join(args[:len(words)], " ") != cmd.path {
			continue
		}
		fs := flag.NewFlagSet("admin "+cmd.path, flag.ContinueOnError)
		withUsage(fs, adminCommandUsage(cmd.path))
		env := &adminEnv{stdout: stdout, getenv: getenv, tls: roots}
		env.cfg.register(fs, getenv, false)
		do := cmd.flags(fs)
		positional, err := parseFlags(fs, args[len(words):], stdout, stderr, parseInterspersed)
		if err != nil {
			return err
		}
		if err := env.cfg.validate(); err != nil {
			return usageError{err.Error()}
		}
		if !cmd.nodb {
			var err error
			if env.catalog, _, err = env.cfg.loadCatalog(); err != nil {
				return err
			}
			if env.db, err = openStore(ctx, env.cfg.DB); err != nil {
				return err
			}
			defer env.db.Close()
			cat := env.catalog
			hooks := &webhook.Service{Store: env.db, Catalogs: catalog.Static(cat)}
			env.svc = opadmin.New(opadmin.Config{Store: env.db, Catalog: func() *catalog.Catalog { return cat }, Webhooks: hooks})
			env.actor = opadmin.CLIActor(osUser(getenv))
		}
		return do(env, positional)
	}
	if slices.ContainsFunc(args, isHelpArg) { // "admin help", "admin key --help"
		fmt.Fprintln(stdout, adminUsage)
		return nil
	}
	fmt.Fprintln(stderr, adminUsage)
	if len(args) == 0 {
		return usageError{"admin: no command given"}
	}
	return usageError{fmt.Sprintf("admin: unknown command %q", strings.Join(args, " "))}
}

func (e *adminEnv) tenantList(ctx context.Context) error {
	keyList, err := e.db.Keys(ctx, "")
	if err != nil {
		return err
	}
	count := map[string]int{}
	for _, k := range keyList {
		count[k.TenantID]++
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TENANT\tNAME\tCURRENCY\tALIASES\tKEYS")
	for _, t := range e.catalog.Tenants {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\n", t.ID, t.Name, t.Currency, len(t.Aliases), count[t.ID])
	}
	return tw.Flush()
}

func (e *adminEnv) keyCreate(ctx context.Context, tenantID, name string, unlimited bool, opts *keyCreateOpts) error {
	if tenantID == "" {
		return usageError{"key create: --tenant is required"}
	}
	in, err := opts.input(e.svc.Now())
	if err != nil {
		return err
	}
	in.Tenant, in.Name, in.Unlimited = tenantID, name, unlimited
	k, err := e.svc.CreateKey(ctx, e.actor, in)
	if err != nil {
		return cliError("key create", err)
	}
	fmt.Fprintf(e.stdout, "key id:  %s\ntenant:  %s\nsecret:  %s\n(the secret is shown only now; it is stored as a hash)\n", k.ID, k.Tenant, k.Secret)
	printKeyTerms(e.stdout, k.Key, k.Balance.Currency)
	if c := k.InitialCredit; c != nil {
		fmt.Fprintf(e.stdout, "credit:  %s %s\n", c.Amount, c.Currency)
	}
	if t, ok := e.catalog.Tenant(k.Tenant); ok {
		// The base URL to hand over with the key: the tenant's own address, where it has one.
		if a := t.AddressFor(""); a != "" {
			fmt.Fprintf(e.stdout, "address: %s (the tenant's base URL; console %s/console/)\n", a, a)
		}
	}
	return nil
}

func (e *adminEnv) keyList(ctx context.Context, tenantID string) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tTENANT\tNAME\tPREFIX\tSTATE\tUNLIMITED\tAVAILABLE\tUSED\tOVERAGE\tEXPIRES\tDAILY CAP\tMONTHLY CAP\tCREATED\tREVOKED")
	now := e.svc.Now()
	f := opadmin.KeyFilter{Tenant: tenantID}
	for {
		page, err := e.svc.Keys(ctx, e.actor, f)
		if err != nil {
			return cliError("key list", err)
		}
		for _, k := range page.Data {
			revoked := "-"
			if !k.RevokedAt.IsZero() {
				revoked = k.RevokedAt.Format(time.RFC3339)
			}
			// Overage: charged above reservations (docs/billing.md). Every charge is bounded by
			// its reservation, so non-zero only after a bug (logged as an error when it happened).
			b := k.Balance
			daily, monthly := capColumns(k)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%v\t%s %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", k.ID, k.Tenant, k.Name, k.Prefix, keyState(k, now), k.Unlimited,
				b.Available, b.Currency, b.Used, b.Overage, timeOrDash(k.ExpiresAt), daily, monthly, k.CreatedAt.Format(time.RFC3339), revoked)
		}
		if !page.HasMore {
			break
		}
		f.Cursor = page.NextCursor
	}
	return tw.Flush()
}

func (e *adminEnv) keyGet(ctx context.Context, id string) error {
	k, err := e.svc.Key(ctx, e.actor, id)
	if err != nil {
		return cliError("key get", err)
	}
	state := keyState(k, e.svc.Now())
	if !k.RevokedAt.IsZero() {
		state += " at " + k.RevokedAt.Format(time.RFC3339)
	}
	b := k.Balance
	fmt.Fprintf(e.stdout, "key id:     %s\ntenant:     %s\nname:       %s\nprefix:     %s…\nunlimited:  %v\nstate:      %s\ncreated:    %s\navailable:  %s %s\nreserved:   %s\nused:       %s\noverage:    %s\n",
		k.ID, k.Tenant, k.Name, k.Prefix, k.Unlimited, state, k.CreatedAt.Format(time.RFC3339), b.Available, b.Currency, b.Reserved, b.Used, b.Overage)
	printKeyLifecycle(e.stdout, k)
	return nil
}

func (e *adminEnv) keyRevoke(ctx context.Context, id string) error {
	if _, err := e.svc.RevokeKey(ctx, e.actor, id); err != nil {
		return cliError("key revoke", err)
	}
	fmt.Fprintf(e.stdout, "revoked %s\n", id)
	return nil
}

func (e *adminEnv) credit(ctx context.Context, keyID, amountText, note string, force bool) error {
	if keyID == "" || amountText == "" {
		return usageError{"credit: --key and --amount are required"}
	}
	if force && note == "" {
		return usageError{"credit: --force needs --note saying why (it is kept in the audit log)"}
	}
	amount, err := money.Parse(amountText)
	if err != nil || amount <= 0 {
		return usageError{fmt.Sprintf("credit: --amount %q must be a positive decimal with at most 6 decimal places", amountText)}
	}
	c, err := e.svc.Credit(ctx, e.actor, keyID, opadmin.CreditInput{Amount: amount, Note: note, Force: force})
	if err != nil {
		return cliError("credit", err)
	}
	after, err := e.db.Balance(ctx, keyID)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "credited %s %s to %s (ledger transaction %s); available now %s %s\n",
		c.Amount, c.Currency, c.KeyID, c.TransactionID, after.Available, after.Currency)
	return nil
}

// cliError words a service refusal for the terminal: a client mistake (a 4xx of the API) is a
// usage error naming the field; anything else is returned as it is.
func cliError(cmd string, err error) error {
	var e *apierr.Error
	if !errors.As(err, &e) || e.Kind == apierr.KindInternal {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	if e.Param != "" {
		return usageError{fmt.Sprintf("%s: --%s: %s", cmd, strings.ReplaceAll(e.Param, "_", "-"), e.Message)}
	}
	return fmt.Errorf("%s: %s", cmd, e.Message)
}

// parseInterspersed parses flags that may come before or after positional arguments
// ("key revoke ID --db …"), which the flag package alone stops at.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		positional = append(positional, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// asAPIErr returns the *apierr.Error in err's chain, or nil.
func asAPIErr(err error) *apierr.Error {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e
	}
	return nil
}

// osUser names the person running an admin command for the audit log: $USER, then $LOGNAME,
// then the account the process runs as (a shell started by su or a container may set
// neither variable).
func osUser(getenv func(string) string) string {
	for _, v := range []string{"USER", "LOGNAME"} {
		if u := getenv(v); u != "" {
			return u
		}
	}
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return ""
}
