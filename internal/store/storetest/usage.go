package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// usageAt is a fixed UTC time, so hour and day buckets are known.
var usageAt = time.Date(2026, 11, 1, 23, 0, 0, 0, time.UTC)

func delta(hour time.Time, tenant, key, alias, route, outcome string, charged money.Micros) store.UsageDelta {
	return store.UsageDelta{
		UsageKey:     store.UsageKey{Hour: hour, TenantID: tenant, KeyID: key, Alias: alias, Route: route, Upstream: "acct-" + alias, Currency: "USD", Outcome: outcome},
		UsageFigures: store.UsageFigures{Count: 1, SecondsMicros: 5_000_000, Tokens: 100, Characters: 7, Reserved: charged + 10, Charged: charged, Refunded: 10},
	}
}

func addUsage(t *testing.T, s store.Store, ds ...store.UsageDelta) {
	t.Helper()
	ctx := t.Context()
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.AddUsage(ctx, ds...) }); err != nil {
		t.Fatal(err)
	}
}

func report(t *testing.T, s store.Store, q store.UsageQuery) []store.UsageRow {
	t.Helper()
	rows, err := s.UsageReport(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// testUsageUpsertSumsPerHour: deltas of one row add up in it (one upsert each, inside and
// across transactions); the hour bucket is the UTC hour, so 10:59:59.999999 and 11:00 are two
// rows; a rolled-back transaction adds nothing.
func testUsageUpsertSumsPerHour(t *testing.T, s store.Store) {
	ctx := t.Context()
	h := usageAt.Add(-12 * time.Hour) // 11:00 UTC
	addUsage(t, s, delta(h.Add(-time.Microsecond), "acme", "k1", "a", "native", store.OutcomeSucceeded, 100))
	addUsage(t, s, delta(h, "acme", "k1", "a", "native", store.OutcomeSucceeded, 100),
		delta(h.Add(59*time.Minute), "acme", "k1", "a", "native", store.OutcomeSucceeded, 50))
	addUsage(t, s, delta(h.Add(30*time.Minute).In(time.FixedZone("UTC+5", 5*3600)), "acme", "k1", "a", "native", store.OutcomeSucceeded, 1))
	if err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.AddUsage(ctx, delta(h, "acme", "k1", "a", "native", store.OutcomeSucceeded, 1_000_000)); err != nil {
			return err
		}
		return fmt.Errorf("roll back")
	}); err == nil {
		t.Fatal("the rolled-back transaction committed")
	}
	rows := report(t, s, store.UsageQuery{From: h.Add(-time.Hour), To: h.Add(time.Hour), GroupBy: []string{store.UsageByHour}})
	if len(rows) != 2 {
		t.Fatalf("rows %+v, want two hours", rows)
	}
	if !rows[0].Bucket.Equal(h.Add(-time.Hour)) || rows[0].Count != 1 || rows[0].Charged != 100 {
		t.Errorf("10:00 row %+v", rows[0])
	}
	want := store.UsageFigures{Count: 3, SecondsMicros: 15_000_000, Tokens: 300, Characters: 21, Reserved: 181, Charged: 151, Refunded: 30}
	if !rows[1].Bucket.Equal(h) || rows[1].UsageFigures != want || rows[1].Currency != "USD" {
		t.Errorf("11:00 row %+v, want %+v", rows[1], want)
	}
	// [From, To) is half open.
	if rows := report(t, s, store.UsageQuery{From: h, To: h.Add(time.Hour)}); len(rows) != 1 || rows[0].Count != 3 {
		t.Errorf("11:00 alone: %+v", rows)
	}
	if rows := report(t, s, store.UsageQuery{From: h.Add(time.Hour), To: h.Add(48 * time.Hour)}); len(rows) != 0 {
		t.Errorf("empty range: %+v", rows)
	}
}

// testUsageReportGroupsAndFilters: every dimension groups, day buckets end at UTC midnight,
// and the tenant and key filters select only their rows.
func testUsageReportGroupsAndFilters(t *testing.T, s store.Store) {
	day1 := usageAt // 2026-11-01 23:00
	day2 := usageAt.Add(time.Hour)
	addUsage(t, s,
		delta(day1, "acme", "k1", "a", "native", store.OutcomeSucceeded, 100),
		delta(day1, "acme", "k1", "b", "production", store.OutcomeFailed, 0),
		delta(day2, "acme", "k2", "a", "native", store.OutcomeSucceeded, 200),
		delta(day2, "bolt", "k3", "c", "speech", store.OutcomeExpired, 0),
	)
	q := store.UsageQuery{From: day1.Add(-23 * time.Hour), To: day2.Add(24 * time.Hour)}
	count := func(rows []store.UsageRow) (n int64, charged money.Micros) {
		for _, r := range rows {
			n, charged = n+r.Count, charged+r.Charged
		}
		return
	}
	cases := []struct {
		group string
		want  []string
	}{
		{store.UsageByTenant, []string{"acme", "bolt"}},
		{store.UsageByKey, []string{"k1", "k2", "k3"}},
		{store.UsageByAlias, []string{"a", "b", "c"}},
		{store.UsageByRoute, []string{"native", "production", "speech"}},
		{store.UsageByUpstream, []string{"acct-a", "acct-b", "acct-c"}},
		{store.UsageByOutcome, []string{store.OutcomeExpired, store.OutcomeFailed, store.OutcomeSucceeded}},
		{store.UsageByDay, []string{"2026-11-01", "2026-11-02"}},
		{store.UsageByHour, []string{"2026-11-01T23", "2026-11-02T00"}},
	}
	for _, c := range cases {
		q := q
		q.GroupBy = []string{c.group}
		rows := report(t, s, q)
		var got []string
		for _, r := range rows {
			v := map[string]string{store.UsageByTenant: r.TenantID, store.UsageByKey: r.KeyID, store.UsageByAlias: r.Alias,
				store.UsageByRoute: r.Route, store.UsageByUpstream: r.Upstream, store.UsageByOutcome: r.Outcome,
				store.UsageByDay: r.Bucket.Format("2006-01-02"), store.UsageByHour: r.Bucket.Format("2006-01-02T15")}[c.group]
			got = append(got, v)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("group by %s: %v, want %v", c.group, got, c.want)
		}
		if n, charged := count(rows); n != 4 || charged != 300 {
			t.Errorf("group by %s: %d counted, %s charged; want 4 and 300", c.group, n, charged)
		}
	}
	q.GroupBy = []string{store.UsageByDay, store.UsageByAlias, store.UsageByOutcome}
	if rows := report(t, s, q); len(rows) != 4 {
		t.Errorf("day, alias and outcome: %d rows, want 4", len(rows))
	}
	tq := q
	tq.GroupBy, tq.TenantID = []string{store.UsageByKey}, "acme"
	if rows := report(t, s, tq); len(rows) != 2 || rows[0].KeyID != "k1" || rows[1].KeyID != "k2" {
		t.Errorf("tenant filter: %+v", rows)
	}
	kq := q
	kq.GroupBy, kq.KeyID = nil, "k2"
	if rows := report(t, s, kq); len(rows) != 1 || rows[0].Count != 1 || rows[0].Charged != 200 {
		t.Errorf("key filter: %+v", rows)
	}
}

// testUsageAgreesWithTheLedger settles a mix of video tasks and speech records through the
// settlement path (billing.SettleUsage): completed, failed and expired tasks, completed and
// failed speech, and a charge above its reservation (overage). Per key the report's charged
// total is the key's spent account, its overage the ledger's, its counts the records by
// status; and RebuildUsage (the migration's backfill in SQL) rebuilds the same rows.
func testUsageAgreesWithTheLedger(t *testing.T, s store.Store) {
	ctx := t.Context()
	keys := []store.Key{newKey(t, s, "acme", false), newKey(t, s, "acme", false), newKey(t, s, "bolt", false)}
	for _, k := range keys {
		if err := credit(ctx, s, k, 1_000_000_000); err != nil {
			t.Fatal(err)
		}
	}
	reserve := func(tx store.Tx, k store.Key, ref string, amount money.Micros) error {
		return tx.Post(ctx, store.Txn{ID: fmt.Sprintf("txn_r_%d", seq.Add(1)), Kind: "reserve", Ref: ref, Entries: []store.Entry{
			{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -amount},
			{Account: store.AccountID(k.ID, store.AccountReserved), Amount: amount}}})
	}
	type want struct {
		charged, overage money.Micros
		byStatus         map[string]int64
	}
	wants := map[string]*want{}
	for _, k := range keys {
		wants[k.ID] = &want{byStatus: map[string]int64{}}
	}
	at := usageAt.Add(-30 * time.Hour)
	routes := []string{"native", "enhancement", "production"}
	for i := range 36 {
		k := keys[i%len(keys)]
		task := newTask(k, "")
		task.Route, task.Model = routes[i%3], fmt.Sprintf("alias-%d", i%2)
		task.Request = []byte(fmt.Sprintf(`{"upstream":"acct-%d","upstream_model":"m"}`, i%2))
		task.Pricing = []byte(`{"route":"native","currency":"USD","rate":1}`)
		task.Reserved = money.Micros(1_000 + i*37)
		status, charge, result := store.StatusCompleted, money.Micros(900+i*31), []byte(fmt.Sprintf(`{"video_key":"v","duration":%d.042,"fps":24,"width":1,"height":1,"completion_tokens":%d}`, i%7+1, 1000+i))
		switch i % 6 {
		case 1:
			status, charge, result = store.StatusFailed, 0, nil
		case 2:
			status, charge, result = store.StatusExpired, 0, nil
		case 3:
			charge = task.Reserved + 555 // above the reservation: overage
		}
		if err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateTask(ctx, task); err != nil {
				return err
			}
			return reserve(tx, k, task.ID, task.Reserved)
		}); err != nil {
			t.Fatal(err)
		}
		now := at.Add(time.Duration(i) * 97 * time.Minute) // across hours and days
		if err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.AdvanceTask(ctx, store.Advance{ID: task.ID, Status: status, Result: result, Charged: charge, FinishedAt: now, Step: "done"}); err != nil {
				return err
			}
			settled := task
			settled.Status, settled.Charged, settled.Result, settled.FinishedAt = status, charge, result, now
			_, err := billing.SettleUsage(ctx, tx, task.ID, billing.TaskUsage(settled), now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		w := wants[k.ID]
		w.charged += charge
		w.overage += max(charge-task.Reserved, 0)
		w.byStatus[status]++
	}
	for i := range 12 {
		k := keys[i%len(keys)]
		sp := newSpeech(k, "", time.Now().Add(time.Minute))
		sp.Request = []byte(`{"upstream":"espeak","upstream_model":"m"}`)
		sp.Pricing = []byte(fmt.Sprintf(`{"currency":"USD","rate":200,"characters":%d,"estimated_seconds":2,"amount":400}`, 10+i))
		sp.Reserved = 400
		if err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateSpeech(ctx, sp); err != nil {
				return err
			}
			return reserve(tx, k, sp.ID, sp.Reserved)
		}); err != nil {
			t.Fatal(err)
		}
		status, charge, result := store.SpeechCompleted, money.Micros(301+i), []byte(fmt.Sprintf(`{"audio_key":"a","duration_us":%d}`, 1_500_000+i))
		if i%4 == 1 {
			status, charge, result = store.SpeechFailed, 0, nil
		}
		now := at.Add(time.Duration(i) * 211 * time.Minute)
		if err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.FinishSpeech(ctx, store.SpeechFinish{ID: sp.ID, Token: sp.AttemptToken, Status: status, Charged: charge, Result: result, FinishedAt: now}); err != nil {
				return err
			}
			settled := sp
			settled.Status, settled.Charged, settled.Result, settled.FinishedAt = status, charge, result, now
			_, err := billing.SettleUsage(ctx, tx, sp.ID, billing.SpeechUsage(settled), now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		w := wants[k.ID]
		w.charged += charge
		w.byStatus["speech_"+status]++
	}
	CheckLedger(t, s)

	q := store.UsageQuery{From: at.Add(-time.Hour), To: at.Add(100 * time.Hour), GroupBy: []string{store.UsageByKey, store.UsageByRoute, store.UsageByOutcome}}
	check := func(label string, rows []store.UsageRow) {
		t.Helper()
		type got struct {
			charged, overage money.Micros
			byStatus         map[string]int64
		}
		gots := map[string]*got{}
		for _, r := range rows {
			g := gots[r.KeyID]
			if g == nil {
				g = &got{byStatus: map[string]int64{}}
				gots[r.KeyID] = g
			}
			g.charged += r.Charged
			g.overage += r.Overage
			status := map[string]string{store.OutcomeSucceeded: store.StatusCompleted}[r.Outcome]
			if status == "" {
				status = r.Outcome
			}
			if r.Route == "speech" {
				status = "speech_" + status
			}
			g.byStatus[status] += r.Count
			if r.Reserved != r.Charged-r.Overage+r.Refunded {
				t.Errorf("%s: row %+v: reserved is not charged − overage + refunded", label, r)
			}
		}
		for _, k := range keys {
			b, err := s.Balance(ctx, k.ID)
			if err != nil {
				t.Fatal(err)
			}
			over, err := s.Overage(ctx, k.ID)
			if err != nil {
				t.Fatal(err)
			}
			g, w := gots[k.ID], wants[k.ID]
			if g == nil {
				t.Fatalf("%s: key %s missing from the report", label, k.ID)
			}
			if g.charged != b.Used || g.charged != w.charged {
				t.Errorf("%s: key %s: report charged %s, ledger used %s, settled %s", label, k.ID, g.charged, b.Used, w.charged)
			}
			if g.overage != over || over != w.overage {
				t.Errorf("%s: key %s: report overage %s, ledger %s, settled %s", label, k.ID, g.overage, over, w.overage)
			}
			if !reflect.DeepEqual(g.byStatus, w.byStatus) {
				t.Errorf("%s: key %s: counts %v, want %v", label, k.ID, g.byStatus, w.byStatus)
			}
		}
	}
	settled := report(t, s, q)
	check("settlement path", settled)
	CheckUsageGrains(t, s, at.Add(-time.Hour), at.Add(100*time.Hour))
	CheckUsageGrains(t, s, at.Add(-5*time.Hour), at.Add(53*time.Hour)) // partial days at both ends
	checkDaysEqualHours(t, s, at.Truncate(24*time.Hour), at.Truncate(24*time.Hour).Add(72*time.Hour))
	checkDaysEqualHours(t, s, at.Add(-5*time.Hour), at.Add(53*time.Hour)) // partial days at both ends
	all := store.UsageQuery{From: at.Add(-time.Hour), To: at.Add(100 * time.Hour), GroupBy: []string{store.UsageByHour,
		store.UsageByTenant, store.UsageByKey, store.UsageByAlias, store.UsageByRoute, store.UsageByUpstream, store.UsageByOutcome}}
	before := report(t, s, all)
	for range 2 { // idempotent
		if err := s.RebuildUsage(ctx); err != nil {
			t.Fatal(err)
		}
	}
	check("rebuilt", report(t, s, q))
	CheckUsageGrains(t, s, at.Add(-time.Hour), at.Add(100*time.Hour))
	after := report(t, s, all)
	if len(after) != len(before) {
		t.Fatalf("rebuilt %d rollup rows, the settlement path made %d", len(after), len(before))
	}
	for i := range before {
		if !reflect.DeepEqual(before[i], after[i]) {
			t.Fatalf("rebuilt row %d differs from the settlement path's:\nsettled %+v\nrebuilt %+v", i, before[i], after[i])
		}
	}
}

// checkDaysEqualHours: a report grouped by day (whole days from usage_daily, partial ones
// from the hours) equals the hourly rows summed per day.
func checkDaysEqualHours(t *testing.T, s store.Store, from, to time.Time) {
	t.Helper()
	dims := []string{store.UsageByTenant, store.UsageByKey, store.UsageByAlias, store.UsageByRoute, store.UsageByUpstream, store.UsageByOutcome}
	days := report(t, s, store.UsageQuery{From: from, To: to, GroupBy: append([]string{store.UsageByDay}, dims...)})
	hours := report(t, s, store.UsageQuery{From: from, To: to, GroupBy: append([]string{store.UsageByHour}, dims...)})
	want := map[store.UsageRow]store.UsageFigures{}
	for _, r := range hours {
		f := r.UsageFigures
		r.UsageFigures, r.Bucket = store.UsageFigures{}, r.Bucket.Truncate(24*time.Hour)
		sum := want[r]
		sum.Add(f)
		want[r] = sum
	}
	if len(days) != len(want) || len(days) == 0 {
		t.Fatalf("%s..%s: %d day rows, %d from the hours", from, to, len(days), len(want))
	}
	for _, r := range days {
		f := r.UsageFigures
		r.UsageFigures = store.UsageFigures{}
		if want[r] != f {
			t.Errorf("%s..%s: day row %+v has %+v, the hours sum to %+v", from, to, r, f, want[r])
		}
	}
}

// SettleWithoutUsage writes terminal tasks and speech records the way a database settled them
// before the usage rollups existed (no rollup rows), including odd ones: a completed task
// without a result, a request that is not JSON. It returns what billing.TaskUsage and
// billing.SpeechUsage make of them, per rollup row: what a backfill must produce.
func SettleWithoutUsage(t *testing.T, s store.Store) map[store.UsageKey]store.UsageFigures {
	t.Helper()
	ctx := t.Context()
	k := newKey(t, s, "acme", true)
	want := map[store.UsageKey]store.UsageFigures{}
	add := func(d store.UsageDelta) {
		d.Hour = d.Hour.UTC().Truncate(time.Hour)
		f := want[d.UsageKey]
		f.Add(d.UsageFigures)
		want[d.UsageKey] = f
	}
	at := usageAt.Add(-5 * time.Hour)
	for i, c := range []struct {
		status, request, result string
		charged                 money.Micros
	}{
		{store.StatusCompleted, `{"upstream":"acct-a"}`, `{"video_key":"v","duration":5.042,"completion_tokens":108900}`, 900},
		{store.StatusCompleted, `{"upstream":"acct-a"}`, ``, 700},    // no result
		{store.StatusCompleted, `not json`, `{"duration":2}`, 1_300}, // above the reservation
		{store.StatusFailed, `{"upstream":"acct-b"}`, ``, 0},
		{store.StatusExpired, `{"upstream":"acct-b"}`, ``, 0},
	} {
		task := newTask(k, "")
		task.Request, task.Pricing, task.Reserved = []byte(c.request), []byte(`{"currency":"USD"}`), 1_000
		now := at.Add(time.Duration(i) * 50 * time.Minute)
		if err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateTask(ctx, task); err != nil {
				return err
			}
			return tx.AdvanceTask(ctx, store.Advance{ID: task.ID, Status: c.status, Result: []byte(c.result), Charged: c.charged, FinishedAt: now, Step: "done"})
		}); err != nil {
			t.Fatal(err)
		}
		task.Status, task.Charged, task.Result, task.FinishedAt = c.status, c.charged, []byte(c.result), now
		add(billing.TaskUsage(task))
	}
	for i, status := range []string{store.SpeechCompleted, store.SpeechFailed} {
		sp := newSpeech(k, "", time.Now().Add(time.Minute))
		sp.Request, sp.Pricing = []byte(`{"upstream":"espeak"}`), []byte(`{"currency":"USD","characters":42}`)
		createSpeech(t, s, sp)
		charged, result := money.Micros(0), []byte(nil)
		if status == store.SpeechCompleted {
			charged, result = 333, []byte(`{"audio_key":"a","duration_us":1666666}`)
		}
		now := at.Add(time.Duration(i) * 70 * time.Minute)
		if err := s.Transact(ctx, func(tx store.Tx) error {
			return tx.FinishSpeech(ctx, store.SpeechFinish{ID: sp.ID, Token: sp.AttemptToken, Status: status, Charged: charged, Result: result, FinishedAt: now})
		}); err != nil {
			t.Fatal(err)
		}
		sp.Status, sp.Charged, sp.Result, sp.FinishedAt = status, charged, result, now
		add(billing.SpeechUsage(sp))
	}
	return want
}

// CheckUsageRows fails unless the rollups of the day around SettleWithoutUsage's records are
// exactly want.
func CheckUsageRows(t *testing.T, s store.Store, want map[store.UsageKey]store.UsageFigures) {
	t.Helper()
	rows := report(t, s, store.UsageQuery{From: usageAt.Add(-24 * time.Hour), To: usageAt.Add(24 * time.Hour), GroupBy: []string{store.UsageByHour,
		store.UsageByTenant, store.UsageByKey, store.UsageByAlias, store.UsageByRoute, store.UsageByUpstream, store.UsageByOutcome}})
	got := map[store.UsageKey]store.UsageFigures{}
	for _, r := range rows {
		got[store.UsageKey{Hour: r.Bucket, TenantID: r.TenantID, KeyID: r.KeyID, Alias: r.Alias, Route: r.Route, Upstream: r.Upstream,
			Currency: r.Currency, Outcome: r.Outcome, CostCurrency: r.CostCurrency}] = r.UsageFigures
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("rollups:\n%v\nwant what the settlement path computes:\n%v", got, want)
	}
}

// testUsageRebuiltFromRecordsSettledWithoutRollups: records settled before the rollups
// existed are counted by RebuildUsage as the settlement path would have counted them.
func testUsageRebuiltFromRecordsSettledWithoutRollups(t *testing.T, s store.Store) {
	want := SettleWithoutUsage(t, s)
	CheckUsageRows(t, s, map[store.UsageKey]store.UsageFigures{})
	if err := s.RebuildUsage(t.Context()); err != nil {
		t.Fatal(err)
	}
	CheckUsageRows(t, s, want)
	CheckUsageGrains(t, s, usageAt.Add(-24*time.Hour), usageAt.Add(24*time.Hour))
}
