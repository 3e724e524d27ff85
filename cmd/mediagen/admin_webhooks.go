package main

import (
	"context"
	"flag"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	opadmin "mediagen/internal/admin"
	"mediagen/internal/store"
	"mediagen/internal/webhook"
)

// adminWebhookCommands are the operator's webhook commands: any tenant's endpoints and their
// delivery logs; disable, enable and redeliver are audited like every admin write. A
// redelivery is a job the running service claims at its next poll (the CLI cannot wake it).
func adminWebhookCommands() []adminCmd {
	oneID := func(name string, do func(e *adminEnv, id string) error) func(fs *flag.FlagSet) func(*adminEnv, []string) error {
		return func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"webhook " + name + ": give exactly one endpoint id"}
				}
				return do(e, args[0])
			}
		}
	}
	return []adminCmd{
		{path: "webhook list", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			tenant := fs.String("tenant", "", "tenant id (required)")
			return func(e *adminEnv, _ []string) error { return e.webhookList(context.Background(), *tenant) }
		}},
		{path: "webhook disable", flags: oneID("disable", func(e *adminEnv, id string) error {
			return e.webhookStatus(context.Background(), id, store.WebhookDisabled)
		})},
		{path: "webhook enable", flags: oneID("enable", func(e *adminEnv, id string) error {
			return e.webhookStatus(context.Background(), id, store.WebhookEnabled)
		})},
		{path: "webhook deliveries", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			status := fs.String("status", "", "pending, delivered or failed")
			typ := fs.String("event-type", "", "only this event type")
			event := fs.String("event-id", "", "only this event (its webhook-id)")
			limit := fs.Int("limit", 20, "at most this many, newest first")
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{"webhook deliveries: give exactly one endpoint id"}
				}
				return e.webhookDeliveries(context.Background(), args[0], webhook.LogQuery{Status: *status, EventType: *typ, EventID: *event, Limit: *limit})
			}
		}},
		{path: "webhook redeliver", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			return func(e *adminEnv, args []string) error {
				if len(args) != 2 {
					return usageError{"webhook redeliver: give the endpoint id and the delivery id"}
				}
				return e.webhookRedeliver(context.Background(), args[0], args[1])
			}
		}},
	}
}

func (e *adminEnv) webhookList(ctx context.Context, tenantID string) error {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDPOINT\tSTATUS\tFAILURE RUN\tEVENTS\tURL\tNAME")
	f := opadmin.WebhookEndpointFilter{Tenant: tenantID}
	for {
		page, err := e.svc.WebhookEndpoints(ctx, e.actor, f)
		if err != nil {
			return cliError("webhook list", err)
		}
		for _, ep := range page.Data {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\n", ep.ID, ep.Status, ep.FailureRun, strings.Join(ep.EventTypes, ","), ep.URL, ep.Name)
		}
		if !page.HasMore {
			break
		}
		f.Cursor = page.NextCursor
	}
	return tw.Flush()
}

func (e *adminEnv) webhookStatus(ctx context.Context, id, status string) error {
	ep, err := e.svc.SetWebhookEndpointStatus(ctx, e.actor, id, status)
	if err != nil {
		return cliError("webhook "+strings.TrimSuffix(status, "d"), err)
	}
	fmt.Fprintf(e.stdout, "webhook endpoint %s of tenant %s is %s\n", ep.ID, ep.Tenant, ep.Status)
	return nil
}

func (e *adminEnv) webhookDeliveries(ctx context.Context, endpointID string, q webhook.LogQuery) error {
	page, err := e.svc.WebhookDeliveries(ctx, e.actor, endpointID, q)
	if err != nil {
		return cliError("webhook deliveries", err)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DELIVERY\tEVENT TYPE\tSTATUS\tATTEMPTS\tCREATED\tLAST")
	for _, d := range page.Data {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", d.ID, d.EventType, d.Status, d.AttemptCount, d.CreatedAt.Format(time.RFC3339), d.UpdatedAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

func (e *adminEnv) webhookRedeliver(ctx context.Context, endpointID, id string) error {
	d, err := e.svc.RedeliverWebhook(ctx, e.actor, endpointID, id)
	if err != nil {
		return cliError("webhook redeliver", err)
	}
	fmt.Fprintf(e.stdout, "event %s queued again to webhook endpoint %s as delivery %s\n", d.EventID, d.EndpointID, d.ID)
	return nil
}
