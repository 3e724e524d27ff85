package billing

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/store/sqldb"
	"mediagen/internal/store/sqlite"
)

type capEnv struct {
	t   *testing.T
	ctx context.Context
	db  *sqldb.DB
	n   int
}

func newCapEnv(t *testing.T) *capEnv {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "caps.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return &capEnv{t: t, ctx: ctx, db: db}
}

// key makes a key with caps and credit (0: none).
func (e *capEnv) key(unlimited bool, caps store.Caps, credit money.Micros) store.Key {
	e.t.Helper()
	e.n++
	k := store.Key{ID: fmt.Sprintf("key_c%d", e.n), TenantID: "acme", Prefix: "mg_x", Hash: []byte(fmt.Sprintf("h%d", e.n)),
		Unlimited: unlimited, CreatedAt: time.Now(), Caps: caps}
	err := e.db.Transact(e.ctx, func(tx store.Tx) error {
		if err := tx.CreateKey(e.ctx, k, "USD"); err != nil {
			return err
		}
		if credit > 0 {
			_, err := Credit(e.ctx, tx, k, "USD", credit, "", time.Now())
			return err
		}
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

func (e *capEnv) reserve(c keys.Caller, ref string, amount money.Micros, at time.Time) error {
	return e.db.Transact(e.ctx, func(tx store.Tx) error { return Reserve(e.ctx, tx, c, ref, amount, at) })
}

func (e *capEnv) settle(k store.Key, ref string, reserved, final money.Micros, at time.Time) {
	e.t.Helper()
	err := e.db.Transact(e.ctx, func(tx store.Tx) error {
		_, err := Settle(e.ctx, tx, k.ID, ref, reserved, final, at)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func tenantWithCaps(daily, monthly money.Micros) *catalog.Tenant {
	t := &catalog.Tenant{ID: "acme", Currency: "USD"}
	if daily > 0 {
		t.SpendCaps.Daily = catalog.Cap{Cap: money.CapOf(daily)}
	}
	if monthly > 0 {
		t.SpendCaps.Monthly = catalog.Cap{Cap: money.CapOf(monthly)}
	}
	return t
}

func wantCapError(t *testing.T, err error, scope, kind string, resets time.Time) {
	t.Helper()
	var ce *CapError
	if !errors.As(err, &ce) || !errors.Is(err, store.ErrSpendCap) {
		t.Fatalf("err = %v, want a spend cap refusal", err)
	}
	if ce.Scope != scope || ce.Kind != kind || !ce.Resets.Equal(resets) {
		t.Errorf("refused by %s %s resetting %v, want %s %s resetting %v", ce.Scope, ce.Kind, ce.Resets, scope, kind, resets)
	}
	a, ok := AsCapError(err)
	if !ok || a.Status() != 402 || a.CodeOrDefault() != CodeSpendCap || a.Type() != "insufficient_balance" ||
		!strings.Contains(a.Message, kind) || !strings.Contains(a.Message, resets.Format(time.RFC3339)) {
		t.Errorf("API error %+v", a)
	}
}

func TestDailyCapResetsAtUTCMidnight(t *testing.T) {
	t.Parallel()
	e := newCapEnv(t)
	k := e.key(false, store.Caps{Daily: money.CapOf(10_000_000)}, 100_000_000)
	c := keys.Caller{Key: k, Tenant: tenantWithCaps(0, 0)}
	// A clock in another zone: periods are UTC whatever the clock's location.
	zone := time.FixedZone("UTC-5", -5*3600)
	late := time.Date(2026, 11, 25, 23, 59, 59, 0, time.UTC).In(zone)
	if err := e.reserve(c, "a", 6_000_000, late); err != nil {
		t.Fatal(err)
	}
	err := e.reserve(c, "b", 5_000_000, late)
	wantCapError(t, err, "key", Daily, time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC))
	// Nothing was written by the refusal: the balance holds only the first reservation.
	if b, _ := e.db.Balance(e.ctx, k.ID); b.Reserved != 6_000_000 || b.Available != 94_000_000 {
		t.Fatalf("balance after a refusal %+v", b)
	}
	midnight := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	if err := e.reserve(c, "b", 5_000_000, midnight); err != nil {
		t.Fatalf("a new UTC day: %v", err)
	}
	// The first reservation settles on the new day: it adjusts the day it was made in.
	e.settle(k, "a", 6_000_000, 6_000_000, midnight)
	if err := e.reserve(c, "c", 5_000_000, midnight); err != nil {
		t.Fatalf("5 + 5 on the new day: %v", err)
	}
	if err := e.reserve(c, "d", 1, midnight); err == nil {
		t.Fatal("the new day's cap let 10.000001 through")
	}
	if d, _, _ := SpentNow(e.ctx, e.db, "key", k.ID, late); d != 6_000_000 {
		t.Errorf("the first day holds %s, want 6", d)
	}
}

func TestMonthlyCapResetsAtMonthStart(t *testing.T) {
	t.Parallel()
	e := newCapEnv(t)
	k := e.key(false, store.Caps{Monthly: money.CapOf(20_000_000)}, 100_000_000)
	c := keys.Caller{Key: k, Tenant: tenantWithCaps(0, 0)}
	days := []time.Time{time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2027, 1, 31, 23, 0, 0, 0, time.UTC)}
	for i, at := range days {
		if err := e.reserve(c, fmt.Sprintf("m%d", i), 10_000_000, at); err != nil {
			t.Fatal(err)
		}
	}
	err := e.reserve(c, "over", 1, days[1])
	wantCapError(t, err, "key", Monthly, time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC))
	if err := e.reserve(c, "feb", 20_000_000, time.Date(2027, 2, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("a new month: %v", err)
	}
}

func TestSettleBelowReservationAndReleaseFreeRoom(t *testing.T) {
	t.Parallel()
	e := newCapEnv(t)
	k := e.key(false, store.Caps{Daily: money.CapOf(10_000_000)}, 100_000_000)
	c := keys.Caller{Key: k}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	if err := e.reserve(c, "a", 8_000_000, now); err != nil {
		t.Fatal(err)
	}
	if err := e.reserve(c, "b", 5_000_000, now); !errors.Is(err, store.ErrSpendCap) {
		t.Fatalf("8 + 5 over 10: %v", err)
	}
	e.settle(k, "a", 8_000_000, 3_000_000, now) // 3 spent: 7 of room
	if err := e.reserve(c, "b", 7_000_000, now); err != nil {
		t.Fatalf("after settling below the reservation: %v", err)
	}
	e.settle(k, "b", 7_000_000, 0, now) // released: 7 back
	if err := e.reserve(c, "c", 7_000_000, now); err != nil {
		t.Fatalf("after a release: %v", err)
	}
	if d, _, _ := SpentNow(e.ctx, e.db, "key", k.ID, now); d != 10_000_000 {
		t.Errorf("day spent %s, want 10 (3 settled + 7 reserved)", d)
	}
	if err := e.db.CheckLedger(e.ctx); err != nil {
		t.Fatal(err)
	}
}

// An unlimited key (no balance needed) is still held to its cap, and a tenant's cap binds all
// its keys together.
func TestUnlimitedKeyAndTenantCapsAreCapped(t *testing.T) {
	t.Parallel()
	e := newCapEnv(t)
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	u := e.key(true, store.Caps{Daily: money.CapOf(3_000_000)}, 0)
	if err := e.reserve(keys.Caller{Key: u}, "u1", 3_000_000, now); err != nil {
		t.Fatal(err)
	}
	wantCapError(t, e.reserve(keys.Caller{Key: u}, "u2", 1, now), "key", Daily, time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC))

	tenant := tenantWithCaps(0, 12_000_000)
	a, b := e.key(true, store.Caps{}, 0), e.key(false, store.Caps{}, 50_000_000)
	if err := e.reserve(keys.Caller{Key: a, Tenant: tenant}, "a1", 7_000_000, now); err != nil {
		t.Fatal(err)
	}
	err := e.reserve(keys.Caller{Key: b, Tenant: tenant}, "b1", 6_000_000, now)
	wantCapError(t, err, "tenant", Monthly, time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	if a, _ := AsCapError(err); !strings.Contains(a.Message, "account's") {
		t.Errorf("a tenant cap's message does not say it is the account's: %s", a.Message)
	}
	if err := e.reserve(keys.Caller{Key: b, Tenant: tenant}, "b1", 5_000_000, now); err != nil {
		t.Fatal(err)
	}
}

// 50 concurrent reservations through the group committer: exactly the cap's worth accepted.
func TestCapExactUnderConcurrentReservations(t *testing.T) {
	t.Parallel()
	e := newCapEnv(t)
	k := e.key(true, store.Caps{Daily: money.CapOf(1_000_000)}, 0)
	c := keys.Caller{Key: k}
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := 0
	for i := range 50 {
		wg.Go(func() {
			err := e.reserve(c, fmt.Sprintf("r%d", i), 30_000, now)
			mu.Lock()
			defer mu.Unlock()
			if err == nil {
				accepted++
			} else if !errors.Is(err, store.ErrSpendCap) {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if accepted != 33 { // 33 × 0.03 = 0.99 ≤ 1 < 1.02
		t.Errorf("accepted %d, want 33", accepted)
	}
	if d, _, _ := SpentNow(e.ctx, e.db, "key", k.ID, now); d != 990_000 {
		t.Errorf("day spent %s, want 0.99", d)
	}
}

func TestDebit(t *testing.T) {
	t.Parallel()
	e := newCapEnv(t)
	now := time.Now()
	k := e.key(false, store.Caps{}, 10_000_000)
	u := e.key(true, store.Caps{}, 0)
	tests := []struct {
		name   string
		key    store.Key
		amount money.Micros
		want   error
		avail  money.Micros
	}{
		{"moves money from available to funding", k, 4_000_000, nil, 6_000_000},
		{"refused below zero for a limited key", k, 6_000_001, ErrBelowZero, 6_000_000},
		{"takes a limited key exactly to zero", k, 6_000_000, nil, 0},
		{"refused when not positive", k, 0, ErrAmount, 0},
		{"takes an unlimited key below zero", u, 2_000_000, nil, -2_000_000},
	}
	for _, tt := range tests {
		var id string
		err := e.db.Transact(e.ctx, func(tx store.Tx) (err error) {
			id, err = Debit(e.ctx, tx, tt.key, "USD", tt.amount, "correction", now)
			return err
		})
		if !errors.Is(err, tt.want) || (err == nil) == (id == "") {
			t.Errorf("%s: id %q err %v, want %v", tt.name, id, err, tt.want)
		}
		if b, _ := e.db.Balance(e.ctx, tt.key.ID); b.Available != tt.avail {
			t.Errorf("%s: available %s, want %s", tt.name, b.Available, tt.avail)
		}
	}
	if err := e.db.CheckLedger(e.ctx); err != nil {
		t.Fatal(err)
	}
	entries, _ := e.db.Entries(e.ctx, store.FundingAccountID("USD"))
	var funding money.Micros
	for _, en := range entries {
		funding += en.Amount
	}
	if funding != -10_000_000+10_000_000+2_000_000 {
		t.Errorf("funding balance %s, want 2 (credits 10 back by debits 10 and 2)", funding)
	}
}

// TestCapSetMidPeriodCountsWhatThePeriodSpent: a key updated from no cap to a daily cap of 10
// after spending 9 (settled, overage included) with 0.5 open today, and a tenant whose monthly
// cap of 10 is added to the catalog after its keys spent as much this month, are refused a
// reservation of 1 and accept one of 0.5; what was spent yesterday or last month does not
// count.
func TestCapSetMidPeriodCountsWhatThePeriodSpent(t *testing.T) {
	const unit = money.Micros(1_000_000)
	at := time.Date(2026, 11, 25, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		before time.Time // when the spending before the cap was accepted
		old    time.Time // spending of the period before, which must not count
		caller func(k store.Key) keys.Caller
		scope  string
		kind   string
		resets time.Time
	}{
		{name: "KeyDailyCapSetByAnUpdate", before: at.Add(-5 * time.Hour), old: at.AddDate(0, 0, -1),
			caller: func(k store.Key) keys.Caller {
				k.Caps = store.Caps{Daily: money.CapOf(10 * unit)}
				return keys.Caller{Key: k, Tenant: &catalog.Tenant{ID: "acme", Currency: "USD"}}
			},
			scope: "key", kind: Daily, resets: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)},
		{name: "TenantMonthlyCapAddedToTheCatalog", before: at.AddDate(0, 0, -20), old: at.AddDate(0, -1, 0),
			caller: func(k store.Key) keys.Caller { return keys.Caller{Key: k, Tenant: tenantWithCaps(0, 10*unit)} },
			scope:  "tenant", kind: Monthly, resets: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newCapEnv(t)
			k, other := e.key(true, store.Caps{}, 0), e.key(true, store.Caps{}, 0)
			// 6 charged on a reservation of 5 (overage), 3 on another key of the tenant (for
			// the key's cap, on the key itself), 0.5 still open; 9 in the period before.
			second := other
			if tt.scope == "key" {
				second = k
			}
			e.task(k, store.StatusCompleted, 5*unit, 6*unit, tt.before)
			e.task(second, store.StatusCompleted, 4*unit, 3*unit, tt.before.Add(time.Minute))
			e.task(k, store.StatusQueued, unit/2, 0, tt.before.Add(2*time.Minute))
			e.task(k, store.StatusCompleted, 9*unit, 9*unit, tt.old)
			c := tt.caller(k)
			owner := k.ID
			if tt.scope == "tenant" {
				owner = "acme"
			}
			// What `admin key list` shows before the first capped reservation.
			day, month, err := SpentNow(e.ctx, e.db, tt.scope, owner, at)
			if got := map[string]money.Micros{Daily: day, Monthly: month}[tt.kind]; err != nil || got != 19*unit/2 {
				t.Errorf("the %s period reads %s (%v) before any capped reservation, want 9.5", tt.kind, got, err)
			}
			err = e.reserve(c, "vid_over", unit, at)
			wantCapError(t, err, tt.scope, tt.kind, tt.resets)
			if ce := (*CapError)(nil); errors.As(err, &ce) && ce.Spent != 19*unit/2 {
				t.Errorf("refused with %s spent, want 9.5", ce.Spent)
			}
			if err := e.reserve(c, "vid_fits", unit/2, at); err != nil {
				t.Fatalf("a reservation the cap still holds: %v", err)
			}
			day, month, err = SpentNow(e.ctx, e.db, tt.scope, owner, at)
			if got := map[string]money.Micros{Daily: day, Monthly: month}[tt.kind]; err != nil || got != 10*unit {
				t.Errorf("the %s counter holds %s (%v), want 10", tt.kind, got, err)
			}
		})
	}
}

// task writes a video task of k accepted at at (as if no cap had counted it).
func (e *capEnv) task(k store.Key, status string, reserved, charged money.Micros, at time.Time) {
	e.t.Helper()
	e.n++
	task := store.Task{ID: fmt.Sprintf("vid_%d", e.n), KeyID: k.ID, TenantID: k.TenantID, Route: "native", Model: "m",
		Status: status, PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`), Reserved: reserved,
		Charged: charged, CreatedAt: at, UpdatedAt: at}
	if err := e.db.Transact(e.ctx, func(tx store.Tx) error { return tx.CreateTask(e.ctx, task) }); err != nil {
		e.t.Fatal(err)
	}
}
