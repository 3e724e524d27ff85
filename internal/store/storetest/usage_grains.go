package storetest

import (
	"fmt"
	"testing"
	"time"

	"mediagen/internal/store"
)

// grainQueries are reports each coarser grain answers (sqldb.usageGrains: per alias, per
// tenant), and some with a tenant's filter. CheckUsageGrains checks each against the per-key
// rows.
var grainQueries = []struct {
	groups []string
	tenant bool // filtered by the first tenant of the range
}{
	{groups: []string{store.UsageByDay, store.UsageByAlias, store.UsageByRoute, store.UsageByUpstream, store.UsageByOutcome}},
	{groups: []string{store.UsageByHour, store.UsageByAlias, store.UsageByOutcome}},
	{groups: []string{store.UsageByRoute, store.UsageByOutcome}},
	{groups: []string{store.UsageByOutcome}},
	{groups: []string{store.UsageByDay, store.UsageByTenant, store.UsageByOutcome}},
	{groups: []string{store.UsageByHour, store.UsageByTenant, store.UsageByOutcome}},
	{groups: []string{store.UsageByTenant, store.UsageByOutcome}},
	{groups: []string{store.UsageByDay, store.UsageByOutcome}, tenant: true},
	{groups: []string{store.UsageByAlias, store.UsageByOutcome}, tenant: true},
}

// CheckUsageGrains fails unless every report of grainQueries over [from, to) equals the
// per-key hourly rows of that range summed in Go: the coarser grains (and their slots) add up
// to exactly what the per-key rows do, however they were made (settlements, the migration's
// backfill, a rebuild of everything or of a range).
func CheckUsageGrains(t *testing.T, s store.Store, from, to time.Time) {
	t.Helper()
	all := []string{store.UsageByHour, store.UsageByTenant, store.UsageByKey, store.UsageByAlias, store.UsageByRoute,
		store.UsageByUpstream, store.UsageByOutcome}
	base := report(t, s, store.UsageQuery{From: from, To: to, GroupBy: all})
	if len(base) == 0 {
		t.Fatalf("%s..%s: no per-key rows to check the grains against", from, to)
	}
	tenant := base[0].TenantID
	for _, q := range grainQueries {
		label := fmt.Sprintf("%v", q.groups)
		uq := store.UsageQuery{From: from, To: to, GroupBy: q.groups}
		if q.tenant {
			uq.TenantID, label = tenant, label+" of "+tenant
		}
		want := map[store.UsageRow]store.UsageFigures{}
		for _, r := range base {
			if q.tenant && r.TenantID != tenant {
				continue
			}
			k := project(r, q.groups)
			f := want[k]
			f.Add(r.UsageFigures)
			want[k] = f
		}
		got := report(t, s, uq)
		if len(got) != len(want) {
			t.Errorf("%s: %d rows, the per-key rows make %d", label, len(got), len(want))
		}
		for _, r := range got {
			f := r.UsageFigures
			r.UsageFigures = store.UsageFigures{}
			if w, ok := want[r]; !ok || w != f {
				t.Errorf("%s: row %+v has %+v, the per-key rows sum to %+v", label, r, f, w)
			}
		}
	}
}

// project keeps the dimensions of r that groups name (and the currencies), its bucket cut to
// the day or hour grouped by.
func project(r store.UsageRow, groups []string) store.UsageRow {
	out := store.UsageRow{Currency: r.Currency, CostCurrency: r.CostCurrency}
	for _, g := range groups {
		switch g {
		case store.UsageByTenant:
			out.TenantID = r.TenantID
		case store.UsageByKey:
			out.KeyID = r.KeyID
		case store.UsageByAlias:
			out.Alias = r.Alias
		case store.UsageByRoute:
			out.Route = r.Route
		case store.UsageByUpstream:
			out.Upstream = r.Upstream
		case store.UsageByOutcome:
			out.Outcome = r.Outcome
		case store.UsageByDay:
			out.Bucket = r.Bucket.UTC().Truncate(24 * time.Hour)
		case store.UsageByHour:
			out.Bucket = r.Bucket
		}
	}
	return out
}

// testUsageRebuildOfARangeRewritesItAlone: rows damaged on two days are put right by a rebuild
// of the second day alone, at every grain, and the first day's damage stays: the rebuild
// wrote that day's rows, no others.
func testUsageRebuildOfARangeRewritesItAlone(t *testing.T, s store.Store) {
	ctx := t.Context()
	want := SettleWithoutUsage(t, s) // records settled on 2026-11-01, no rows yet
	if err := s.RebuildUsage(ctx); err != nil {
		t.Fatal(err)
	}
	day := usageAt.Truncate(24 * time.Hour) // 2026-11-01
	bogus := func(at time.Time) store.UsageDelta {
		return delta(at, "acme", "k-bogus", "a", "native", store.OutcomeSucceeded, 777)
	}
	addUsage(t, s, bogus(day.Add(-2*time.Hour)), bogus(day.Add(3*time.Hour)))
	if err := s.RebuildUsageRange(ctx, day, day.Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	CheckUsageRows(t, s, want) // the day of the records: as settled, the bogus row gone
	CheckUsageGrains(t, s, day.Add(-24*time.Hour), day.Add(48*time.Hour))
	before := report(t, s, store.UsageQuery{From: day.Add(-24 * time.Hour), To: day, GroupBy: []string{store.UsageByKey}})
	if len(before) != 1 || before[0].KeyID != "k-bogus" || before[0].Charged != 777 {
		t.Errorf("the day before the range: %+v, want the bogus row left as it was", before)
	}
	for _, r := range []struct{ from, to time.Time }{{day.Add(time.Hour), day.Add(25 * time.Hour)}, {day, day}} {
		if err := s.RebuildUsageRange(ctx, r.from, r.to); err == nil {
			t.Errorf("a rebuild of %s..%s (not whole days) was taken", r.from, r.to)
		}
	}
}

// UsageAt is the hour SettleWithoutUsage's records are settled around.
var UsageAt = usageAt
