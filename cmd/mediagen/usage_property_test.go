package main

import (
	"context"
	"reflect"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// checkUsageAgreesWithLedger: after a run through the real services (every route, success,
// failure, expiry, speech), the usage rollups the settlements kept agree with the ledger to the
// micro-unit: per key the charged total is the key's spent account (Balance.Used), the
// overage the ledger's, the counts the terminal tasks by status and the settled speech
// records; and RebuildUsage (the migration's SQL backfill) rebuilds the same rows.
func checkUsageAgreesWithLedger(t *testing.T, db store.Store, keyIDs []string, taskOutcomes map[string]int, speeches int) {
	t.Helper()
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Hour)
	q := store.UsageQuery{From: now.Add(-48 * time.Hour), To: now.Add(48 * time.Hour),
		GroupBy: []string{store.UsageByHour, store.UsageByTenant, store.UsageByKey, store.UsageByAlias, store.UsageByRoute, store.UsageByUpstream, store.UsageByOutcome}}
	rows, err := db.UsageReport(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	charged, overage := map[string]money.Micros{}, map[string]money.Micros{}
	outcomes := map[string]int{}
	var speechRows int
	for _, r := range rows {
		charged[r.KeyID] += r.Charged
		overage[r.KeyID] += r.Overage
		if r.Route == "speech" {
			speechRows += int(r.Count)
			continue
		}
		status := r.Outcome
		if status == store.OutcomeSucceeded {
			status = store.StatusCompleted
		}
		outcomes[status] += int(r.Count)
	}
	for _, id := range keyIDs {
		b, err := db.Balance(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		over, err := db.Overage(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if charged[id] != b.Used || overage[id] != over {
			t.Errorf("key %s: usage charged %s overage %s; the ledger's spent %s, overage %s", id, charged[id], overage[id], b.Used, over)
		}
	}
	want := map[string]int{}
	for k, v := range taskOutcomes {
		if v > 0 {
			want[k] = v
		}
	}
	if !reflect.DeepEqual(outcomes, want) || speechRows != speeches {
		t.Errorf("usage counts tasks %v and %d speech records; the run ended tasks %v and %d speech records", outcomes, speechRows, want, speeches)
	}
	if err := db.RebuildUsage(ctx); err != nil {
		t.Fatal(err)
	}
	rebuilt, err := db.UsageReport(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rows, rebuilt) {
		t.Errorf("the rebuilt rollups differ from the settlements':\n%+v\n%+v", rows, rebuilt)
	}
	t.Logf("usage rollups: %d rows agree with the ledger of %d keys", len(rows), len(keyIDs))
}
