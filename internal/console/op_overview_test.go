package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// withUpstreams serves a second operator console on e's store and service, with the
// upstream health hook set.
func withUpstreams(t *testing.T, e *opEnv, hook func(context.Context) ([]UpstreamHealth, error)) *httptest.Server {
	t.Helper()
	op, err := NewOperator(OperatorConfig{Common: Common{Sessions: e.st, Now: e.clock.Now}, Admin: e.svc, Upstreams: hook})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(op)
	t.Cleanup(ts.Close)
	return ts
}

// addUsage adds rollup rows as settlements would.
func addUsage(t *testing.T, st store.Store, deltas ...store.UsageDelta) {
	t.Helper()
	ctx := context.Background()
	if err := st.Transact(ctx, func(tx store.Tx) error { return tx.AddUsage(ctx, deltas...) }); err != nil {
		t.Fatal(err)
	}
}

func delta(hour time.Time, outcome string, n int64, charged int64) store.UsageDelta {
	return store.UsageDelta{
		UsageKey:     store.UsageKey{Hour: hour, TenantID: "demo", KeyID: "key_x", Alias: "demo-video-fast", Route: "native", Upstream: "sandbox", Currency: "USD", Outcome: outcome},
		UsageFigures: store.UsageFigures{Count: n, Reserved: money.Micros(charged), Charged: money.Micros(charged)},
	}
}

// statValue reads a stat card's number by its id.
func statValue(t *testing.T, body, id string) string {
	t.Helper()
	m := regexp.MustCompile(`id="` + id + `"><span class="v">([^<]*)</span>`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no stat %s on the page:\n%s", id, body)
	}
	return m[1]
}

func TestOverviewShowsTodaysSettledFiguresToAViewer(t *testing.T) {
	e := newOpEnv(t)
	// 15:30 UTC tomorrow: every seeded hour below is on the same day or the day before.
	y, m, d := time.Now().UTC().AddDate(0, 0, 1).Date()
	e.clock.Set(time.Date(y, m, d, 15, 30, 0, 0, time.UTC))
	hour := e.clock.Now().Truncate(time.Hour)
	addUsage(t, e.st,
		delta(hour, store.OutcomeSucceeded, 3, 1_500_000),
		delta(hour.Add(-2*time.Hour), store.OutcomeSucceeded, 1, 250_000),
		delta(hour, store.OutcomeFailed, 2, 0),
		delta(hour.Add(-time.Hour), store.OutcomeExpired, 1, 0),
		// Yesterday: in the week's chart, not in today's cards.
		delta(hour.Add(-20*time.Hour), store.OutcomeSucceeded, 10, 9_000_000),
		// Older than the chart's week.
		delta(hour.Add(-8*24*time.Hour), store.OutcomeSucceeded, 99, 99_000_000),
	)
	ctx := context.Background()
	if err := e.st.Transact(ctx, func(tx store.Tx) error {
		return tx.EnqueueJob(ctx, store.Job{ID: "video.task:t1", Kind: "video.task", Ref: "t1", RunAt: e.clock.Now().Add(-90 * time.Second), CreatedAt: e.clock.Now()})
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.st.ReportCatalog(ctx, store.CatalogReplica{ReplicaID: "replica-a", Role: "all", Hash: "abcdef0123456789", LoadedAt: e.clock.Now(), HeartbeatAt: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}

	yesterday := hour.Add(-20 * time.Hour).Format("Jan 2 15:00")
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.viewer)
	p := b.get("/console/")
	if p.status != http.StatusOK {
		t.Fatalf("overview: %d\n%s", p.status, p.body)
	}
	for id, want := range map[string]string{"stat-tasks": "7", "stat-failures": "3"} {
		if got := statValue(t, p.body, id); got != want {
			t.Errorf("%s = %q; want %q", id, got, want)
		}
	}
	for _, want := range []string{
		`<span class="v">1.75 USD</span>`,                               // today's revenue: 1.50 + 0.25
		`<th scope="row">` + yesterday + `</th><td class="num">10</td>`, // yesterday's hour in the tasks chart
		`<th scope="row">` + yesterday + `</th><td class="num">9.00</td>`,
		`<code>video.task</code>`, "1m ago", // the queue and its oldest due job
		`<code>sandbox</code>`,                   // every upstream account
		`<code>replica-a</code>`, `abcdef012345`, // catalog per replica
		"runs no video pipeline",
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if strings.Contains(p.body, hour.Add(-8*24*time.Hour).Format("Jan 2 15:00")) || strings.Contains(p.body, ">99<") {
		t.Error("the chart shows figures older than its week")
	}
	if strings.Contains(p.body, `method="post" action="/console/tenants`) {
		t.Error("the overview has a form that writes")
	}
}

func TestOverviewShowsTheProcesssUpstreamHealth(t *testing.T) {
	e := newOpEnv(t)
	for _, tc := range []struct {
		name  string
		hook  func(context.Context) ([]UpstreamHealth, error)
		wants []string
	}{
		{"broken with errors", func(context.Context) ([]UpstreamHealth, error) {
			return []UpstreamHealth{{Account: "sandbox", Calls: 8, Errors: 2, Waits: 5, Broken: true}}, nil
		}, []string{`data-label="Calls">8<`, `data-label="Error rate">25.0%<`, `data-label="Slot waits">5<`, `badge broken`}},
		{"breaker open", func(context.Context) ([]UpstreamHealth, error) {
			return []UpstreamHealth{{Account: "sandbox", Calls: 8, Errors: 8, Breaker: 1}}, nil
		}, []string{`badge broken">breaker open<`}},
		{"breaker half-open", func(context.Context) ([]UpstreamHealth, error) {
			return []UpstreamHealth{{Account: "sandbox", Calls: 8, Errors: 5, Breaker: 2}}, nil
		}, []string{`badge queued">breaker half-open<`}},
		{"no calls yet", func(context.Context) ([]UpstreamHealth, error) { return nil, nil },
			[]string{`data-label="Calls">0<`, `data-label="Error rate">—<`, `badge ok`}},
		{"figures unreadable", func(context.Context) ([]UpstreamHealth, error) { return nil, errors.New("boom") },
			[]string{"could not be read", `<span class="muted">unknown</span>`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts := withUpstreams(t, e, tc.hook)
			b := newBrowser(t, ts.URL)
			b.signIn(e.viewer)
			p := b.get("/console/")
			if p.status != http.StatusOK {
				t.Fatalf("overview: %d\n%s", p.status, p.body)
			}
			for _, want := range tc.wants {
				if !strings.Contains(p.body, want) {
					t.Errorf("overview lacks %q", want)
				}
			}
		})
	}
}

func TestOverviewShowsCostAndMarginByAlias(t *testing.T) {
	e := newOpEnv(t)
	y, m, d := time.Now().UTC().AddDate(0, 0, 1).Date()
	e.clock.Set(time.Date(y, m, d, 15, 30, 0, 0, time.UTC))
	hour := e.clock.Now().Truncate(time.Hour)
	priced := func(alias string, n, charged, cost int64) store.UsageDelta {
		dl := delta(hour, store.OutcomeSucceeded, n, charged)
		dl.Alias, dl.Upstream, dl.CostCurrency, dl.Cost = alias, "ark", "USD", money.Micros(cost)
		return dl
	}
	unpriced := delta(hour, store.OutcomeSucceeded, 2, 1_000_000)
	unpriced.Alias = "demo-unpriced"
	addUsage(t, e.st,
		priced("demo-video-fast", 1, 1_500_000, 500_000),
		priced("demo-cheap", 1, 200_000, 300_000), // sold below cost
		unpriced,
		priced("demo-video-fast", 1, 1_000_000, 100_000), // a second settlement today
	)
	// Two days ago: in the 7-day table, not in today's cards.
	old := priced("demo-video-fast", 1, 1_000_000, 100_000)
	old.Hour = hour.Add(-48 * time.Hour)
	addUsage(t, e.st, old)
	b := newBrowser(t, e.ts.URL)
	b.signIn(e.viewer)
	p := b.get("/console/")
	if p.status != http.StatusOK {
		t.Fatalf("overview: %d\n%s", p.status, p.body)
	}
	for _, want := range []string{
		`<div class="stat stat-cost"><span class="v">0.90 USD</span><span class="k">Cost (USD)</span>`,     // 0.5 + 0.3 + 0.1
		`<div class="stat stat-margin"><span class="v">1.80 USD</span><span class="k">Margin (USD)</span>`, // 1.0 − 0.1 + 0.9
		`Cost unknown for 2 settled today`,
		`Margin by alias, last 7 days`,
		`Lowest margins by tenant, last 7 days`,
		`<a href="/console/tenants?q=demo"><code>demo</code></a></th>`,
		// demo-video-fast over the week: charged 1.5 + 1.0 + 1.0, cost 0.5 + 0.1 + 0.1
		`<code>demo-video-fast</code></th>
      <td class="num" data-label="Settled">3</td>
      <td class="num" data-label="Charged">3.50 USD</td>
      <td class="num" data-label="Cost">0.70 USD</td>
      <td class="num" data-label="Margin">2.80 USD</td>`,
		`<td class="num" data-label="Margin"><span class="badge failed">-0.10 USD</span></td>`,
		`<code>demo-unpriced</code></th>
      <td class="num" data-label="Settled">2</td>
      <td class="num" data-label="Charged">1.00 USD</td>
      <td class="num" data-label="Cost"><span class="muted">unknown</span></td>`,
	} {
		if !strings.Contains(p.body, want) {
			t.Errorf("overview lacks %q", want)
		}
	}
	if got := statValue(t, p.body, "stat-tasks"); got != "5" {
		t.Errorf("settled today %s, want 5", got)
	}
}
