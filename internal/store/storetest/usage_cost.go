package storetest

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

// costAccounts are the accounts of testUsageCostStoredAndRolledUp: ark-cn prices tokens and
// 720p seconds, oai 720p seconds, tts characters; free has no cost block.
func costAccounts(name string) (catalog.UpstreamAccount, bool) {
	rate := func(m money.Micros) *catalog.Rate { r := catalog.Rate(m); return &r }
	switch name {
	case "ark-cn":
		return catalog.UpstreamAccount{Name: name, Kind: catalog.KindArk, Cost: &catalog.Cost{Currency: "USD",
			PerMillionTokens: rate(900_000), PerSecond: map[string]catalog.Rate{"720p": 20_000}}}, true
	case "oai":
		return catalog.UpstreamAccount{Name: name, Kind: catalog.KindOpenAI, Cost: &catalog.Cost{Currency: "USD",
			PerSecond: map[string]catalog.Rate{"720p": 100_000}}}, true
	case "tts":
		return catalog.UpstreamAccount{Name: name, Kind: catalog.KindOpenAI, Cost: &catalog.Cost{Currency: "USD", PerCharacter: rate(15)}}, true
	case "free":
		return catalog.UpstreamAccount{Name: name, Kind: catalog.KindFFmpeg}, true
	}
	return catalog.UpstreamAccount{}, false
}

// testUsageCostStoredAndRolledUp settles tasks and speech records on accounts with and
// without a cost through the settlement path (billing.WithTaskCost, WithSpeechCost,
// SettleUsage): the report sums the cost per account and cost currency, an unknown cost
// stays apart (cost currency "", no margin), and RebuildUsage, which reads the cost columns
// the settlement stored on each record, rebuilds exactly the same rows.
func testUsageCostStoredAndRolledUp(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	if err := credit(ctx, s, k, 1_000_000_000); err != nil {
		t.Fatal(err)
	}
	at := usageAt.Add(-5 * time.Hour)
	for i, c := range []struct {
		route, request, status, result string
		charged                        money.Micros
	}{
		// 108,900 tokens × 0.9 per million = 0.09801
		{"native", `{"upstream":"ark-cn","request":{"Native":{"Resolution":"720p"}}}`, store.StatusCompleted, `{"duration":5.042,"completion_tokens":108900}`, 200_000},
		// no tokens: 4 s at 720p × 0.1 = 0.4
		{"native", `{"upstream":"oai","request":{"Native":{"Resolution":"720p"}}}`, store.StatusCompleted, `{"duration":4}`, 500_000},
		// production: the generation resolution (720p) prices it, not the output's 4k: 5.042 s × 0.02 = 0.10084
		{"production", `{"upstream":"ark-cn","generate_resolution":"720p"}`, store.StatusCompleted, `{"duration":5.042}`, 300_000},
		// failed on a priced account: 0, known
		{"native", `{"upstream":"ark-cn"}`, store.StatusFailed, ``, 0},
		// no cost block: unknown
		{"native", `{"upstream":"free","request":{"Native":{"Resolution":"720p"}}}`, store.StatusCompleted, `{"duration":4}`, 400_000},
		// a resolution the block does not price: unknown
		{"native", `{"upstream":"oai","request":{"Native":{"Resolution":"1080p"}}}`, store.StatusCompleted, `{"duration":4}`, 600_000},
	} {
		task := newTask(k, "")
		task.Route, task.Model = c.route, "alias-"+c.route
		task.Request, task.Pricing, task.Reserved = []byte(c.request), []byte(`{"currency":"USD"}`), 1_000_000
		now := at.Add(time.Duration(i) * time.Minute)
		if err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateTask(ctx, task); err != nil {
				return err
			}
			return tx.Post(ctx, store.Txn{ID: fmt.Sprintf("txn_c_%d", seq.Add(1)), Kind: "reserve", Ref: task.ID, Entries: []store.Entry{
				{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -task.Reserved},
				{Account: store.AccountID(k.ID, store.AccountReserved), Amount: task.Reserved}}})
		}); err != nil {
			t.Fatal(err)
		}
		if err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.AdvanceTask(ctx, store.Advance{ID: task.ID, Status: c.status, Result: []byte(c.result), Charged: c.charged, FinishedAt: now, Step: "done"}); err != nil {
				return err
			}
			settled := task
			settled.Status, settled.Charged, settled.Result, settled.FinishedAt = c.status, c.charged, []byte(c.result), now
			_, err := billing.SettleUsage(ctx, tx, task.ID, billing.WithTaskCost(billing.TaskUsage(settled), settled, 0, costAccounts), now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	for i, upstream := range []string{"tts", "free"} {
		sp := newSpeech(k, "", time.Now().Add(time.Minute))
		sp.Request, sp.Pricing, sp.Reserved = []byte(`{"upstream":"`+upstream+`"}`), []byte(`{"currency":"USD","characters":42}`), 1_000
		if err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.CreateSpeech(ctx, sp); err != nil {
				return err
			}
			return tx.Post(ctx, store.Txn{ID: fmt.Sprintf("txn_c_%d", seq.Add(1)), Kind: "reserve", Ref: sp.ID, Entries: []store.Entry{
				{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -sp.Reserved},
				{Account: store.AccountID(k.ID, store.AccountReserved), Amount: sp.Reserved}}})
		}); err != nil {
			t.Fatal(err)
		}
		now := at.Add(time.Duration(10+i) * time.Minute)
		result := []byte(`{"audio_key":"a","duration_us":1500000}`)
		if err := s.Transact(ctx, func(tx store.Tx) error {
			if err := tx.FinishSpeech(ctx, store.SpeechFinish{ID: sp.ID, Token: sp.AttemptToken, Status: store.SpeechCompleted, Charged: 900, Result: result, FinishedAt: now}); err != nil {
				return err
			}
			settled := sp
			settled.Status, settled.Charged, settled.Result, settled.FinishedAt = store.SpeechCompleted, 900, result, now
			_, err := billing.SettleUsage(ctx, tx, sp.ID, billing.WithSpeechCost(billing.SpeechUsage(settled), settled, costAccounts), now)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	q := store.UsageQuery{From: at.Add(-24 * time.Hour), To: at.Add(24 * time.Hour), GroupBy: []string{store.UsageByUpstream}}
	type row struct {
		upstream, costCurrency string
		count                  int64
		charged, cost          money.Micros
	}
	want := []row{
		{"ark-cn", "USD", 3, 500_000, 98_010 + 100_840},
		{"free", "", 2, 400_900, 0},
		{"oai", "", 1, 600_000, 0},
		{"oai", "USD", 1, 500_000, 400_000},
		{"tts", "USD", 1, 900, 42 * 15},
	}
	check := func(label string) []store.UsageRow {
		t.Helper()
		rows := report(t, s, q)
		var got []row
		for _, r := range rows {
			got = append(got, row{r.Upstream, r.CostCurrency, r.Count, r.Charged, r.Cost})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: rows by upstream\n%v\nwant\n%v", label, got, want)
		}
		return rows
	}
	rows := check("settled")
	for _, r := range rows {
		m, ok := r.Margin()
		if ok != (r.CostCurrency != "") || ok && m != r.Charged-r.Cost {
			t.Errorf("margin of %s/%q: %s %v", r.Upstream, r.CostCurrency, m, ok)
		}
	}
	// Every dimension and the day rows agree after a rebuild from the records' cost columns.
	all := store.UsageQuery{From: usageAt.Add(-48 * time.Hour), To: usageAt.Add(48 * time.Hour), GroupBy: []string{store.UsageByDay,
		store.UsageByTenant, store.UsageByKey, store.UsageByAlias, store.UsageByRoute, store.UsageByUpstream, store.UsageByOutcome}}
	before := report(t, s, all)
	CheckUsageGrains(t, s, all.From, all.To)
	if err := s.RebuildUsage(ctx); err != nil {
		t.Fatal(err)
	}
	check("rebuilt")
	CheckUsageGrains(t, s, all.From, all.To)
	if after := report(t, s, all); !reflect.DeepEqual(after, before) {
		t.Errorf("rebuilt rows differ:\n%+v\nsettled:\n%+v", after, before)
	}
}
