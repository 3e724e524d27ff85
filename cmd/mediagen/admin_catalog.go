package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/store"
)

// adminCatalogCommands are the operator commands about the catalog: check a file, reload it
// on every replica, and show the version each replica has.
func adminCatalogCommands() []adminCmd {
	return []adminCmd{
		{path: "catalog check", nodb: true, flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			publicURL := fs.String("public-url", "", "the --public-url serve will have (default: $MEDIAGEN_PUBLIC_URL)")
			role := fs.String("role", "", "the --role serve will have: all, api or worker (default: $MEDIAGEN_ROLE, else all)")
			blob := fs.String("blob", "", "the --blob serve will have (default: $MEDIAGEN_BLOB)")
			fileOnly := fs.Bool("file-only", false, "check the file alone, not what serve would need of this machine's environment (API keys, --public-url): for a machine without the secrets, such as CI")
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"catalog check: give exactly one file"}
				}
				serve := Config{PublicURL: *publicURL, Role: *role, Blob: *blob}
				for p, name := range map[*string]string{&serve.PublicURL: "public-url", &serve.Role: "role", &serve.Blob: "blob"} {
					if *p == "" {
						*p = e.getenv(envName(name))
					}
				}
				return e.catalogCheck(args[0], serve, !*fileOnly)
			}
		}},
		{path: "catalog reload", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			wait := fs.Duration("wait", 30*time.Second, "how long to wait for every running replica to report the reload")
			return func(e *adminEnv, _ []string) error { return e.catalogReload(context.Background(), *wait) }
		}},
		{path: "catalog status", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, _ []string) error {
				reps, err := e.db.CatalogReplicas(context.Background())
				if err != nil {
					return err
				}
				e.printReplicas(reps, 0, time.Now())
				return nil
			}
		}},
	}
}

// catalogCheck lists every problem of a catalog file at once: the file's own (syntax, types,
// unknown keys, rates, bindings) and what serve, configured as given, would need of its
// environment (API keys, --public-url).
func (e *adminEnv) catalogCheck(path string, serve Config, withEnv bool) error {
	data, err := catalog.ReadFile(path)
	if err != nil {
		return fmt.Errorf("catalog check: %w", err)
	}
	c, problems := catalog.Check(path, data)
	var list []string
	if problems != nil {
		list = problems.List
	}
	if c != nil && withEnv {
		list = append(list, serve.serveNeeds(c, e.getenv, serve.PublicURL != "")...)
	}
	if c != nil && len(c.Warnings()) > 0 {
		fmt.Fprintf(e.stdout, "%s: %d warning(s):\n", path, len(c.Warnings()))
		for _, w := range c.Warnings() {
			fmt.Fprintf(e.stdout, "  warning: %s\n", w)
		}
	}
	if len(list) > 0 {
		fmt.Fprintf(e.stdout, "%s: %d problem(s):\n", path, len(list))
		for _, p := range list {
			fmt.Fprintf(e.stdout, "  %s\n", p)
		}
		return fmt.Errorf("catalog check: %s has %d problem(s)", path, len(list))
	}
	aliases := 0
	for _, t := range c.Tenants {
		aliases += len(t.Aliases)
	}
	fmt.Fprintf(e.stdout, "%s: OK (%d tenants, %d aliases), version %s\n", path, len(c.Tenants), aliases, catalog.Hash(data))
	return nil
}

// catalogReload records a reload request, which every running replica notices within
// --catalog-poll, and waits until each has reported its outcome: the version it has, or the
// problems for which it refused the file (and kept its catalog).
func (e *adminEnv) catalogReload(ctx context.Context, wait time.Duration) error {
	req, err := e.svc.RequestCatalogReload(ctx, e.actor)
	if err != nil {
		return err
	}
	id := req.Request
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		now := time.Now()
		reps, err := e.db.CatalogReplicas(ctx)
		if err != nil {
			return err
		}
		pending, refused := 0, 0
		for _, r := range reps {
			switch {
			case now.Sub(r.HeartbeatAt) > catalogStale:
			case r.ReloadSeen < id:
				pending++
			case r.LastError != "":
				refused++
			}
		}
		if pending == 0 || !now.Before(deadline) {
			fmt.Fprintf(e.stdout, "reload request %d\n", id)
			e.printReplicas(reps, id, now)
			switch {
			case pending > 0:
				return fmt.Errorf("catalog reload: %d replica(s) did not report within %s", pending, wait)
			case refused > 0:
				return fmt.Errorf("catalog reload: %d replica(s) refused the catalog and keep the one in force", refused)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// printReplicas shows each replica's version; with a request id, its outcome of that request,
// and the problems of each refusal.
func (e *adminEnv) printReplicas(reps []store.CatalogReplica, id int64, now time.Time) {
	if len(reps) == 0 {
		fmt.Fprintln(e.stdout, "no replica has reported (serve records its catalog version when it starts)")
		return
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPLICA\tROLE\tHASH\tLOADED\tSTATE")
	var refusals []string
	for _, r := range reps {
		state := "ok"
		switch {
		case now.Sub(r.HeartbeatAt) > catalogStale:
			state = "stale (no heartbeat since " + r.HeartbeatAt.Format(time.RFC3339) + ")"
		case id > 0 && r.ReloadSeen < id:
			state = "pending"
		case r.LastError != "":
			state = "refused the last reload at " + r.ErrorAt.Format(time.RFC3339)
			refusals = append(refusals, r.ReplicaID+":\n  "+strings.ReplaceAll(r.LastError, "\n", "\n  "))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", r.ReplicaID, r.Role, r.Hash, r.LoadedAt.Format(time.RFC3339), state)
	}
	_ = tw.Flush()
	for _, r := range refusals {
		fmt.Fprintln(e.stdout, r)
	}
}
