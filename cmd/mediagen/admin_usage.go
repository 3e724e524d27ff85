package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/apierr"
	usagereport "mediagen/internal/usage"
)

// adminUsageCommands are the usage report and its rebuild. "usage rebuild" comes first: the
// commands match by prefix.
func adminUsageCommands() []adminCmd {
	return []adminCmd{
		{path: "usage rebuild", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			from := fs.String("from", "", "first day to rebuild (2026-11-01); with -to, only those days are rewritten")
			to := fs.String("to", "", "last day to rebuild, included (2026-11-03)")
			return func(e *adminEnv, _ []string) error {
				// The rollups are kept by every settlement; a rebuild recomputes them from the
				// settled records (the usage migration's backfill), idempotently, audited.
				if *from == "" && *to == "" {
					if _, err := e.svc.RebuildUsage(context.Background(), e.actor); err != nil {
						return fmt.Errorf("usage rebuild: %w", err)
					}
					fmt.Fprintln(e.stdout, "usage rollups rebuilt from the settled tasks and speech records")
					return nil
				}
				f, errF := time.Parse(time.DateOnly, *from)
				l, errL := time.Parse(time.DateOnly, *to)
				if errF != nil || errL != nil {
					return usageError{"usage rebuild: -from and -to are both dates (2026-11-01), or both absent"}
				}
				out, err := e.svc.RebuildUsageRange(context.Background(), e.actor, f, l.AddDate(0, 0, 1))
				if err != nil {
					return fmt.Errorf("usage rebuild: %w", err)
				}
				fmt.Fprintf(e.stdout, "usage rollups of %s to %s (exclusive) rebuilt from the records settled then\n", out.From, out.To)
				return nil
			}
		}},
		{path: "usage", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			from := fs.String("from", "", "start: a date (2026-11-01) or an RFC 3339 time on a whole UTC hour (required)")
			to := fs.String("to", "", "end, exclusive; a date includes that day (default: the end of the current hour)")
			group := fs.String("group-by", "", "comma-separated: "+strings.Join(usagereport.AdminGroups, ", ")+" (at most one of day and hour)")
			tenant := fs.String("tenant", "", "only this tenant")
			key := fs.String("key", "", "only this key id")
			format := fs.String("format", "table", "table, json or csv")
			return func(e *adminEnv, args []string) error {
				if len(args) != 0 {
					return usageError{"usage: unexpected argument " + args[0]}
				}
				v := url.Values{}
				for name, val := range map[string]string{"from": *from, "to": *to, "group_by": *group, "tenant": *tenant, "key": *key} {
					if val != "" {
						v.Set(name, val)
					}
				}
				return e.usageReport(context.Background(), v, *format)
			}
		}},
	}
}

// usageReport prints a report read from the rollups.
func (e *adminEnv) usageReport(ctx context.Context, v url.Values, format string) error {
	if format != "table" && format != "json" && format != "csv" {
		return usageError{"usage: --format is table, json or csv"}
	}
	q, err := usagereport.ParseQuery(v, usagereport.AdminGroups, true, nowUTC())
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return usageError{fmt.Sprintf("usage: --%s: %s", strings.ReplaceAll(ae.Param, "_", "-"), ae.Message)}
		}
		return err
	}
	rep, err := e.svc.Usage(ctx, e.actor, q)
	if err != nil {
		return err
	}
	switch format {
	case "json":
		b, err := json.Marshal(rep)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(e.stdout, "%s\n", b)
		return err
	case "csv":
		return usagereport.WriteCSV(e.stdout, rep)
	}
	return writeUsageTable(e, rep)
}

// writeUsageTable prints the rows and the totals per currency as columns. Names are printed
// as they are (a terminal runs nothing); CSV is where names are neutralised.
func writeUsageTable(e *adminEnv, rep usagereport.Report) error {
	if len(rep.Data) == 0 {
		fmt.Fprintln(e.stdout, "no settlements in this range")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, strings.ToUpper(strings.Join(rep.Columns(), "\t")))
	for _, r := range rep.Data {
		fmt.Fprintln(tw, strings.Join(usagereport.Cells(rep.GroupBy, r), "\t"))
	}
	ndims := len(usagereport.Columns(rep.GroupBy)) - len(usagereport.Columns(nil))
	for _, t := range rep.Totals {
		cells := usagereport.Cells(nil, t)
		if ndims > 0 {
			lead := make([]string, ndims)
			lead[0] = "TOTAL"
			cells = append(lead, cells...)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
	}
	return tw.Flush()
}
