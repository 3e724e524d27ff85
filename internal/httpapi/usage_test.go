package httpapi

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/usage"
)

// addUsageRows adds one settled task of each outcome for the key, on two aliases and days.
func addUsageRows(t *testing.T, s store.Store, k store.Key, charged money.Micros) {
	t.Helper()
	ctx := context.Background()
	day := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	var ds []store.UsageDelta
	for i, outcome := range []string{store.OutcomeSucceeded, store.OutcomeFailed, store.OutcomeSucceeded} {
		f := store.UsageFigures{Count: 1, Reserved: 500_000, Refunded: 500_000}
		if outcome == store.OutcomeSucceeded {
			f = store.UsageFigures{Count: 1, Reserved: 500_000, Charged: 432_000 + charged, Refunded: 68_000 - charged, Tokens: 108_000, SecondsMicros: 5_042_000}
		}
		d := store.UsageDelta{
			UsageKey: store.UsageKey{Hour: day.Add(time.Duration(i) * 8 * time.Hour), TenantID: k.TenantID, KeyID: k.ID,
				Alias: "demo-video-2.5", Route: "native", Upstream: "sandbox", Currency: "USD", Outcome: outcome},
			UsageFigures: f}
		if i == 0 { // the operator's cost of one task: never shown to the tenant
			d.CostCurrency, d.Cost = "USD", 123_456
		}
		ds = append(ds, d)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.AddUsage(ctx, ds...) }); err != nil {
		t.Fatal(err)
	}
}

// TestUsageShowsOnlyTheCallingKeysFigures: GET /v1/billing/usage answers the calling key's
// own rollups; another key's (of the same tenant) never appear, and no parameter reaches them.
func TestUsageShowsOnlyTheCallingKeysFigures(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	mine, me := e.newKey("demo", 0, false)
	other, them := e.newKey("demo", 0, false)
	addUsageRows(t, e.store, me, 0)
	addUsageRows(t, e.store, them, 1_000) // different amounts, so a leak would show
	auth := map[string]string{"Authorization": "Bearer " + mine}
	r := e.do("GET", "/v1/billing/usage?from=2026-11-01&to=2026-11-30&group_by=day,alias", auth, "")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var rep usage.Report
	if err := json.Unmarshal(r.body, &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Object != "billing.usage" || len(rep.Data) != 2 || len(rep.Totals) != 1 {
		t.Fatalf("report %s", r.body)
	}
	if d := rep.Data[0]; d.Day != "2026-11-02" || d.Alias != "demo-video-2.5" || d.Count != 2 || d.Succeeded != 1 || d.Failed != 1 || d.Charged != 432_000 {
		t.Errorf("first day %+v", d)
	}
	if tot := rep.Totals[0]; tot.Count != 3 || tot.Charged != 864_000 || tot.Reserved != 1_500_000 || tot.Refunded != 636_000 {
		t.Errorf("totals %+v", tot)
	}
	for _, leak := range []string{them.ID, "tenant", "upstream", "sandbox", "cost", "margin", "0.123456"} {
		if strings.Contains(string(r.body), leak) {
			t.Errorf("the answer shows %q: %s", leak, r.body)
		}
	}
	if hasJSONNull(r.body) {
		t.Errorf("the answer holds a null: %s", r.body)
	}
	// The other key sees its own figures.
	r = e.do("GET", "/v1/billing/usage?from=2026-11-01&to=2026-11-30", map[string]string{"Authorization": "Bearer " + other}, "")
	if r.status != 200 || !strings.Contains(string(r.body), `"charged":0.866`) {
		t.Errorf("other key: %d %s", r.status, r.body)
	}
	// Nothing selects another key, tenant or account.
	for _, c := range []struct{ query, param string }{
		{"from=2026-11-01&key=" + them.ID, "key"},
		{"from=2026-11-01&tenant=demo", "tenant"},
		{"from=2026-11-01&group_by=key", "group_by"},
		{"from=2026-11-01&group_by=upstream", "group_by"},
		{"from=2026-11-01&group_by=day,hour", "group_by"},
		{"from=2026-11-01&format=csv", "format"},
		{"to=2026-11-30", "from"},
		{"from=2026-11-01T10:30:00Z", "from"},
		{"from=2026-11-30&to=2026-11-01", "to"},
		{"from=2020-01-01&to=2026-11-01", "to"},
	} {
		r := e.do("GET", "/v1/billing/usage?"+c.query, auth, "")
		checkEnvelope(t, r, 400, "invalid_request_error", "invalid_request_error")
		if !strings.Contains(string(r.body), `"param":"`+c.param+`"`) {
			t.Errorf("%s: %s, want param %s", c.query, r.body, c.param)
		}
	}
	checkEnvelope(t, e.do("GET", "/v1/billing/usage?from=2026-11-01", nil, ""), 401, "authentication_error", "missing_api_key")
	// An empty range is an empty report, not an error.
	r = e.do("GET", "/v1/billing/usage?from=2026-10-01&to=2026-10-31&group_by=day", auth, "")
	if r.status != 200 || !strings.Contains(string(r.body), `"data":[]`) || !strings.Contains(string(r.body), `"totals":[]`) {
		t.Errorf("empty range: %d %s", r.status, r.body)
	}
}
