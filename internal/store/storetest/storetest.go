// Package storetest is the conformance suite every store driver must pass. The drivers' own
// tests call Run with a constructor; the same cases then run on SQLite and on PostgreSQL.
package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Opener returns a fresh, empty, migrated store; the suite closes it.
type Opener func(t *testing.T) store.Store

// Run runs the whole suite.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		fn   func(*testing.T, store.Store)
	}{
		{"KeysCreateFindListRevoke", testKeys},
		{"KeyDuplicateHashConflicts", testKeyConflict},
		{"CreditMovesMoneyAndBalances", testCredit},
		{"UnbalancedTransactionsRejected", testUnbalanced},
		{"OverdraftRejectedWithoutPartialChange", testOverdraft},
		{"UnlimitedKeyMayGoNegative", testUnlimited},
		{"OverageSumsOnlyOverageTransactionsOfTheKey", testOverage},
		{"ConcurrentCreditsAllLand", testConcurrentCredits},
		{"ConcurrentDebitsNeverOverdraw", testConcurrentDebits},
		{"TransactRollsBackOnErrorAndPanic", testTransactRollback},
		{"ConcurrentTransactionsKeepTheirOwnOutcome", testConcurrentMixedOutcomes},
		{"MetaSetOnce", testMeta},
		{"TaskCreateAndRead", testTaskCreateAndRead},
		{"TaskRequestIDUniquePerKey", testTaskRequestIDUnique},
		{"TaskReadsFollowWrites", testTaskReadsFollowWrites},
		{"TaskResultReplacedOnlyWhenCompleted", testTaskResultReplacedOnlyWhenCompleted},
		{"BalanceFollowsOwnPosts", testBalanceFollowsOwnPosts},
		{"QueueClaimLeaseAndFence", testQueueClaimLeaseAndFence},
		{"QueueConcurrentClaimersDisjoint", testQueueConcurrentClaimersDisjoint},
		{"QueueHeartbeatRenewsLease", testQueueRenewLease},
		{"JobsEnqueueClaimAndFencedUpdates", testJobsEnqueueClaimAndUpdate},
		{"JobsKindsAndQueuesIsolate", testJobsKindsAndQueuesIsolate},
		{"JobsEnsureInsertsOnce", testJobsEnsureInsertsOnce},
		{"JobsPriorityThenFairShareThenAge", testJobsPriorityAndFairShare},
		{"JobsWaitingTenantStartsAtNextFreeSlot", testJobsWaitingTenantStartsAtNextFreeSlot},
		{"JobsWaitingKeyStartsAtNextFreeSlot", testJobsWaitingKeyStartsAtNextFreeSlot},
		{"JobsWeightedTenantsShareByWeight", testJobsWeightedTenantsShareByWeight},
		{"ActiveTasksByRouteAndStatus", testActiveTasksByRouteAndStatus},
		{"SettlementMayOverdrawAvailableOnly", testSettlementMayOverdrawAvailableOnly},
		{"SpeechCreateAndRead", testSpeechCreateAndRead},
		{"SpeechRequestIDUniquePerKey", testSpeechRequestIDUnique},
		{"SpeechFinishFencedOnce", testSpeechFinishFencedOnce},
		{"SpeechFailureKeepsItsReason", testSpeechFailureKeepsItsReason},
		{"SpeechRoutedFinishKeepsAccountAndRoute", testSpeechRoutedFinish},
		{"AssetGroupsCreateListUpdateDelete", testAssetGroups},
		{"AssetsCreateListUpdateDelete", testAssetsCreateListUpdate},
		{"AssetClaimLeaseFinish", testAssetClaimLeaseFinish},
		{"AssetConcurrentClaimersDisjoint", testAssetConcurrentClaimersDisjoint},
		{"VerifySessionsAndCallbacks", testVerifySessions},
		{"AssetUpstreamBindsOnceAndCountsInFlight", testAssetUpstream},
		{"InFlightFollowsCreateAndEnd", testInFlightFollowsCreateAndEnd},
		{"InFlightLimitHoldsUnderConcurrentCreates", testInFlightLimitHoldsUnderConcurrentCreates},
		{"SharedCreatesOfOneKeyKeepEveryRule", testSharedCreatesOfOneKey},
		{"UpstreamSlotsNeverExceedTheLimit", testUpstreamSlotsNeverExceedTheLimit},
		{"UpstreamExcessRecordedListedAndSummed", testUpstreamExcess},
		{"UpstreamSlotGoesToWhoHoldsLeast", testUpstreamSlotGoesToWhoHoldsLeast},
		{"LeftSlotLineHoldsNothingBack", testLeftSlotLineHoldsNothingBack},
		{"CatalogReloadRequestsAndReplicaReports", testCatalogReplicas},
		{"WebhookEndpointsTenantScopedBoundedAndListed", testWebhookEndpoints},
		{"WebhookEndpointBoundHoldsUnderConcurrentCreates", testWebhookEndpointBoundUnderConcurrency},
		{"WebhookDeliveriesWrittenOnceWithTheirLog", testWebhookDeliveries},
		{"WebhookDeliveryLogSearchedPerEndpointNewestFirst", testWebhookDeliverySearch},
		{"WebhookDeliveryLogSweptInBatchesNeverPending", testWebhookDeliverySweep},
		{"UsageUpsertSumsPerHour", testUsageUpsertSumsPerHour},
		{"UsageReportGroupsAndFilters", testUsageReportGroupsAndFilters},
		{"UsageAgreesWithTheLedger", testUsageAgreesWithTheLedger},
		{"UsageRebuiltFromRecordsSettledWithoutRollups", testUsageRebuiltFromRecordsSettledWithoutRollups},
		{"UsageRebuildOfARangeRewritesItAlone", testUsageRebuildOfARangeRewritesItAlone},
		{"UsageCostStoredAndRolledUp", testUsageCostStoredAndRolledUp},
		{"TaskEventsRecordEveryChange", testTaskEventsRecordEveryChange},
		{"SearchTasksByEachFilter", testSearchTasksByEachFilter},
		{"SearchTasksPagesEachOnceUnderInserts", testSearchTasksPagesEachOnceUnderInserts},
		{"SearchSpeechesAndAssets", testSearchSpeechesAndAssets},
		{"KeyLedgerListsTheLatestTransactionsOfAKey", testKeyLedger},
		{"KeyExpiryCapsUpdateAndRotation", testKeyLifecycleFields},
		{"SpendCapsHoldSettleAndRelease", testSpendCapsHoldSettleRelease},
		{"SpendCapExactUnderConcurrentHolds", testSpendCapExactUnderConcurrentHolds},
		{"SpendCapSeededMidPeriod", testSpendCapSeededMidPeriod},
		{"SpendCapSeededOnceUnderConcurrentHolds", testSpendCapSeededOnceUnderConcurrentHolds},
		{"SpendCapSeedSurvivesARolledBackFirstHold", testSpendCapSeedSurvivesARolledBackFirstHold},
		{"AdminTokensCreateFindRevoke", testAdminTokens},
		{"AdminAuditAppendedWithTheChangeAndFiltered", testAdminAudit},
		{"AdminKeysPagedAndFiltered", testAdminKeysPage},
		{"AdminIdempotentAnswersStoredOnceAndExpire", testAdminIdempotentAnswers},
		{"ConsoleSessionsFoundEndedAndSwept", testConsoleSessions},
		{"OverviewQueueAndSlotStats", testOverviewQueueAndSlotStats},
		{"CeilingsRefuseWithNothingWritten", testCeilingsRefuseWithNothingWritten},
		{"CeilingOfAnUnlimitedKeyAndSettlements", testCeilingOfAnUnlimitedKeyAndSettlements},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			tt.fn(t, s)
			CheckLedger(t, s)
		})
	}
}

// CheckLedger fails the test when the store's ledger invariants do not hold.
func CheckLedger(t testing.TB, s store.Store) {
	t.Helper()
	if err := s.CheckLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
}

var seq atomic.Int64

func newKey(t testing.TB, s store.Store, tenant string, unlimited bool) store.Key {
	t.Helper()
	n := seq.Add(1)
	secret := fmt.Sprintf("secret-%d-%d", time.Now().UnixNano(), n)
	h := sha256.Sum256([]byte(secret))
	k := store.Key{ID: fmt.Sprintf("key_%d_%d", time.Now().UnixNano(), n), TenantID: tenant, Name: "k", Prefix: secret[:8],
		Hash: h[:], Unlimited: unlimited, CreatedAt: time.Now()}
	if err := s.Transact(context.Background(), func(tx store.Tx) error { return tx.CreateKey(context.Background(), k, "USD") }); err != nil {
		t.Fatalf("create key: %v", err)
	}
	return k
}

func post(ctx context.Context, s store.Store, kind string, entries ...store.Entry) error {
	id := fmt.Sprintf("txn_%d", seq.Add(1))
	return s.Transact(ctx, func(tx store.Tx) error {
		return tx.Post(ctx, store.Txn{ID: id, Kind: kind, Entries: entries})
	})
}

func credit(ctx context.Context, s store.Store, k store.Key, amount money.Micros) error {
	return post(ctx, s, "credit",
		store.Entry{Account: store.FundingAccountID("USD"), Amount: -amount},
		store.Entry{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: amount})
}

func reserve(ctx context.Context, s store.Store, k store.Key, amount money.Micros) error {
	return post(ctx, s, "reserve",
		store.Entry{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -amount},
		store.Entry{Account: store.AccountID(k.ID, store.AccountReserved), Amount: amount})
}

func balance(t testing.TB, s store.Store, k store.Key) store.Balance {
	t.Helper()
	b, err := s.Balance(context.Background(), k.ID)
	if err != nil {
		t.Fatalf("balance: %v", err)
	}
	return b
}

func testKeys(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := newKey(t, s, "acme", false)
	b := newKey(t, s, "acme", true)
	c := newKey(t, s, "other", false)
	got, err := s.KeyByHash(ctx, a.Hash)
	if err != nil || got.ID != a.ID || got.TenantID != "acme" || got.Unlimited || got.Revoked() {
		t.Fatalf("KeyByHash = %+v, %v", got, err)
	}
	if got.CreatedAt.UnixMicro() != a.CreatedAt.UnixMicro() {
		t.Errorf("created_at %v, want %v", got.CreatedAt, a.CreatedAt)
	}
	if _, err := s.KeyByHash(ctx, []byte("nope")); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown hash: %v", err)
	}
	list, err := s.Keys(ctx, "acme")
	if err != nil || len(list) != 2 || list[0].ID != a.ID || list[1].ID != b.ID {
		t.Fatalf("Keys(acme) = %v, %v", list, err)
	}
	all, _ := s.Keys(ctx, "")
	if len(all) != 3 || all[2].ID != c.ID {
		t.Fatalf("Keys() = %v", all)
	}
	at := time.Now()
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RevokeKey(ctx, a.ID, at) }); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RevokeKey(ctx, a.ID, at.Add(time.Hour)) }); err != nil {
		t.Fatal(err)
	}
	got, _ = s.Key(ctx, a.ID)
	if !got.Revoked() || got.RevokedAt.UnixMicro() != at.UnixMicro() {
		t.Errorf("revoked_at = %v, want the first revocation %v", got.RevokedAt, at)
	}
	err = s.Transact(ctx, func(tx store.Tx) error { return tx.RevokeKey(ctx, "key_missing", at) })
	if !errors.Is(err, store.ErrNotFound) {
		t.Errorf("revoke unknown: %v", err)
	}
	if bal := balance(t, s, b); !bal.Unlimited || bal.Currency != "USD" || bal.Available != 0 {
		t.Errorf("new unlimited key balance = %+v", bal)
	}
}

func testKeyConflict(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := newKey(t, s, "acme", false)
	dup := a
	dup.ID = a.ID + "x"
	err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateKey(ctx, dup, "USD") })
	if !errors.Is(err, store.ErrConflict) {
		t.Fatalf("duplicate hash: %v", err)
	}
}

func testCredit(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	before := time.Now().Add(-time.Second)
	if err := credit(ctx, s, k, 12_500_000); err != nil {
		t.Fatal(err)
	}
	if err := credit(ctx, s, k, 1); err != nil {
		t.Fatal(err)
	}
	b := balance(t, s, k)
	if b.Available != 12_500_001 || b.Used != 0 || b.Reserved != 0 {
		t.Fatalf("balance = %+v", b)
	}
	if b.UpdatedAt.Before(before) {
		t.Errorf("updated_at %v not moved", b.UpdatedAt)
	}
	entries, err := s.Entries(ctx, store.AccountID(k.ID, store.AccountAvailable))
	if err != nil || len(entries) != 2 || entries[0].Amount != 12_500_000 || entries[1].Amount != 1 {
		t.Fatalf("entries = %v, %v", entries, err)
	}
	CheckLedger(t, s)
}

func testUnbalanced(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	if err := credit(ctx, s, k, 10); err != nil {
		t.Fatal(err)
	}
	avail := store.AccountID(k.ID, store.AccountAvailable)
	reserved := store.AccountID(k.ID, store.AccountReserved)
	euro := newKey(t, s, "acme", false)
	if err := s.Transact(ctx, func(tx store.Tx) error {
		return tx.CreateKey(ctx, store.Key{ID: euro.ID + "-eur", TenantID: "acme", Name: "k", Prefix: "eur",
			Hash: []byte(euro.ID + "-eur"), CreatedAt: time.Now()}, "EUR")
	}); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		entries []store.Entry
		want    error
	}{
		{"sum not zero", []store.Entry{{Account: store.FundingAccountID("USD"), Amount: -5}, {Account: avail, Amount: 4}}, store.ErrUnbalanced},
		{"one entry", []store.Entry{{Account: avail, Amount: 0}}, store.ErrUnbalanced},
		{"same account", []store.Entry{{Account: avail, Amount: 5}, {Account: avail, Amount: -5}}, store.ErrUnbalanced},
		{"two currencies", []store.Entry{{Account: store.FundingAccountID("EUR"), Amount: -5}, {Account: avail, Amount: 5}}, store.ErrUnbalanced},
		{"unknown account", []store.Entry{{Account: store.FundingAccountID("USD"), Amount: -5}, {Account: "nobody:available", Amount: 5}}, store.ErrNotFound},
		{"unknown key", []store.Entry{{Account: "nobody:available", Amount: -5}, {Account: "nobody:reserved", Amount: 5}}, store.ErrNotFound},
		{"overdraft", []store.Entry{{Account: avail, Amount: -11}, {Account: reserved, Amount: 11}}, store.ErrInsufficientFunds},
	}
	// Each is posted alone and as a create posts it (store.ShareCommit; on PostgreSQL its
	// guarded updates are queued and refused by the server), after a shared post that succeeds
	// so the shared one is not run the careful way.
	for _, c := range cases {
		if err := post(ctx, s, "credit", c.entries...); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
		shared := store.ShareCommit(ctx, k.TenantID, k.ID)
		if err := post(shared, s, "noop", store.Entry{Account: store.FundingAccountID("USD"), Amount: 0}, store.Entry{Account: avail, Amount: 0}); err != nil {
			t.Fatal(err)
		}
		if err := post(shared, s, "credit", c.entries...); !errors.Is(err, c.want) {
			t.Errorf("%s, shared: err = %v, want %v", c.name, err, c.want)
		}
	}
	if b := balance(t, s, k); b.Available != 10 || b.Reserved != 0 {
		t.Errorf("rejected posts moved money: %+v", b)
	}
}

func testOverdraft(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	if err := credit(ctx, s, k, 1_000_000); err != nil {
		t.Fatal(err)
	}
	if err := reserve(ctx, s, k, 1_000_001); !errors.Is(err, store.ErrInsufficientFunds) {
		t.Fatalf("overdraft: %v", err)
	}
	if b := balance(t, s, k); b.Available != 1_000_000 || b.Reserved != 0 {
		t.Fatalf("rejected reservation changed balances: %+v", b)
	}
	if err := reserve(ctx, s, k, 1_000_000); err != nil {
		t.Fatalf("reserve all: %v", err)
	}
	// Settle: half charged, half refunded.
	err := post(ctx, s, "settle",
		store.Entry{Account: store.AccountID(k.ID, store.AccountReserved), Amount: -1_000_000},
		store.Entry{Account: store.AccountID(k.ID, store.AccountSpent), Amount: 400_000},
		store.Entry{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: 600_000})
	if err != nil {
		t.Fatal(err)
	}
	if b := balance(t, s, k); b.Available != 600_000 || b.Reserved != 0 || b.Used != 400_000 {
		t.Fatalf("after settle: %+v", b)
	}
}

func testOverage(t *testing.T, s store.Store) {
	ctx := t.Context()
	k, other := newKey(t, s, "acme", false), newKey(t, s, "acme", false)
	for _, key := range []store.Key{k, other} {
		if err := credit(ctx, s, key, 1_000_000); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Overage(ctx, k.ID); err != nil || got != 0 {
		t.Fatalf("overage of a fresh key = %s, %v", got, err)
	}
	spend := func(key store.Key, kind string, amount money.Micros) {
		t.Helper()
		if err := post(ctx, s, kind,
			store.Entry{Account: store.AccountID(key.ID, store.AccountAvailable), Amount: -amount},
			store.Entry{Account: store.AccountID(key.ID, store.AccountSpent), Amount: amount}); err != nil {
			t.Fatal(err)
		}
	}
	spend(k, "settle", 100_000) // ordinary spending is not overage
	spend(k, store.TxnKindOverage, 20_000)
	spend(k, store.TxnKindOverage, 5_000)
	spend(other, store.TxnKindOverage, 7_000)
	if got, err := s.Overage(ctx, k.ID); err != nil || got != 25_000 {
		t.Fatalf("overage = %s, %v; want 0.025", got, err)
	}
	if got, _ := s.Overage(ctx, other.ID); got != 7_000 {
		t.Fatalf("other key's overage = %s, want 0.007", got)
	}
}

func testUnlimited(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", true)
	if err := reserve(ctx, s, k, 5_000_000); err != nil {
		t.Fatalf("unlimited reserve: %v", err)
	}
	if b := balance(t, s, k); b.Available != -5_000_000 || b.Reserved != 5_000_000 || !b.Unlimited {
		t.Fatalf("unlimited balance: %+v", b)
	}
}

func testConcurrentCredits(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	const n = 40
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- credit(ctx, s, k, money.Micros(1_000+i))
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	want := money.Micros(n*1_000 + n*(n-1)/2)
	if b := balance(t, s, k); b.Available != want {
		t.Fatalf("available = %d, want %d", b.Available, want)
	}
	CheckLedger(t, s)
}

func testConcurrentDebits(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	if err := credit(ctx, s, k, 10_000_000); err != nil {
		t.Fatal(err)
	}
	const n = 30 // 30 reservations of 1.00 against 10.00: exactly 10 may succeed
	var ok, short atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := reserve(ctx, s, k, 1_000_000)
			switch {
			case err == nil:
				ok.Add(1)
			case errors.Is(err, store.ErrInsufficientFunds):
				short.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 10 || short.Load() != n-10 {
		t.Fatalf("succeeded %d, refused %d; want 10 and %d", ok.Load(), short.Load(), n-10)
	}
	if b := balance(t, s, k); b.Available != 0 || b.Reserved != 10_000_000 {
		t.Fatalf("balance = %+v", b)
	}
}

func testTransactRollback(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	boom := errors.New("boom")
	err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.Post(ctx, store.Txn{ID: "txn_rb1", Kind: "credit", Entries: []store.Entry{
			{Account: store.FundingAccountID("USD"), Amount: -7}, {Account: store.AccountID(k.ID, store.AccountAvailable), Amount: 7}}}); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("panic not re-raised")
			}
		}()
		_ = s.Transact(ctx, func(tx store.Tx) error {
			_ = tx.Post(ctx, store.Txn{ID: "txn_rb2", Kind: "credit", Entries: []store.Entry{
				{Account: store.FundingAccountID("USD"), Amount: -7}, {Account: store.AccountID(k.ID, store.AccountAvailable), Amount: 7}}})
			panic("boom")
		})
	}()
	if b := balance(t, s, k); b.Available != 0 {
		t.Fatalf("rolled-back posts left money: %+v", b)
	}
	// The store still works after a panic inside a transaction (the connection was released).
	if err := credit(ctx, s, k, 3); err != nil {
		t.Fatal(err)
	}
}

func testMeta(t *testing.T, s store.Store) {
	ctx := t.Context()
	var wrote []bool
	for _, v := range []string{"first", "second"} {
		err := s.Transact(ctx, func(tx store.Tx) error {
			ok, err := tx.SetMetaOnce(ctx, "demo_key", v)
			wrote = append(wrote, ok)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	v, ok, err := s.Meta(ctx, "demo_key")
	if err != nil || !ok || v != "first" || !wrote[0] || wrote[1] {
		t.Fatalf("meta = %q %v %v, wrote %v", v, ok, err, wrote)
	}
	if _, ok, _ := s.Meta(ctx, "absent"); ok {
		t.Error("absent meta found")
	}
}
