package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Key lifecycle and spend caps (migration 0016): expiry, caps, rotation, and the spend
// counters a capped reservation holds.

func testKeyLifecycleFields(t *testing.T, s store.Store) {
	ctx := t.Context()
	expires := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	k := store.Key{ID: fmt.Sprintf("key_life_%d", seq.Add(1)), TenantID: "acme", Name: "life", Prefix: "mg_life",
		Hash: hashOf("life-1"), CreatedAt: time.Now(), ExpiresAt: expires, Caps: store.Caps{Daily: money.CapOf(5_000_000), Monthly: money.CapOf(100_000_000)}}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateKey(ctx, k, "USD") }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Key(ctx, k.ID)
	if err != nil || !got.ExpiresAt.Equal(expires) || got.Caps != k.Caps || got.PrevHash != nil || !got.RotatedAt.IsZero() {
		t.Fatalf("created key = %+v, %v", got, err)
	}

	// Update: name, expiry cleared, one cap cleared; the row is read under lock first.
	var before store.Key
	upd := got
	upd.Name, upd.ExpiresAt, upd.Caps.Daily = "renamed", time.Time{}, money.NoCap
	if err := s.Transact(ctx, func(tx store.Tx) error {
		var err error
		if before, err = tx.KeyForUpdate(ctx, k.ID); err != nil {
			return err
		}
		return tx.UpdateKey(ctx, upd)
	}); err != nil {
		t.Fatal(err)
	}
	if before.Name != "life" {
		t.Errorf("KeyForUpdate read %+v", before)
	}
	got, _ = s.Key(ctx, k.ID)
	if got.Name != "renamed" || !got.ExpiresAt.IsZero() || got.Caps != (store.Caps{Monthly: money.CapOf(100_000_000)}) {
		t.Errorf("updated key = %+v", got)
	}
	// A cap of 0 is a cap (nothing may be spent), kept apart from no cap; and a cap above the
	// ceiling of one amount never reaches the database.
	zero := got
	zero.Caps = store.Caps{Daily: money.CapOf(0), Monthly: money.CapOf(money.MaxAmount)}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.UpdateKey(ctx, zero) }); err != nil {
		t.Fatal(err)
	}
	if got, _ = s.Key(ctx, k.ID); got.Caps != zero.Caps {
		t.Errorf("caps 0 and the ceiling read back as %+v", got.Caps)
	}
	over := got
	over.Caps.Monthly = money.CapOf(money.MaxAmount + 1)
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.UpdateKey(ctx, over) }); !errors.Is(err, money.ErrCap) {
		t.Errorf("a cap above the ceiling: %v", err)
	}
	got.Caps = store.Caps{Monthly: money.CapOf(100_000_000)}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.UpdateKey(ctx, got) }); err != nil {
		t.Fatal(err)
	}

	// Rotation with a grace period: both secrets find the key until the next rotation.
	until := time.Now().Add(24 * time.Hour).UTC().Truncate(time.Microsecond)
	rot := got
	rot.Hash, rot.Prefix, rot.PrevHash, rot.PrevValidUntil, rot.RotatedAt = hashOf("life-2"), "mg_new", got.Hash, until, time.Now()
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RotateKey(ctx, rot) }); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"life-1", "life-2"} {
		found, err := s.KeyByHash(ctx, hashOf(secret))
		if err != nil || found.ID != k.ID || string(found.Hash) != string(hashOf("life-2")) ||
			string(found.PrevHash) != string(hashOf("life-1")) || !found.PrevValidUntil.Equal(until) || found.Prefix != "mg_new" {
			t.Errorf("KeyByHash(%s) = %+v, %v", secret, found, err)
		}
	}
	// A second rotation with no grace drops both earlier secrets.
	rot2 := rot
	rot2.Hash, rot2.PrevHash, rot2.PrevValidUntil = hashOf("life-3"), nil, time.Time{}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.RotateKey(ctx, rot2) }); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"life-1", "life-2"} {
		if _, err := s.KeyByHash(ctx, hashOf(secret)); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("KeyByHash(%s) after a rotation without grace: %v", secret, err)
		}
	}
	if found, err := s.KeyByHash(ctx, hashOf("life-3")); err != nil || found.ID != k.ID || found.PrevHash != nil {
		t.Errorf("KeyByHash(new) = %+v, %v", found, err)
	}
	for name, fn := range map[string]func(tx store.Tx) error{
		"update": func(tx store.Tx) error { return tx.UpdateKey(ctx, store.Key{ID: "key_missing"}) },
		"rotate": func(tx store.Tx) error { return tx.RotateKey(ctx, store.Key{ID: "key_missing", Hash: hashOf("x")}) },
		"lock": func(tx store.Tx) error {
			_, err := tx.KeyForUpdate(ctx, "key_missing")
			return err
		},
	} {
		if err := s.Transact(ctx, fn); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s of an unknown key: %v", name, err)
		}
	}
}

func hashOf(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// hold holds amount for ref against counters and reserves it on k (a reserve posting), in one
// transaction, in billing.Reserve's order: counters before accounts.
func hold(ctx context.Context, s store.Store, k store.Key, ref string, amount money.Micros, counters ...store.CappedCounter) error {
	return s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.HoldSpend(ctx, store.SpendHold{Ref: ref, Amount: amount, Counters: counters}); err != nil {
			return err
		}
		return tx.Post(ctx, store.Txn{ID: "txn_" + ref, Kind: "reserve", Ref: ref, Entries: []store.Entry{
			{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -amount},
			{Account: store.AccountID(k.ID, store.AccountReserved), Amount: amount},
		}})
	})
}

// settle ends ref's reservation with final, as billing.Settle does (no overage here): the
// counters first, then the accounts.
func settle(ctx context.Context, s store.Store, k store.Key, ref string, reserved, final money.Micros) error {
	return s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.SettleSpend(ctx, ref, final); err != nil {
			return err
		}
		entries := []store.Entry{
			{Account: store.AccountID(k.ID, store.AccountReserved), Amount: -reserved},
			{Account: store.AccountID(k.ID, store.AccountSpent), Amount: final},
		}
		if reserved != final {
			entries = append(entries, store.Entry{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: reserved - final})
		}
		return tx.Post(ctx, store.Txn{ID: "txn_settle_" + ref, Kind: "settle", Ref: ref, Entries: entries, AllowOverdraft: true})
	})
}

func spent(t *testing.T, s store.Store, c store.SpendCounter) money.Micros {
	t.Helper()
	v, err := s.Spent(context.Background(), []store.SpendCounter{c})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func testSpendCapsHoldSettleRelease(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	if err := credit(ctx, s, k, 100); err != nil {
		t.Fatal(err)
	}
	day := store.SpendCounter{Scope: "key", Owner: k.ID, Period: "day:2026-11-25"}
	tenantDay := store.SpendCounter{Scope: "tenant", Owner: "acme", Period: "day:2026-11-25"}
	next := store.SpendCounter{Scope: "key", Owner: k.ID, Period: "day:2026-11-26"}
	capped := func(c store.SpendCounter, cap money.Micros) store.CappedCounter {
		return store.CappedCounter{SpendCounter: c, Cap: cap}
	}
	ref := func(n int) string { return fmt.Sprintf("%s_r%d", k.ID, n) }

	if err := hold(ctx, s, k, ref(1), 6, capped(day, 10), capped(tenantDay, 50)); err != nil {
		t.Fatal(err)
	}
	// 6 + 6 > 10: refused by the key's counter (index 0), nothing written.
	err := hold(ctx, s, k, ref(2), 6, capped(day, 10), capped(tenantDay, 50))
	var ce *store.SpendCapError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrSpendCap) || ce.Index != 0 || ce.Spent != 6 {
		t.Fatalf("over the cap: %v (%+v)", err, ce)
	}
	// An amount above the cap on its own is refused before any statement.
	if err := hold(ctx, s, k, ref(3), 11, capped(next, 10)); !errors.As(err, &ce) || ce.Index != 0 {
		t.Fatalf("amount above the cap: %v", err)
	}
	if got := spent(t, s, day); got != 6 {
		t.Errorf("day spent %d after a refusal, want 6", got)
	}
	if got := spent(t, s, tenantDay); got != 6 {
		t.Errorf("tenant day spent %d, want 6 (the refused hold rolled back)", got)
	}
	if b := balance(t, s, k); b.Reserved != 6 || b.Available != 94 {
		t.Errorf("balance after a refusal %+v", b)
	}
	// Another period is another counter.
	if err := hold(ctx, s, k, ref(4), 10, capped(next, 10)); err != nil {
		t.Fatalf("next day: %v", err)
	}
	// Settling below the reservation frees room in the reservation's period.
	if err := settle(ctx, s, k, ref(1), 6, 2); err != nil {
		t.Fatal(err)
	}
	if got, gotT := spent(t, s, day), spent(t, s, tenantDay); got != 2 || gotT != 2 {
		t.Errorf("after settling 2 of 6: day %d tenant %d, want 2 and 2", got, gotT)
	}
	if err := hold(ctx, s, k, ref(5), 8, capped(day, 10)); err != nil {
		t.Fatalf("room freed by the settlement: %v", err)
	}
	// A release gives the whole hold back.
	if err := settle(ctx, s, k, ref(5), 8, 0); err != nil {
		t.Fatal(err)
	}
	if got := spent(t, s, day); got != 2 {
		t.Errorf("after a release: %d, want 2", got)
	}
	// Settling twice, or a reservation no cap counted, moves no counter.
	if err := settle(ctx, s, k, ref(9), 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.SettleSpend(ctx, ref(1), 5) }); err != nil {
		t.Fatal(err)
	}
	if got := spent(t, s, day); got != 2 {
		t.Errorf("after a second settlement: %d, want 2", got)
	}
	// A final above the hold (an overage) counts whole.
	if err := hold(ctx, s, k, ref(6), 3, capped(day, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.SettleSpend(ctx, ref(6), 7) }); err != nil {
		t.Fatal(err)
	}
	if got := spent(t, s, day); got != 9 {
		t.Errorf("after an overage: %d, want 9", got)
	}
	if got := spent(t, s, store.SpendCounter{Scope: "key", Owner: k.ID, Period: "day:1999-01-01"}); got != 0 {
		t.Errorf("a period with no counter: %d", got)
	}
	// The ledger side of the overage was not posted: put the reservation's money back so the
	// invariants the suite checks still describe this key.
	if err := settle(ctx, s, k, ref(6), 3, 3); err != nil {
		t.Fatal(err)
	}
}

func testSpendCapExactUnderConcurrentHolds(t *testing.T, s store.Store) {
	SpendCapExactAcrossHandles(t, []store.Store{s, s}, 50)
}

// SpendCapExactAcrossHandles: n concurrent reservations of one key, spread over the handles
// (replicas), against a daily cap of the key and a monthly cap of its tenant: exactly as many
// are accepted as the tighter cap allows, the counters hold exactly what was accepted, and the
// reserved balance agrees. It runs twice: transactions of their own, and transactions marked
// to share their commits (store.ShareCommit, as creates are), which PostgreSQL merges.
func SpendCapExactAcrossHandles(t *testing.T, handles []store.Store, n int) {
	t.Helper()
	for _, shared := range []bool{false, true} {
		spendCapExact(t, handles, n, shared)
	}
	spendCapNotBinding(t, handles, n)
}

// spendCapNotBinding: n concurrent shared reservations under caps they all fit are all
// accepted, and the counters (merged on PostgreSQL) hold exactly their sum.
func spendCapNotBinding(t *testing.T, handles []store.Store, n int) {
	t.Helper()
	ctx := t.Context()
	tenant := fmt.Sprintf("capn_%d", seq.Add(1))
	k := newKey(t, handles[0], tenant, true)
	day := store.CappedCounter{SpendCounter: store.SpendCounter{Scope: "key", Owner: k.ID, Period: "day:2026-11-25"}, Cap: money.Micros(3 * n)}
	month := store.CappedCounter{SpendCounter: store.SpendCounter{Scope: "tenant", Owner: tenant, Period: "month:2026-11"}, Cap: money.Micros(3 * n)}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Go(func() {
			errs <- hold(store.ShareCommit(ctx, tenant, k.ID), handles[i%len(handles)], k, fmt.Sprintf("%s_n%d", k.ID, i), 3, day, month)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a hold within the caps failed: %v", err)
		}
	}
	if got, gotT := spent(t, handles[0], day.SpendCounter), spent(t, handles[0], month.SpendCounter); got != money.Micros(3*n) || gotT != money.Micros(3*n) {
		t.Errorf("counters %d and %d after %d holds of 3, want %d", got, gotT, n, 3*n)
	}
	// Settling them all (8 at a time) brings the counters to what was charged.
	sem := make(chan struct{}, 8)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := settle(ctx, handles[i%len(handles)], k, fmt.Sprintf("%s_n%d", k.ID, i), 3, 1); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if got := spent(t, handles[0], day.SpendCounter); got != money.Micros(n) {
		t.Errorf("after settling each at 1: %d, want %d", got, n)
	}
}

func spendCapExact(t *testing.T, handles []store.Store, n int, shared bool) {
	t.Helper()
	ctx := t.Context()
	s := handles[0]
	tenant := fmt.Sprintf("capt_%d", seq.Add(1))
	k := newKey(t, s, tenant, true) // unlimited: only the caps limit it
	other := newKey(t, s, tenant, false)
	if err := credit(ctx, s, other, 1_000); err != nil {
		t.Fatal(err)
	}
	const amount, keyCap, tenantCap = 7, 100, 130
	day := store.CappedCounter{SpendCounter: store.SpendCounter{Scope: "key", Owner: k.ID, Period: "day:2026-11-25"}, Cap: keyCap}
	month := func(c money.Micros) store.CappedCounter {
		return store.CappedCounter{SpendCounter: store.SpendCounter{Scope: "tenant", Owner: tenant, Period: "month:2026-11"}, Cap: c}
	}
	// The other key of the tenant spends 21 of the tenant's month first.
	if err := hold(ctx, s, other, other.ID+"_first", 21, month(tenantCap)); err != nil {
		t.Fatal(err)
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		accepted int
		failures []error
	)
	for i := range n {
		wg.Go(func() {
			h := handles[i%len(handles)]
			hctx := ctx
			if shared {
				hctx = store.ShareCommit(ctx, tenant, k.ID)
			}
			err := hold(hctx, h, k, fmt.Sprintf("%s_c%d", k.ID, i), amount, day, month(tenantCap))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted++
			case !errors.Is(err, store.ErrSpendCap):
				failures = append(failures, err)
			}
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d holds failed otherwise, first: %v", len(failures), failures[0])
	}
	// The key's day allows 100/7 = 14; the tenant's month 109/7 = 15: the key's cap binds.
	want := min(keyCap/amount, (tenantCap-21)/amount)
	if accepted != want {
		t.Errorf("shared %v: accepted %d of %d, want exactly %d", shared, accepted, n, want)
	}
	if got := spent(t, s, day.SpendCounter); got != money.Micros(accepted*amount) || got > keyCap {
		t.Errorf("key's day spent %d, want %d (cap %d)", got, accepted*amount, keyCap)
	}
	if got := spent(t, s, month(0).SpendCounter); got != money.Micros(21+accepted*amount) || got > tenantCap {
		t.Errorf("tenant's month spent %d, want %d", got, 21+accepted*amount)
	}
	if b := balance(t, s, k); b.Reserved != money.Micros(accepted*amount) {
		t.Errorf("reserved %d, want %d", b.Reserved, accepted*amount)
	}
}

// SpendHoldsAndSettlementsInterleave: shared holds of two keys of one capped tenant (batches
// that the binding cap sends back to run member by member) while earlier reservations of both
// keys settle: nothing fails but by the cap — no deadlock between a batch holding the tenant's
// counter and a settlement holding a key's accounts — and the counters end exact.
func SpendHoldsAndSettlementsInterleave(t *testing.T, handles []store.Store) {
	t.Helper()
	ctx := t.Context()
	s := handles[0]
	tenant := fmt.Sprintf("capi_%d", seq.Add(1))
	ks := []store.Key{newKey(t, s, tenant, true), newKey(t, s, tenant, true)}
	month := store.CappedCounter{SpendCounter: store.SpendCounter{Scope: "tenant", Owner: tenant, Period: "month:2026-11"}, Cap: 1_000}
	const early, late, amount = 20, 100, 10
	for i := range early {
		k := ks[i%2]
		if err := hold(ctx, s, k, fmt.Sprintf("%s_e%d", k.ID, i), amount, month); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for i := range late {
		wg.Go(func() {
			k := ks[i%2]
			err := hold(store.ShareCommit(ctx, tenant, k.ID), handles[i%len(handles)], k, fmt.Sprintf("%s_l%d", k.ID, i), amount, month)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				accepted++
			case !errors.Is(err, store.ErrSpendCap):
				t.Errorf("hold: %v", err)
			}
		})
	}
	for i := range early {
		wg.Go(func() {
			k := ks[i%2]
			if err := settle(ctx, handles[(i+1)%len(handles)], k, fmt.Sprintf("%s_e%d", k.ID, i), amount, 4); err != nil {
				t.Errorf("settle: %v", err)
			}
		})
	}
	wg.Wait()
	if got := spent(t, s, month.SpendCounter); got != money.Micros(early*4+accepted*amount) || got > 1_000 {
		t.Errorf("tenant's month %d, want %d (%d settled at 4, %d accepted at %d)", got, early*4+accepted*amount, early, accepted, amount)
	}
	if accepted < 1_000/amount-early {
		t.Errorf("only %d accepted: the cap left room for at least %d", accepted, 1_000/amount-early)
	}
}
