package main

import (
	"context"
	"flag"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	"path/filepath"
	"text/tabwriter"
	"time"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/asset"
	"mediagen/internal/blob"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/webhook"
)

// The asset library's part of the binary: its assembly for serve, and the operator commands
// that grant and revoke virtual asset groups.

// Environment settings of the asset library (read by serve).
// assetFetchTimeout bounds one asset download; the processing lease is longer.
const assetFetchTimeout = 10 * time.Minute

// buildAssets assembles the asset library: copies under <data-dir>/assets (their own root, so
// the results' retention sweeper never deletes them; links share the signing key), or in the
// cluster's bucket when results are on S3 (links presigned at the store), a fetch
// client with the serve policy and a long total timeout, the catalog's virtual groups applied,
// and the background processor started on bg. Every role runs the processor: it takes over
// assets left Processing by a process that died.
func (m *Main) buildAssets(ctx context.Context, key []byte, fetchOpts safefetch.Options, reg prometheus.Registerer, events *webhook.Service) (*asset.Service, asset.FileServer, error) {
	c := &m.Config
	var blobs blob.Store
	var files asset.FileServer = blob.NoFiles{}
	if s3, ok := m.blobs.(*blob.S3); ok {
		// The cluster's bucket: asset copies (keys under asset.KeyPrefix) beside the results,
		// which the retention sweep never lists (it sweeps only the results' prefixes).
		blobs = s3
	} else {
		fs, err := blob.NewFS(filepath.Join(c.DataDir, "assets"), key, c.PublicURL)
		if err != nil {
			return nil, nil, fmt.Errorf("asset storage: %w", err)
		}
		blobs, files = fs, fs
	}
	cfg := asset.Config{Store: m.db, Catalogs: m.cat, Blobs: blobs, Logger: m.log, PublicURL: c.PublicURL, LinkTTL: c.LinkTTL,
		Lease: assetFetchTimeout + 5*time.Minute, Processed: asset.NewProcessedCounter(reg), Notify: m.jobs.Notify,
		Tracer: m.tracing.Tracer(), Now: m.Now, Libraries: m.libraries().get, UpstreamPoll: m.AssetLibraryPoll,
		UpstreamDeadline: m.AssetLibraryDeadline, Events: events}
	if c.VerifyTTL > 0 {
		cfg.VerifyTTL = c.VerifyTTL
	}
	if c.AssetMaxMB > 0 {
		cfg.MaxBytes = int64(c.AssetMaxMB) << 20
	}
	fetchOpts.TotalTimeout = assetFetchTimeout
	cfg.Fetch = safefetch.New(fetchOpts)
	granted, revoked, err := asset.SyncCatalog(ctx, m.db, m.cat(), time.Now().UTC())
	if err != nil {
		return nil, nil, fmt.Errorf("catalog virtual_groups: %w", err)
	}
	if granted+revoked > 0 {
		m.log.Info("catalog virtual groups applied", "granted", granted, "revoked", revoked)
	}
	return asset.New(cfg), files, nil
}

// adminAssetCommands are the operator's asset-group commands.
func adminAssetCommands() []adminCmd {
	return []adminCmd{
		{path: "asset-group grant", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			tenant := fs.String("tenant", "", "tenant id (required)")
			name := fs.String("name", "", "group name (required for a new group)")
			desc := fs.String("description", "", "group description")
			id := fs.String("id", "", "group id: an existing group of the tenant to authorize again, or the id of the new group (default: generated)")
			return func(e *adminEnv, _ []string) error {
				return e.groupGrant(context.Background(), *tenant, *id, *name, *desc)
			}
		}},
		{path: "asset-group revoke", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"asset-group revoke: give exactly one group id"}
				}
				return e.groupRevoke(context.Background(), args[0])
			}
		}},
		{path: "asset-group list", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			tenant := fs.String("tenant", "", "only this tenant's groups")
			return func(e *adminEnv, _ []string) error { return e.groupList(context.Background(), *tenant) }
		}},
	}
}

func (e *adminEnv) groupGrant(ctx context.Context, tenantID, id, name, desc string) error {
	if tenantID == "" {
		return usageError{"asset-group grant: --tenant is required"}
	}
	g, err := e.svc.GrantGroup(ctx, e.actor, opadmin.GroupInput{Tenant: tenantID, ID: id, Name: name, Description: desc})
	if err != nil {
		return cliError("asset-group grant", err)
	}
	verb := "authorized again"
	if g.Created {
		verb = "granted"
	}
	fmt.Fprintf(e.stdout, "virtual asset group %s (%s) %s for tenant %s\n", g.ID, g.Name, verb, g.Tenant)
	return nil
}

func (e *adminEnv) groupRevoke(ctx context.Context, id string) error {
	g, err := e.svc.RevokeGroup(ctx, e.actor, id)
	if err != nil {
		return cliError("asset-group revoke", err)
	}
	fmt.Fprintf(e.stdout, "asset group %s (%s) of tenant %s revoked: no assets can be added to it and its assets cannot be used\n", g.ID, g.Name, g.Tenant)
	return nil
}

func (e *adminEnv) groupList(ctx context.Context, tenantID string) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "GROUP\tTENANT\tLIBRARY\tORIGIN\tSTATUS\tASSETS\tNAME")
	f := opadmin.GroupFilter{Tenant: tenantID}
	for {
		page, err := e.svc.Groups(ctx, e.actor, f)
		if err != nil {
			return cliError("asset-group list", err)
		}
		for _, g := range page.Data {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\n", g.ID, g.Tenant, g.Library, g.Origin, g.Status, g.AssetCount, g.Name)
		}
		if !page.HasMore {
			break
		}
		f.Cursor = page.NextCursor
	}
	return tw.Flush()
}
