package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	opadmin "mediagen/internal/admin"
)

// The operator commands of the admin API's tokens and of the audit log. `token create` is how
// the first owner token is made (docs/admin.md, "Bootstrapping").

func adminTokenCommands() []adminCmd {
	return []adminCmd{
		{path: "token create", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			name := fs.String("name", "", "who or what the token is for (required)")
			role := fs.String("role", "", "owner, operator or viewer (required)")
			expires := fs.Duration("expires", 0, "the token stops working after this long, e.g. 720h (default: never)")
			return func(e *adminEnv, _ []string) error {
				return e.tokenCreate(context.Background(), *name, *role, *expires)
			}
		}},
		{path: "token list", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, _ []string) error { return e.tokenList(context.Background()) }
		}},
		{path: "token revoke", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"token revoke: give exactly one token id"}
				}
				if _, err := e.svc.RevokeToken(context.Background(), e.actor, args[0]); err != nil {
					return cliError("token revoke", err)
				}
				fmt.Fprintf(e.stdout, "revoked admin token %s\n", args[0])
				return nil
			}
		}},
		{path: "audit", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			actor := fs.String("actor", "", "only actions of this token id (or \"cli\")")
			action := fs.String("action", "", "only this action, e.g. key.create")
			target := fs.String("target", "", "only actions on this target: ID or TYPE:ID (key:key_…)")
			since := fs.String("since", "", "only actions at or after this time: RFC 3339 (2026-11-25T10:00:00Z) or a duration back from now (24h)")
			limit := fs.Int("limit", 50, "at most this many entries, newest first (1-100)")
			return func(e *adminEnv, _ []string) error {
				return e.audit(context.Background(), *actor, *action, *target, *since, *limit)
			}
		}},
	}
}

func (e *adminEnv) tokenCreate(ctx context.Context, name, role string, expires time.Duration) error {
	if name == "" || role == "" {
		return usageError{"token create: --name and --role are required"}
	}
	t, err := e.svc.CreateToken(ctx, e.actor, opadmin.TokenInput{Name: name, Role: role, ExpiresIn: expires})
	if err != nil {
		return cliError("token create", cliParam(err, "expires_in", "expires"))
	}
	exp := "never"
	if !t.ExpiresAt.IsZero() {
		exp = t.ExpiresAt.Format(time.RFC3339)
	}
	fmt.Fprintf(e.stdout, "token id:  %s\nname:      %s\nrole:      %s\nexpires:   %s\nsecret:    %s\n(the secret is shown only now; it is stored as a hash)\n",
		t.ID, t.Name, t.Role, exp, t.Secret)
	return nil
}

func (e *adminEnv) tokenList(ctx context.Context) error {
	list, err := e.svc.Tokens(ctx, e.actor)
	if err != nil {
		return cliError("token list", err)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tROLE\tPREFIX\tSTATE\tCREATED BY\tCREATED\tEXPIRES")
	for _, t := range list.Data {
		exp := "-"
		if !t.ExpiresAt.IsZero() {
			exp = t.ExpiresAt.Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s…\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Role, t.Prefix, t.State, t.CreatedBy,
			t.CreatedAt.Format(time.RFC3339), exp)
	}
	return tw.Flush()
}

func (e *adminEnv) audit(ctx context.Context, actor, action, target, since string, limit int) error {
	f := opadmin.AuditFilter{Actor: actor, Action: action, Target: target, Limit: limit}
	if since != "" {
		if d, err := time.ParseDuration(since); err == nil && d > 0 {
			f.Since = e.svc.Now().Add(-d)
		} else if t, err := time.Parse(time.RFC3339, since); err == nil {
			f.Since = t
		} else {
			return usageError{fmt.Sprintf("audit: --since %q: want an RFC 3339 time or a duration such as 24h", since)}
		}
	}
	list, err := e.svc.Audit(ctx, e.actor, f)
	if err != nil {
		return cliError("audit", err)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIME\tACTOR\tVIA\tACTION\tTARGET\tCHANGE")
	for _, a := range list.Data {
		change := string(a.After)
		if len(a.Before) > 0 {
			change = string(a.Before) + " → " + change
		}
		fmt.Fprintf(tw, "%s\t%s (%s)\t%s\t%s\t%s:%s\t%s\n", a.CreatedAt.Format(time.RFC3339), a.Actor.Name, a.Actor.ID, a.Actor.Via,
			a.Action, a.Target.Type, a.Target.ID, strings.ReplaceAll(change, "\n", " "))
	}
	return tw.Flush()
}

// cliParam renames a field the API calls from to what the command's flag is called.
func cliParam(err error, from, to string) error {
	if ae := asAPIErr(err); ae != nil && ae.Param == from {
		c := *ae
		c.Param = to
		return &c
	}
	return err
}
