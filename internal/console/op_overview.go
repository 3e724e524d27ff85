package console

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"mediagen/internal/admin"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/usage"
)

// UpstreamHealth is what this process knows of an upstream account beyond the store: its
// calls since start and how many failed, the submits that waited for a slot, and whether its
// credentials are refused now. OperatorConfig.Upstreams supplies it.
type UpstreamHealth struct {
	Account       string
	Calls, Errors int64
	Waits         int64
	Broken        bool
	// Breaker is the account's circuit breaker in this process (mediagen_upstream_breaker_state):
	// 0 closed, 1 open, 2 half-open.
	Breaker int
}

// overviewDays is the span of the overview's hourly charts.
const overviewDays = 7

// overviewTenants is how many tenants the overview lists by margin: the lowest, so that one
// sold below cost shows; an operator with thousands of tenants gets a page, not a table of
// every one (the usage report by tenant has them all).
const overviewTenants = 10

// overviewPage is the operator overview.
type overviewPage struct {
	Now     time.Time
	Today   todayStats
	Tasks   Chart
	Revenue Chart
	// Margins is the margin by alias over the last 7 days (operator only: tenants never
	// see cost); TenantMargins the overviewTenants tenants with the lowest known margin.
	Margins       []marginRow
	TenantMargins []marginRow
	Queue         []admin.QueueKind
	Upstreams     []upstreamRow
	// UpstreamsNote says why the in-process figures are missing ("" when they are shown).
	UpstreamsNote string
	Catalog       admin.CatalogStatus
}

// todayStats are today's (UTC) settled figures from the usage rollups.
type todayStats struct {
	Settled, Succeeded, Failures int64
	Revenue                      []currencyAmount
	// Cost and Margin are per currency, over the settlements whose cost is known in the
	// charge's currency; UnknownCost counts the others (their cost is not 0, it is unknown).
	Cost, Margin []currencyAmount
	UnknownCost  int64
}

// marginRow is one alias's charge, cost and margin over a span, in the tenant's currency:
// Cost and Margin over the Known settlements (cost known, in that currency), Unknown the
// others.
type marginRow struct {
	Tenant, Alias, Currency string
	Count, Known, Unknown   int64
	Charged, Cost, Margin   money.Micros
}

// addCurrency adds v to the amount of currency c in list.
func addCurrency(list []currencyAmount, c string, v money.Micros) []currencyAmount {
	for i := range list {
		if list[i].Currency == c {
			list[i].Amount += v
			return list
		}
	}
	return append(list, currencyAmount{Currency: c, Amount: v})
}

// knownMargin is a report row's margin when its cost is known in its currency.
func knownMargin(r usage.Row) (cost, margin money.Micros, ok bool) {
	if r.Cost == nil || r.Cost.Margin == nil || r.Cost.Amount == nil {
		return 0, 0, false
	}
	return *r.Cost.Amount, *r.Cost.Margin, true
}

// margins folds a report grouped by alias or by tenant (rows split by cost currency) into one
// row per alias or tenant and currency.
func margins(rep usage.Report) []marginRow {
	var out []marginRow
	for _, r := range rep.Data {
		n := len(out)
		if n == 0 || out[n-1].Tenant != r.Tenant || out[n-1].Alias != r.Alias || out[n-1].Currency != r.Currency {
			out = append(out, marginRow{Tenant: r.Tenant, Alias: r.Alias, Currency: r.Currency})
			n++
		}
		m := &out[n-1]
		m.Count += r.Count
		m.Charged += r.Charged
		if cost, margin, ok := knownMargin(r); ok {
			m.Known += r.Count
			m.Cost += cost
			m.Margin += margin
		} else {
			m.Unknown += r.Count
		}
	}
	return out
}

// lowestMargins is the n rows with a known margin, lowest first (ties by tenant).
func lowestMargins(rows []marginRow, n int) []marginRow {
	known := slices.DeleteFunc(rows, func(m marginRow) bool { return m.Known == 0 })
	slices.SortStableFunc(known, func(a, b marginRow) int {
		if a.Margin != b.Margin {
			return cmp.Compare(a.Margin, b.Margin)
		}
		return cmp.Compare(a.Tenant, b.Tenant)
	})
	return known[:min(n, len(known))]
}

// Below reports a margin below zero (sold below cost).
func (m marginRow) Below() bool { return m.Known > 0 && m.Margin < 0 }

type currencyAmount struct {
	Currency string
	Amount   money.Micros
}

// upstreamRow is an account's slots (the store, every replica) and its health (this process).
type upstreamRow struct {
	admin.UpstreamSlots
	Health    UpstreamHealth
	HasHealth bool
}

// ErrorRate is the share of failed calls, as a percentage ("—" without calls).
func (u upstreamRow) ErrorRate() string {
	if !u.HasHealth || u.Health.Calls == 0 {
		return "—"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(u.Health.Errors)/float64(u.Health.Calls))
}

// Limit shows max_in_flight ("none" when unbounded).
func (u upstreamRow) Limit() string {
	if u.MaxInFlight <= 0 {
		return "none"
	}
	return fmt.Sprint(u.MaxInFlight)
}

// OldestWait is how long the queue's oldest due job has waited, at now.
func (p overviewPage) OldestWait(q admin.QueueKind) string {
	if q.OldestDue.IsZero() {
		return "—"
	}
	return ago(q.OldestDue, p.Now)
}

// QueueTotal sums the queue's kinds.
func (p overviewPage) QueueTotal() admin.QueueKind {
	var t admin.QueueKind
	for _, q := range p.Queue {
		t.Running += q.Running
		t.Due += q.Due
		t.Scheduled += q.Scheduled
		if !q.OldestDue.IsZero() && (t.OldestDue.IsZero() || q.OldestDue.Before(t.OldestDue)) {
			t.OldestDue = q.OldestDue
		}
	}
	return t
}

// overview is GET /console/: today's figures, the last week by hour, the job queue, the
// upstream accounts and the replicas' catalogs. It reads rollups and small tables only: its
// cost does not grow with the number of tasks.
func (o *Operator) overview(w http.ResponseWriter, r *http.Request, s *Session) error {
	ctx := r.Context()
	a := o.actor(r, s)
	now := o.cfg.Admin.Now()
	hour := now.Truncate(time.Hour)
	p := overviewPage{Now: now}

	// One read of the week's hourly rollups serves both the charts and today's figures (today's
	// hours are the week's last ones): the rollup read is most of this page's cost.
	from := hour.Add(-(overviewDays*24 - 1) * time.Hour)
	week, err := o.cfg.Admin.Usage(ctx, a, usage.Query{From: from, To: hour.Add(time.Hour), GroupBy: []string{store.UsageByHour}})
	if err != nil {
		return err
	}
	p.Today = todayOf(week, time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC))
	p.Tasks, p.Revenue = hourlyCharts(week, from, overviewDays*24)
	// By alias and by tenant, not by tenant and alias: each is read from its own rollup grain
	// (a few rows per alias or tenant and day), where tenants × aliases rows would be as many
	// as the settlements at an operator's cardinality.
	byAlias, err := o.cfg.Admin.Usage(ctx, a, usage.Query{From: from, To: hour.Add(time.Hour), GroupBy: []string{store.UsageByAlias}})
	if err != nil {
		return err
	}
	p.Margins = margins(byAlias)
	byTenant, err := o.cfg.Admin.Usage(ctx, a, usage.Query{From: from, To: hour.Add(time.Hour), GroupBy: []string{store.UsageByTenant}})
	if err != nil {
		return err
	}
	p.TenantMargins = lowestMargins(margins(byTenant), overviewTenants)

	if p.Queue, err = o.cfg.Admin.JobQueue(ctx, a); err != nil {
		return err
	}
	slots, err := o.cfg.Admin.UpstreamSlotList(ctx, a)
	if err != nil {
		return err
	}
	p.Upstreams, p.UpstreamsNote = o.upstreamRows(ctx, slots)
	if p.Catalog, err = o.cfg.Admin.CatalogStatus(ctx, a); err != nil {
		return err
	}
	o.Render(w, r, s, "op_overview", "Overview", p)
	return nil
}

// todayOf sums the hourly rows from day on. Rows are per currency and cost currency:
// revenue adds up per currency, cost and margin where the cost is known.
func todayOf(week usage.Report, day time.Time) todayStats {
	var t todayStats
	for _, row := range week.Data {
		h, err := time.Parse(time.RFC3339, row.Hour)
		if err != nil || h.Before(day) {
			continue
		}
		t.Settled += row.Count
		t.Succeeded += row.Succeeded
		t.Failures += row.Failed + row.Expired
		t.Revenue = addCurrency(t.Revenue, row.Currency, row.Charged)
		if cost, margin, ok := knownMargin(row); ok {
			t.Cost = addCurrency(t.Cost, row.Currency, cost)
			t.Margin = addCurrency(t.Margin, row.Currency, margin)
		} else {
			t.UnknownCost += row.Count
		}
	}
	return t
}

// upstreamRows joins the store's slot counts with this process's health figures.
func (o *Operator) upstreamRows(ctx context.Context, slots []admin.UpstreamSlots) ([]upstreamRow, string) {
	rows := make([]upstreamRow, 0, len(slots))
	for _, sl := range slots {
		rows = append(rows, upstreamRow{UpstreamSlots: sl})
	}
	if o.cfg.Upstreams == nil {
		return rows, "This process runs no video pipeline: calls, errors and broken state are not known here."
	}
	health, err := o.cfg.Upstreams(ctx)
	if err != nil {
		o.Logger.WarnContext(ctx, "console: upstream health", "err", err)
		return rows, "The upstream figures of this process could not be read."
	}
	// Every account is known to this process now: one without figures has had no calls.
	for i := range rows {
		rows[i].Health, rows[i].HasHealth = UpstreamHealth{Account: rows[i].Account}, true
	}
	for _, h := range health {
		i := slices.IndexFunc(rows, func(r upstreamRow) bool { return r.Account == h.Account })
		if i < 0 {
			rows = append(rows, upstreamRow{UpstreamSlots: admin.UpstreamSlots{Account: h.Account}})
			i = len(rows) - 1
		}
		rows[i].Health, rows[i].HasHealth = h, true
	}
	return rows, ""
}

// hourlyCharts lays out a report grouped by hour as n bars from from: settled records by
// outcome, and revenue (charged) by currency.
func hourlyCharts(rep usage.Report, from time.Time, n int) (tasks, revenue Chart) {
	labels := make([]string, n)
	index := make(map[string]int, n)
	for i := range n {
		h := from.Add(time.Duration(i) * time.Hour)
		labels[i] = h.Format("Jan 2 15:00")
		index[h.Format(time.RFC3339)] = i
	}
	tasks = Chart{ID: "tasks", Title: "Tasks and speech settled per hour, last 7 days (UTC)", RowHead: "Hour", Labels: labels,
		Series: []string{"succeeded", "failed", "expired"}, Values: make([][]float64, n)}
	revenue = Chart{ID: "revenue", Title: "Revenue per hour, last 7 days (UTC)", RowHead: "Hour", Labels: labels,
		Values: make([][]float64, n), Format: func(v float64) string { return fmt.Sprintf("%.2f", v) }}
	for _, t := range rep.Totals { // per currency and cost currency: one series per currency
		if !slices.Contains(revenue.Series, t.Currency) {
			revenue.Series = append(revenue.Series, t.Currency)
		}
	}
	for i := range n {
		tasks.Values[i] = make([]float64, 3)
		revenue.Values[i] = make([]float64, len(revenue.Series))
	}
	for _, row := range rep.Data {
		i, ok := index[row.Hour]
		if !ok {
			continue
		}
		tasks.Values[i][0] += float64(row.Succeeded)
		tasks.Values[i][1] += float64(row.Failed)
		tasks.Values[i][2] += float64(row.Expired)
		if j := slices.Index(revenue.Series, row.Currency); j >= 0 {
			revenue.Values[i][j] += float64(row.Charged) / 1e6
		}
	}
	return tasks, revenue
}
