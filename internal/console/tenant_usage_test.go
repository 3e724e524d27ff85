package console

import (
	"context"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// seedUsage writes rollup rows for the env's key as settlements do (Tx.AddUsage).
func seedUsage(t *testing.T, e *tenantEnv, ds ...store.UsageDelta) {
	t.Helper()
	ctx := context.Background()
	if err := e.st.Transact(ctx, func(tx store.Tx) error { return tx.AddUsage(ctx, ds...) }); err != nil {
		t.Fatal(err)
	}
}

func usageDelta(at time.Time, key, alias, route string, charged money.Micros) store.UsageDelta {
	return store.UsageDelta{
		UsageKey: store.UsageKey{Hour: at.Truncate(time.Hour), TenantID: "demo", KeyID: key, Alias: alias, Route: route,
			Upstream: "sandbox", Currency: "USD", Outcome: store.OutcomeSucceeded},
		UsageFigures: store.UsageFigures{Count: 1, Reserved: charged, Charged: charged},
	}
}

// chartRow reads the cells of the row labelled day in the chart table with the given id.
func chartRow(t *testing.T, body, chartID, day string) []string {
	t.Helper()
	start := strings.Index(body, `id="`+chartID+`-title"`)
	if start < 0 {
		t.Fatalf("no chart %q on the page", chartID)
	}
	fig := body[start:]
	fig = fig[:strings.Index(fig, "</figure>")]
	m := regexp.MustCompile(`<tr><th scope="row">` + regexp.QuoteMeta(day) + `</th>(.*?)</tr>`).FindStringSubmatch(fig)
	if m == nil {
		t.Fatalf("chart %q has no row %s:\n%s", chartID, day, fig)
	}
	var cells []string
	for _, c := range regexp.MustCompile(`<td class="num">([^<]*)</td>`).FindAllStringSubmatch(m[1], -1) {
		cells = append(cells, html.UnescapeString(c[1]))
	}
	return cells
}

// chartSeries reads the column headings (series, then Total) of a chart's table.
func chartSeries(t *testing.T, body, chartID string) []string {
	t.Helper()
	fig := body[strings.Index(body, `id="`+chartID+`-title"`):]
	fig = fig[:strings.Index(fig, "</thead>")]
	var out []string
	for _, c := range regexp.MustCompile(`<th scope="col" class="num">([^<]*)</th>`).FindAllStringSubmatch(fig, -1) {
		out = append(out, html.UnescapeString(c[1]))
	}
	return out
}

func TestUsagePageShowsTheBalanceAndTheSpendOfEachDayByRouteOrAlias(t *testing.T) {
	e := newTenantEnv(t)
	now := e.clock.Now()
	today := now.Format(time.DateOnly)
	yesterday := now.Add(-24 * time.Hour).Format(time.DateOnly)
	seedUsage(t, e,
		usageDelta(now, e.keyID, "demo-video-fast", "native", 1_500_000),
		usageDelta(now, e.keyID, "demo-video-standard", "native", 2_250_000),
		usageDelta(now, e.keyID, "demo-enhance", "enhancement", 4_000_000),
		usageDelta(now.Add(-24*time.Hour), e.keyID, "demo-video-fast", "native", 500_000),
		// Outside the 30 days, and another key's: neither is shown.
		usageDelta(now.Add(-40*24*time.Hour), e.keyID, "demo-video-fast", "native", 9_000_000),
		usageDelta(now, "key_someone_else", "demo-video-fast", "native", 7_000_000),
	)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)

	cases := []struct {
		by         string
		series     []string
		today      []string // spend cells of today, then Total
		tasksToday []string
		yesterday  []string
	}{
		{"", []string{"enhancement", "native", "Total"}, []string{"4.00", "3.75", "7.75"}, []string{"1", "2", "3"}, []string{"0.00", "0.50", "0.50"}},
		{"route", []string{"enhancement", "native", "Total"}, []string{"4.00", "3.75", "7.75"}, []string{"1", "2", "3"}, []string{"0.00", "0.50", "0.50"}},
		{"alias", []string{"demo-enhance", "demo-video-fast", "demo-video-standard", "Total"},
			[]string{"4.00", "1.50", "2.25", "7.75"}, []string{"1", "1", "1", "3"}, []string{"0.00", "0.50", "0.00", "0.50"}},
	}
	for _, c := range cases {
		t.Run("by="+c.by, func(t *testing.T) {
			path := "/console/usage"
			if c.by != "" {
				path += "?by=" + c.by
			}
			p := b.get(path)
			if p.status != http.StatusOK {
				t.Fatalf("%s: %d\n%s", path, p.status, p.body)
			}
			for _, want := range []string{`id="balance-available">100.00 USD<`, `id="balance-reserved">0.00 USD<`, `id="balance-used">0.00 USD<`,
				`id="spend-total">8.25 USD<`, `id="tasks-total">4<`, "<svg", "<details class=\"numbers\" open"} {
				if !strings.Contains(p.body, want) {
					t.Errorf("%s lacks %q", path, want)
				}
			}
			if got := chartSeries(t, p.body, "spend"); strings.Join(got, ",") != strings.Join(c.series, ",") {
				t.Errorf("series %v; want %v", got, c.series)
			}
			if got := chartRow(t, p.body, "spend", today); strings.Join(got, ",") != strings.Join(c.today, ",") {
				t.Errorf("spend today %v; want %v", got, c.today)
			}
			if got := chartRow(t, p.body, "spend", yesterday); strings.Join(got, ",") != strings.Join(c.yesterday, ",") {
				t.Errorf("spend yesterday %v; want %v", got, c.yesterday)
			}
			if got := chartRow(t, p.body, "tasks", today); strings.Join(got, ",") != strings.Join(c.tasksToday, ",") {
				t.Errorf("tasks today %v; want %v", got, c.tasksToday)
			}
			if strings.Contains(p.body, "Nothing in this period yet") {
				t.Error("a period with usage says it has none")
			}
		})
	}
}

func TestUsagePageSaysNothingYetForAnEmptyPeriod(t *testing.T) {
	e := newTenantEnv(t)
	seedUsage(t, e, usageDelta(e.clock.Now().Add(-31*24*time.Hour), e.keyID, "demo-video-fast", "native", 1_000_000))
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	p := b.get("/console/usage?by=alias")
	if p.status != http.StatusOK || !strings.Contains(p.body, "Nothing in this period yet") || strings.Contains(p.body, "<svg") {
		t.Fatalf("empty period: %d\n%s", p.status, p.body)
	}
	if !strings.Contains(p.body, `id="spend-total">0.00 USD<`) {
		t.Error("the empty period's total is not 0")
	}
}

func TestUsagePageRefusesAnUnknownGrouping(t *testing.T) {
	e := newTenantEnv(t)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	if p := b.get("/console/usage?by=upstream"); p.status != http.StatusBadRequest || !strings.Contains(p.body, "route or by alias") {
		t.Fatalf("by=upstream: %d\n%s", p.status, p.body)
	}
}

// The operator's cost is never on a tenant's page: a settlement with a known cost and one
// with an unknown cost of the same alias add up to one series, and neither the cost nor a
// margin is shown.
func TestUsagePageNeverShowsTheOperatorsCost(t *testing.T) {
	e := newTenantEnv(t)
	now := e.clock.Now()
	priced := usageDelta(now, e.keyID, "demo-video-fast", "native", 1_500_000)
	priced.Upstream, priced.CostCurrency, priced.Cost = "ark", "USD", 7_654_321
	seedUsage(t, e, priced, usageDelta(now, e.keyID, "demo-video-fast", "native", 500_000))
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.key)
	p := b.get("/console/usage?by=alias")
	if p.status != http.StatusOK {
		t.Fatalf("usage: %d\n%s", p.status, p.body)
	}
	if got := chartRow(t, p.body, "spend", now.Format(time.DateOnly)); strings.Join(got, ",") != "2.00,2.00" {
		t.Errorf("spend today %v; want one alias at 2.00", got)
	}
	for _, leak := range []string{"7.65", "Margin", "margin", ">Cost"} {
		if strings.Contains(p.body, leak) {
			t.Errorf("the tenant's usage page shows %q", leak)
		}
	}
}
