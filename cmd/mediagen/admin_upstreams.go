package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"text/tabwriter"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider/vertex"
	"mediagen/internal/store"
)

// adminUpstreamCommands are the operator commands about upstream accounts.
func adminUpstreamCommands() []adminCmd {
	return []adminCmd{
		{path: "upstream list", nodb: true, flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, _ []string) error { return e.upstreamList() }
		}},
		{path: "upstream excess", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			upstream := fs.String("upstream", "", "only this account's records")
			ref := fs.String("ref", "", "only this task's or speech's records")
			limit := fs.Int("limit", 20, "list at most this many of the latest records (the totals cover all)")
			return func(e *adminEnv, _ []string) error {
				return e.upstreamExcess(context.Background(), store.ExcessFilter{Upstream: *upstream, Ref: *ref, Limit: *limit})
			}
		}},
		{path: "upstream check", nodb: true, flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"upstream check: give exactly one account name (mediagen admin upstream list shows them)"}
				}
				return e.upstreamCheck(context.Background(), args[0])
			}
		}},
	}
}

func (e *adminEnv) loadCatalogOnly() (*catalog.Catalog, error) {
	c, _, err := e.cfg.loadCatalog()
	return c, err
}

// upstreamList prints every account aliases may bind to, with the aliases bound to it (a
// production alias counts on both of its accounts, a routed alias on every account of its
// lists).
func (e *adminEnv) upstreamList() error {
	c, err := e.loadCatalogOnly()
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%-20s %-10s %s\n", "NAME", "KIND", "ALIASES")
	for _, acc := range c.Accounts() {
		n := 0
		for _, t := range c.Tenants {
			for _, a := range t.Aliases {
				uses := slices.Contains(a.Accounts(), catalog.Upstream(acc.Name))
				if a.Product == catalog.ProductProduction {
					uses = uses || slices.Contains(a.EnhancementAccounts(), catalog.Upstream(acc.Name))
				}
				if uses {
					n++
				}
			}
		}
		fmt.Fprintf(e.stdout, "%-20s %-10s %d\n", acc.Name, acc.Kind, n)
	}
	return nil
}

// upstreamExcess shows what upstream accounts did beyond requests, or below their measured
// results (docs/billing.md): the operator's, never charged to a tenant. First the totals per
// account, kind and currency, then the latest records.
func (e *adminEnv) upstreamExcess(ctx context.Context, f store.ExcessFilter) error {
	if f.Limit < 1 || f.Limit > maxExcessListed {
		return usageError{fmt.Sprintf("upstream excess: --limit must be within 1..%d", maxExcessListed)}
	}
	sums, err := e.db.UpstreamExcessSummary(ctx)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "UPSTREAM\tKIND\tRECORDS\tAMOUNT")
	for _, s := range sums {
		if f.Upstream != "" && s.Upstream != f.Upstream {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s %s\n", s.Upstream, s.Kind, s.Count, s.Amount, s.Currency)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	list, err := e.db.UpstreamExcess(ctx, f)
	if err != nil {
		return err
	}
	if len(list) == 0 {
		fmt.Fprintln(e.stdout, "no upstream excess recorded")
		return nil
	}
	fmt.Fprintln(e.stdout)
	tw = tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WHEN\tUPSTREAM\tROUTE\tREF\tKEY\tKIND\tCLAIMED\tCHARGED\tAMOUNT\tDETAIL")
	for _, r := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s %s\t%s\n", r.CreatedAt.Format(time.RFC3339), r.Upstream, r.Route, r.Ref,
			r.KeyID, r.Kind, r.Claimed, r.Charged, r.Amount, r.Currency, r.Detail)
	}
	return tw.Flush()
}

// maxExcessListed bounds one listing: a terminal's worth many times over; the totals above
// it cover every record.
const maxExcessListed = 10_000

// upstreamCheck makes one cheap real call through the account's engine and says whether it
// works. For the local kinds that is the engine's own work, small: the sandbox and ffmpeg
// render and measure a 1 s clip, espeak speaks and measures a word.
func (e *adminEnv) upstreamCheck(ctx context.Context, name string) error {
	c, err := e.loadCatalogOnly()
	if err != nil {
		return err
	}
	acc, ok := c.Upstream(name)
	if !ok {
		return usageError{fmt.Sprintf("upstream check: no account %q in the catalog (mediagen admin upstream list shows them)", name)}
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tools := ffmpeg.Tools{}
	dir, err := os.MkdirTemp("", ffmpeg.ScratchPrefix+"upstream-check-") // swept at start if a kill leaves it
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	var what string
	switch acc.Kind {
	case catalog.KindSandbox, catalog.KindFFmpeg:
		out := filepath.Join(dir, "check.mp4")
		if err = tools.Render(ctx, ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 10, Duration: 1, Container: "mp4", Text: "check"}, out); err == nil {
			var info ffmpeg.Info
			if info, err = tools.Probe(ctx, out); err == nil {
				what = fmt.Sprintf("rendered and measured a %.1f s %dx%d clip", info.Duration, info.Width, info.Height)
			}
		}
	case catalog.KindEspeak:
		out := filepath.Join(dir, "check.mp3")
		if err = tools.Speak(ctx, "check", out, ffmpeg.SpeakOptions{}); err == nil {
			var info ffmpeg.Info
			if info, err = tools.Probe(ctx, out); err == nil {
				what = fmt.Sprintf("spoke and measured a %.2f s word", info.Duration)
			}
		}
	case catalog.KindArk, catalog.KindOpenAI, catalog.KindKling, catalog.KindMiniMax, catalog.KindDashScope, catalog.KindGemini, catalog.KindElevenLabs,
		catalog.KindRunway, catalog.KindMediaKit, catalog.KindSeedSpeech, catalog.KindVertex, catalog.KindArkAssets:
		var c remoteClient
		if c, err = newRemoteClient(acc, e.getenv, e.tls, nil, nil); err == nil {
			if err = c.Check(ctx); err == nil {
				what = map[catalog.UpstreamKind]string{catalog.KindArk: "listed tasks", catalog.KindOpenAI: "listed models",
					catalog.KindKling: "read a task with a signed token", catalog.KindMiniMax: "queried a task",
					catalog.KindDashScope: "read a task", catalog.KindGemini: "read an operation", catalog.KindElevenLabs: "listed models",
					catalog.KindRunway: "read a task", catalog.KindMediaKit: "read a task",
					catalog.KindSeedSpeech: "read the clone slot " + acc.SpeakerID + "'s status",
					catalog.KindVertex:     "fetched a token and read an operation of " + vertex.CheckModel,
					catalog.KindArkAssets:  "listed asset groups with a signed request"}[acc.Kind] +
					" with the account's key at " + acc.BaseURL
			}
		}
	default:
		err = errors.New("no check for this kind")
	}
	if err != nil {
		fmt.Fprintf(e.stdout, "%s (%s): FAILED: %v\n", acc.Name, acc.Kind, err)
		return fmt.Errorf("upstream %s does not work", acc.Name)
	}
	fmt.Fprintf(e.stdout, "%s (%s): OK, %s in %s\n", acc.Name, acc.Kind, what, time.Since(start).Round(time.Millisecond))
	return nil
}
