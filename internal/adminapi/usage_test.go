package adminapi

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"net/http"
	"strings"
	"testing"
	"time"

	"mediagen/internal/store"
)

// TestUsageReportForViewersRebuildForOwners: GET /admin/v1/usage answers viewers in JSON and
// in CSV with formula cells neutralised; bad parameters are 400 with param; POST
// /admin/v1/usage/rebuild is refused to operators with nothing written, and for owners
// rebuilds the rollups from the settled records (none here) with one audit entry.
func TestUsageReportForViewersRebuildForOwners(t *testing.T) {
	forEachStore(t, func(t *testing.T, e *env) {
		ctx := context.Background()
		h := sha256.Sum256([]byte("usage-" + t.Name()))
		hour := time.Date(2026, 11, 2, 9, 0, 0, 0, time.UTC)
		err := e.st.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateKey(ctx, store.Key{ID: "key_formula", TenantID: "demo", Name: "=HYPERLINK(\"http://x\")", Prefix: "mg_f", Hash: h[:], CreatedAt: hour}, "USD"); err != nil {
				return err
			}
			return tx.AddUsage(ctx,
				store.UsageDelta{UsageKey: store.UsageKey{Hour: hour, TenantID: "demo", KeyID: "key_formula", Alias: "+alias", Route: "native", Upstream: "sandbox", Currency: "USD", Outcome: store.OutcomeSucceeded},
					UsageFigures: store.UsageFigures{Count: 2, Reserved: 3_000_000, Charged: 2_500_000, Refunded: 500_000, Tokens: 7}},
				store.UsageDelta{UsageKey: store.UsageKey{Hour: hour.Add(26 * time.Hour), TenantID: "demo", KeyID: "key_formula", Alias: "+alias", Route: "native", Upstream: "sandbox", Currency: "USD", Outcome: store.OutcomeFailed},
					UsageFigures: store.UsageFigures{Count: 1, Reserved: 1_000_000, Refunded: 1_000_000}},
				// a cost above the charge: a negative margin
				store.UsageDelta{UsageKey: store.UsageKey{Hour: hour, TenantID: "demo", KeyID: "key_formula", Alias: "priced", Route: "native", Upstream: "ark", Currency: "USD", Outcome: store.OutcomeSucceeded, CostCurrency: "USD"},
					UsageFigures: store.UsageFigures{Count: 1, Reserved: 1_000_000, Charged: 1_000_000, Cost: 1_250_000}})
		})
		if err != nil {
			t.Fatal(err)
		}
		r := e.do("GET", "/admin/v1/usage?from=2026-11-01&to=2026-11-30&group_by=tenant,key,alias,upstream,day", e.viewer, "", "")
		if r.status != 200 {
			t.Fatalf("viewer: %d %s", r.status, r.body)
		}
		for _, want := range []string{`"key_name":"=HYPERLINK(\"http://x\")"`, `"upstream":"sandbox"`, `"day":"2026-11-03"`, `"charged":2.5`, `"refunded":1.5`,
			`"cost":{"known":false}`, `"upstream":"ark","currency":"USD","count":1,"succeeded":1,"failed":0,"expired":0,"seconds":0,"tokens":0,"characters":0,"reserved":1,"charged":1,"overage":0,"refunded":0,"cost":{"known":true,"currency":"USD","amount":1.25,"margin":-0.25}}`} {
			if !strings.Contains(string(r.body), want) {
				t.Errorf("json lacks %s: %s", want, r.body)
			}
		}
		r = e.do("GET", "/admin/v1/usage?from=2026-11-01&to=2026-11-30&group_by=key,alias&format=csv", e.viewer, "", "")
		if r.status != 200 || r.header.Get("Content-Type") != "text/csv; charset=utf-8" {
			t.Fatalf("csv: %d %v %s", r.status, r.header, r.body)
		}
		recs, err := csv.NewReader(strings.NewReader(string(r.body))).ReadAll()
		if err != nil || len(recs) != 3 {
			t.Fatalf("csv %v: %s", err, r.body)
		}
		if got := strings.Join(recs[1], "|"); got != `key_formula|'=HYPERLINK("http://x")|'+alias|USD|3|2|1|0|0|7|0|4|2.5|0|1.5||unknown|unknown` {
			t.Errorf("csv row %s", got)
		}
		if got := strings.Join(recs[2], "|"); got != `key_formula|'=HYPERLINK("http://x")|priced|USD|1|1|0|0|0|0|0|1|1|0|0|USD|1.25|-0.25` {
			t.Errorf("csv row with a cost %s", got)
		}
		for _, c := range []struct{ query, param string }{
			{"from=2026-11-01&group_by=week", "group_by"},
			{"from=2026-11-01&format=xml", "format"},
			{"from=2020-01-01&to=2026-11-01", "to"},
			{"from=2026-11-01T10:15:00Z", "from"},
			{"from=2026-11-01&color=red", "color"},
		} {
			r := e.do("GET", "/admin/v1/usage?"+c.query, e.viewer, "", "")
			if code, param := r.errCodeParam(t); r.status != 400 || code != "invalid_request_error" || param != c.param {
				t.Errorf("%s: %d %s, want 400 with param %s", c.query, r.status, r.body, c.param)
			}
		}
		before := e.snap()
		if r := e.write("/admin/v1/usage/rebuild", e.oper, ""); r.status != http.StatusForbidden {
			t.Errorf("operator rebuild: %d %s", r.status, r.body)
		}
		if e.snap() != before {
			t.Error("a refused rebuild wrote")
		}
		if r := e.write("/admin/v1/usage/rebuild", e.owner, ""); r.status != 200 || !strings.Contains(string(r.body), `"object":"usage.rebuild"`) {
			t.Fatalf("owner rebuild: %d %s", r.status, r.body)
		}
		if got := e.auditCount(); got != before.audit+1 {
			t.Errorf("audit entries %d, want %d", got, before.audit+1)
		}
		// No task or speech record was settled: the rebuilt rollups are empty.
		r = e.do("GET", "/admin/v1/usage?from=2026-11-01&to=2026-11-30", e.viewer, "", "")
		if r.status != 200 || !strings.Contains(string(r.body), `"data":[]`) {
			t.Errorf("after the rebuild: %d %s", r.status, r.body)
		}
	})
}
