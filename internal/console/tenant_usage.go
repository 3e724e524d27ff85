package console

import (
	"math"
	"net/http"
	"slices"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/usage"
)

// UsageDays is the span of the usage page's charts: the last 30 UTC days, today included.
const UsageDays = 30

// usagePage is the data of tenant_usage.html.
type usagePage struct {
	Balance  store.Balance
	Currency string
	By       string // route or alias
	From, To time.Time
	Spend    Chart
	Tasks    Chart
	// TotalSpend and TotalTasks are the sums over the charts' days.
	TotalSpend money.Micros
	TotalTasks int64
	// Others are currencies other than the balance's that settled rows were in (a catalog
	// change of the tenant's currency); the charts show the balance's currency only.
	Others []string
}

// ByRoute and ByAlias tell the template which toggle is current.
func (p usagePage) ByRoute() bool { return p.By == store.UsageByRoute }
func (p usagePage) ByAlias() bool { return p.By == store.UsageByAlias }

// LastDay is the last day of the period (To is the midnight after it).
func (p usagePage) LastDay() time.Time { return p.To.Add(-24 * time.Hour) }

// usage answers GET /console/usage: the key's balance, as GET /v1/billing/balance shows it
// (plus what is held for tasks in progress), and its spend and settled tasks per day of the
// last 30 days by route or alias, from the usage rollups as GET /v1/billing/usage reads them.
func (t *Tenant) usage(w http.ResponseWriter, r *http.Request, s *Session) error {
	by := r.URL.Query().Get("by")
	switch by {
	case "":
		by = store.UsageByRoute
	case store.UsageByRoute, store.UsageByAlias:
	default:
		return apierr.Invalid("by", "Show usage by route or by alias.")
	}
	ctx := r.Context()
	bal, err := t.cfg.Store.Balance(ctx, s.Caller.Key.ID)
	if err != nil {
		return err
	}
	currency := bal.Currency
	if currency == "" {
		currency = s.Caller.Tenant.Currency
	}
	to := t.Now().UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	from := to.Add(-UsageDays * 24 * time.Hour)
	// The same query the public usage API builds for the key; the key comes from the session.
	rep, err := usage.Run(ctx, t.cfg.Store, usage.Query{From: from, To: to, GroupBy: []string{store.UsageByDay, by}, Key: s.Caller.Key.ID}, nil)
	if err != nil {
		return err
	}
	p := usagePage{Balance: bal, Currency: currency, By: by, From: from, To: to}
	labels := make([]string, UsageDays)
	day := map[string]int{}
	for i := range labels {
		labels[i] = from.Add(time.Duration(i) * 24 * time.Hour).Format(time.DateOnly)
		day[labels[i]] = i
	}
	var series []string
	for _, row := range rep.Data {
		if row.Currency != currency {
			if !slices.Contains(p.Others, row.Currency) {
				p.Others = append(p.Others, row.Currency)
			}
			continue
		}
		if name := usageSeries(row, by); !slices.Contains(series, name) {
			series = append(series, name)
		}
	}
	slices.Sort(series)
	spend, tasks := grid(UsageDays, len(series)), grid(UsageDays, len(series))
	for _, row := range rep.Data {
		i, ok := day[row.Day]
		if !ok || row.Currency != currency {
			continue
		}
		j := slices.Index(series, usageSeries(row, by))
		spend[i][j] += float64(row.Charged)
		tasks[i][j] += float64(row.Count)
		p.TotalSpend += row.Charged
		p.TotalTasks += row.Count
	}
	p.Spend = Chart{ID: "spend", Title: "Spend per day by " + by + " (" + currency + ")", RowHead: "Day",
		Labels: labels, Series: series, Values: spend, Format: microsFormat, Open: true}
	p.Tasks = Chart{ID: "tasks", Title: "Tasks settled per day by " + by, RowHead: "Day",
		Labels: labels, Series: series, Values: tasks, Open: true}
	t.Render(w, r, s, "tenant_usage", "Balance & usage", p)
	return nil
}

// usageSeries names a report row's series: its route or alias.
func usageSeries(row usage.Row, by string) string {
	if by == store.UsageByAlias {
		return row.Alias
	}
	return row.Route
}

func grid(rows, cols int) [][]float64 {
	out := make([][]float64, rows)
	for i := range out {
		out[i] = make([]float64, cols)
	}
	return out
}

// microsFormat shows a chart value held in micro-units as the exact decimal amount (float64
// holds every integer up to 2^53 micro-units exactly, nine billion units).
func microsFormat(v float64) string { return displayMoney(money.Micros(math.Round(v))) }
