package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	opadmin "mediagen/internal/admin"
)

// The support commands (docs/admin.md, "Support: finding a task"): a task, speech record or
// asset by id, and searches, through the same admin.Service reads as GET /admin/v1/tasks….

func adminSupportCommands() []adminCmd {
	show := func(kind string, fn func(e *adminEnv, id string) (any, func(io.Writer), error)) adminCmd {
		return adminCmd{path: kind + " show", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			asJSON := fs.Bool("json", false, "print the admin API's JSON view instead of text")
			return func(e *adminEnv, args []string) error {
				if len(args) != 1 {
					return usageError{kind + " show: give exactly one id"}
				}
				v, text, err := fn(e, args[0])
				if err != nil {
					return cliError(kind+" show", err)
				}
				if *asJSON {
					return printJSON(e.stdout, v)
				}
				text(e.stdout)
				return nil
			}
		}}
	}
	search := func(kind string, names []string, fn func(e *adminEnv, in opadmin.SearchInput, asJSON bool) error) adminCmd {
		return adminCmd{path: kind + " search", flags: func(fs *flag.FlagSet) func(*adminEnv, []string) error {
			vals := map[string]*string{}
			help := map[string]string{"tenant": "only this tenant", "key": "only this API key id", "status": "only this status",
				"alias": "only this model alias", "route": "only this route: native, enhancement, production",
				"upstream-job": "the task that was ever waiting on this upstream job id", "group": "only this asset group"}
			for _, n := range names {
				vals[n] = fs.String(n, "", help[n])
			}
			since := fs.String("since", "", "created at or after: RFC 3339 or a duration back from now (24h)")
			until := fs.String("until", "", "created before: RFC 3339 or a duration back from now")
			order := fs.String("order", "desc", "desc (newest first) or asc")
			limit := fs.Int("limit", opadmin.SearchDefaultLimit, fmt.Sprintf("at most this many (1-%d)", opadmin.SearchMaxLimit))
			after := fs.String("after", "", "the cursor a previous page printed")
			asJSON := fs.Bool("json", false, "print the admin API's JSON answer instead of a table")
			return func(e *adminEnv, args []string) error {
				if len(args) != 0 {
					return usageError{kind + " search: takes no arguments, only flags"}
				}
				get := func(n string) string {
					if p, ok := vals[n]; ok {
						return *p
					}
					return ""
				}
				in := opadmin.SearchInput{Tenant: get("tenant"), Key: get("key"), Status: get("status"), Alias: get("alias"),
					Route: get("route"), UpstreamJob: get("upstream-job"), Group: get("group"), Order: *order, Cursor: *after, Limit: *limit}
				if *limit == 0 {
					in.Limit = -1 // explicit 0 is out of range
				}
				var err error
				if in.Since, err = cliTime(e, *since); err != nil {
					return usageError{fmt.Sprintf("%s search: --since %q: want an RFC 3339 time or a duration such as 24h", kind, *since)}
				}
				if in.Until, err = cliTime(e, *until); err != nil {
					return usageError{fmt.Sprintf("%s search: --until %q: want an RFC 3339 time or a duration such as 24h", kind, *until)}
				}
				if err := fn(e, in, *asJSON); err != nil {
					return cliError(kind+" search", cliParam(cliParam(err, "cursor", "after"), "upstream_job", "upstream-job"))
				}
				return nil
			}
		}}
	}
	return []adminCmd{
		show("task", func(e *adminEnv, id string) (any, func(io.Writer), error) {
			d, err := e.svc.Task(context.Background(), e.actor, id)
			return d, func(w io.Writer) { printTask(w, d) }, err
		}),
		search("task", []string{"tenant", "key", "status", "alias", "route", "upstream-job"}, func(e *adminEnv, in opadmin.SearchInput, asJSON bool) error {
			l, err := e.svc.SearchTasks(context.Background(), e.actor, in)
			if err != nil || asJSON {
				return jsonOr(e.stdout, l, err)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTENANT\tKEY\tALIAS\tROUTE\tSTATUS\tRESERVED\tCHARGED\tERROR\tCREATED")
			for _, t := range l.Data {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Tenant, t.KeyID, t.Alias, t.Route, t.Status,
					t.Reserved, t.Charged, dash(t.ErrorCode), t.CreatedAt.Format(time.RFC3339))
			}
			return flushNext(tw, e.stdout, l.NextCursor)
		}),
		show("speech", func(e *adminEnv, id string) (any, func(io.Writer), error) {
			d, err := e.svc.Speech(context.Background(), e.actor, id)
			return d, func(w io.Writer) { printSpeech(w, d) }, err
		}),
		search("speech", []string{"tenant", "key", "status", "alias"}, func(e *adminEnv, in opadmin.SearchInput, asJSON bool) error {
			l, err := e.svc.SearchSpeeches(context.Background(), e.actor, in)
			if err != nil || asJSON {
				return jsonOr(e.stdout, l, err)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTENANT\tKEY\tALIAS\tSTATUS\tRESERVED\tCHARGED\tERROR\tCREATED")
			for _, s := range l.Data {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", s.ID, s.Tenant, s.KeyID, s.Alias, s.Status, s.Reserved, s.Charged,
					dash(s.ErrorCode), s.CreatedAt.Format(time.RFC3339))
			}
			return flushNext(tw, e.stdout, l.NextCursor)
		}),
		show("asset", func(e *adminEnv, id string) (any, func(io.Writer), error) {
			d, err := e.svc.Asset(context.Background(), e.actor, id)
			return d, func(w io.Writer) { printAsset(w, d) }, err
		}),
		search("asset", []string{"tenant", "key", "group", "status"}, func(e *adminEnv, in opadmin.SearchInput, asJSON bool) error {
			l, err := e.svc.SearchAssets(context.Background(), e.actor, in)
			if err != nil || asJSON {
				return jsonOr(e.stdout, l, err)
			}
			tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tTENANT\tGROUP\tTYPE\tSTATUS\tNAME\tCREATED")
			for _, a := range l.Data {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", a.ID, a.Tenant, a.GroupID, a.Type, a.Status, a.Name, a.CreatedAt.Format(time.RFC3339))
			}
			return flushNext(tw, e.stdout, l.NextCursor)
		}),
	}
}

// cliTime reads an RFC 3339 time or a duration back from now ("" is no bound).
func cliTime(e *adminEnv, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return e.svc.Now().Add(-d), nil
	}
	return time.Parse(time.RFC3339Nano, s)
}

func printJSON(w io.Writer, v any) error {
	b, err := json.Marshal(v, json.Deterministic(true))
	if err != nil {
		return err
	}
	if err := (*jsontext.Value)(&b).Indent(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

func jsonOr(w io.Writer, v any, err error) error {
	if err != nil {
		return err
	}
	return printJSON(w, v)
}

func flushNext(tw *tabwriter.Writer, w io.Writer, next string) error {
	if err := tw.Flush(); err != nil {
		return err
	}
	if next != "" {
		fmt.Fprintf(w, "more: --after %s\n", next)
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func when(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Format(time.RFC3339Nano)
}

// field prints one "name: value" line, skipping empty values.
func field(w io.Writer, name, value string) {
	if value != "" {
		fmt.Fprintf(w, "%-18s %s\n", name+":", value)
	}
}

func printTask(w io.Writer, d opadmin.TaskDetail) {
	field(w, "task", d.ID)
	field(w, "tenant", d.Tenant)
	field(w, "key", strings.TrimSpace(d.KeyID+" "+paren(d.KeyName)))
	field(w, "alias", d.Alias)
	field(w, "route", d.Route)
	field(w, "status", fmt.Sprintf("%s (progress %d, step %s)", d.Status, d.Progress, dash(d.Step)))
	field(w, "client request id", d.ClientRequestID)
	field(w, "created", when(d.CreatedAt))
	field(w, "finished", when(d.FinishedAt))
	u := d.Upstream
	field(w, "upstream", strings.TrimSpace(u.Account+" "+paren(u.Model)))
	field(w, "upstream job", u.Job)
	field(w, "enhance upstream", strings.TrimSpace(u.EnhanceAccount+" "+paren(u.EnhanceModel)))
	field(w, "enhance job", u.EnhanceJob)
	if d.Error != nil {
		field(w, "public error", d.Error.Code+": "+d.Error.Message)
	}
	field(w, "internal error", d.InternalError)
	printMoney(w, d.Money)
	fmt.Fprintln(w, "\nevents:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  #\tAT\tFROM\tTO\tSTEP\tATTEMPT\tUPSTREAM JOB\tDETAIL")
	for _, e := range d.Events {
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", e.Seq, when(e.At), dash(e.From), e.To, dash(e.Step), e.Attempt,
			dash(e.UpstreamJob), dash(e.Detail))
	}
	_ = tw.Flush()
	printLedger(w, d.Ledger)
	printExcess(w, d.Excess)
	printJobs(w, d.Jobs)
}

func paren(s string) string {
	if s == "" {
		return ""
	}
	return "(" + s + ")"
}

func printMoney(w io.Writer, m opadmin.RecordMoney) {
	field(w, "reserved", m.Reserved.String()+" "+m.Currency)
	field(w, "charged", m.Charged.String()+" "+m.Currency)
	if m.Overage != 0 {
		field(w, "overage", m.Overage.String()+" "+m.Currency)
	}
	for _, r := range []struct {
		name string
		ref  *opadmin.TxnRef
	}{{"reservation txn", m.Reservation}, {"settlement txn", m.Settlement}, {"overage txn", m.OverageTxn}} {
		if r.ref != nil {
			field(w, r.name, fmt.Sprintf("%s (%s %s at %s)", r.ref.ID, r.ref.Kind, r.ref.Amount, when(r.ref.CreatedAt)))
		}
	}
}

func printLedger(w io.Writer, txns []opadmin.LedgerTxn) {
	fmt.Fprintln(w, "\nledger:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  TXN\tKIND\tAT\tACCOUNT\tAMOUNT")
	for _, t := range txns {
		for _, en := range t.Entries {
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", t.ID, t.Kind, when(t.CreatedAt), en.Account, en.Amount)
		}
	}
	_ = tw.Flush()
}

func printExcess(w io.Writer, ex []opadmin.Excess) {
	if len(ex) == 0 {
		return
	}
	fmt.Fprintln(w, "\nupstream excess:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tUPSTREAM\tKIND\tCLAIMED\tCHARGED\tAMOUNT\tDETAIL")
	for _, x := range ex {
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s %s\t%s\n", x.ID, x.Upstream, x.Kind, x.Claimed, x.Charged, x.Amount, x.Currency, dash(x.Detail))
	}
	_ = tw.Flush()
}

func printJobs(w io.Writer, jobs []opadmin.Job) {
	if len(jobs) == 0 {
		return
	}
	fmt.Fprintln(w, "\njobs:")
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  ID\tATTEMPTS\tRUN AT\tLEASE UNTIL\tLAST ERROR")
	for _, j := range jobs {
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\n", j.ID, j.Attempts, when(j.RunAt), when(j.LeaseUntil), dash(j.LastError))
	}
	_ = tw.Flush()
}

func printSpeech(w io.Writer, d opadmin.SpeechDetail) {
	field(w, "speech", d.ID)
	field(w, "tenant", d.Tenant)
	field(w, "key", strings.TrimSpace(d.KeyID+" "+paren(d.KeyName)))
	field(w, "alias", d.Alias)
	field(w, "status", d.Status)
	field(w, "client request id", d.ClientRequestID)
	field(w, "upstream", strings.TrimSpace(d.Upstream+" "+paren(d.UpstreamModel)))
	field(w, "created", when(d.CreatedAt))
	field(w, "finished", when(d.FinishedAt))
	if d.Error != nil {
		field(w, "public error", d.Error.Code+": "+d.Error.Message)
	}
	field(w, "error kind", d.ErrorKind)
	printMoney(w, d.Money)
	printLedger(w, d.Ledger)
	printExcess(w, d.Excess)
}

func printAsset(w io.Writer, d opadmin.AssetDetail) {
	field(w, "asset", d.ID)
	field(w, "tenant", d.Tenant)
	field(w, "key", d.KeyID)
	field(w, "group", d.GroupID+" ("+d.Library+")")
	field(w, "name", d.Name)
	field(w, "type", d.Type)
	field(w, "status", d.Status)
	field(w, "source", d.SourceURL)
	field(w, "failure", strings.TrimSpace(d.FailureCode+" "+d.FailureReason))
	field(w, "stored as", d.BlobKey)
	field(w, "attempts", fmt.Sprint(d.Attempts))
	field(w, "created", when(d.CreatedAt))
	printJobs(w, d.Jobs)
}
