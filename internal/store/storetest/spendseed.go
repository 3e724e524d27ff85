package storetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// Spend counters seeded from the records (a cap set mid-period): the first capped hold of a
// period counts what the key or tenant spent in it before.

// seedDay is the "today" of these tests; the periods are its UTC day and month.
var seedDay = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

const mu1 = money.Micros(1_000_000) // one currency unit

// seedRecord is a video task or speech record accepted at at.
type seedRecord struct {
	speech            bool
	other             bool // on the tenant's other key
	status            string
	reserved, charged money.Micros
	at                time.Time
}

// createSeedRecord writes r for key k as accepted (without any hold: no cap counted it) and
// returns its id.
func createSeedRecord(t *testing.T, s store.Store, k store.Key, r seedRecord) string {
	t.Helper()
	ctx := t.Context()
	var id string
	err := s.Transact(ctx, func(tx store.Tx) error {
		if r.speech {
			sp := newSpeech(k, "", r.at.Add(time.Minute))
			sp.Status, sp.Reserved, sp.Charged, sp.CreatedAt, sp.UpdatedAt = r.status, r.reserved, r.charged, r.at, r.at
			id = sp.ID
			return tx.CreateSpeech(ctx, sp)
		}
		task := newTask(k, "")
		task.Status, task.Reserved, task.Charged, task.CreatedAt, task.UpdatedAt = r.status, r.reserved, r.charged, r.at, r.at
		id = task.ID
		return tx.CreateTask(ctx, task)
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// holdTask accepts a task of amount for k at at and holds it against counters, in one
// transaction in the services' order: the record first, then the hold, then the accounts.
func holdTask(ctx context.Context, s store.Store, k store.Key, amount money.Micros, at time.Time, counters ...store.CappedCounter) error {
	task := newTask(k, "")
	task.Reserved, task.CreatedAt, task.UpdatedAt = amount, at, at
	return s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateTask(ctx, task); err != nil {
			return err
		}
		if err := tx.HoldSpend(ctx, store.SpendHold{Ref: task.ID, Amount: amount, Counters: counters}); err != nil {
			return err
		}
		return tx.Post(ctx, store.Txn{ID: "txn_" + task.ID, Kind: "reserve", Ref: task.ID, CreatedAt: at, Entries: []store.Entry{
			{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -amount},
			{Account: store.AccountID(k.ID, store.AccountReserved), Amount: amount},
		}})
	})
}

// seededCounter is the capped counter of scope ("key" or "tenant") and kind ("day" or
// "month") around seedDay, with its bounds.
func seededCounter(scope, owner, kind string, c money.Micros) store.CappedCounter {
	y, m, d := seedDay.Date()
	from := time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
	until, period := from.AddDate(0, 0, 1), "day:"+from.Format("2006-01-02")
	if kind == "month" {
		from = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		until, period = from.AddDate(0, 1, 0), "month:"+from.Format("2006-01")
	}
	return store.CappedCounter{SpendCounter: store.SpendCounter{Scope: scope, Owner: owner, Period: period,
		From: from, Until: until}, Cap: c}
}

// spentNine is a period's spending before its cap: 9 settled (a task's 6 with overage above
// its reservation of 5, a speech's 3, a released task's 0) and 0.5 open (a queued task).
func spentNine(at time.Time) []seedRecord {
	return []seedRecord{
		{status: store.StatusCompleted, reserved: 5 * mu1, charged: 6 * mu1, at: at},
		{speech: true, other: true, status: store.SpeechCompleted, reserved: 4 * mu1, charged: 3 * mu1, at: at.Add(time.Minute)},
		{status: store.StatusFailed, reserved: 7 * mu1, at: at.Add(2 * time.Minute)},
		{other: true, status: store.StatusQueued, reserved: mu1 / 2, at: at.Add(3 * time.Minute)},
	}
}

func testSpendCapSeededMidPeriod(t *testing.T, s store.Store) {
	morning := seedDay.Add(-10 * time.Hour)
	tests := []struct {
		name    string
		scope   string // the capped counter's scope; "key" records of the other key are its own
		kind    string
		records []seedRecord
		seed    money.Micros   // what the period spent before its first hold
		holds   []money.Micros // in order; wantOK says which are accepted
		wantOK  []bool
		want    money.Micros // the counter after the holds
	}{
		{name: "KeyDailyCountsTodaysSpending", seed: 19 * mu1 / 2, scope: "key", kind: "day", records: spentNine(morning),
			holds: []money.Micros{mu1, mu1 / 2, 1}, wantOK: []bool{false, true, false}, want: 10 * mu1},
		{name: "KeyMonthlyCountsThisMonthsSpending", seed: 19 * mu1 / 2, scope: "key", kind: "month", records: spentNine(seedDay.AddDate(0, 0, -20)),
			holds: []money.Micros{mu1, mu1 / 2}, wantOK: []bool{false, true}, want: 10 * mu1},
		{name: "TenantDailyCountsEveryKeysSpending", seed: 19 * mu1 / 2, scope: "tenant", kind: "day", records: spentNine(morning),
			holds: []money.Micros{mu1, mu1 / 2}, wantOK: []bool{false, true}, want: 10 * mu1},
		{name: "TenantMonthlyCountsEveryKeysSpending", seed: 19 * mu1 / 2, scope: "tenant", kind: "month", records: spentNine(seedDay.AddDate(0, 0, -24)),
			holds: []money.Micros{mu1, mu1 / 2}, wantOK: []bool{false, true}, want: 10 * mu1},
		{name: "YesterdayDoesNotCountToday", seed: mu1, scope: "key", kind: "day",
			records: append(spentNine(morning.Add(-24*time.Hour)), seedRecord{status: store.StatusCompleted, reserved: mu1, charged: mu1, at: morning}),
			holds:   []money.Micros{mu1, 8 * mu1, 1}, wantOK: []bool{true, true, false}, want: 10 * mu1},
		{name: "LastMonthDoesNotCountThisMonth", seed: 0, scope: "tenant", kind: "month", records: spentNine(seedDay.AddDate(0, -1, 0)),
			holds: []money.Micros{10 * mu1}, wantOK: []bool{true}, want: 10 * mu1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			tenant := fmt.Sprintf("seed_%d", seq.Add(1))
			k, other := newKey(t, s, tenant, true), newKey(t, s, tenant, true)
			c := seededCounter(tt.scope, "", tt.kind, 10*mu1)
			var open []seedRecord // in the period, still open
			var openIDs []string
			for _, r := range tt.records {
				owner := k
				if r.other && tt.scope == "tenant" {
					owner = other
				}
				id := createSeedRecord(t, s, owner, r)
				if (r.status == store.StatusQueued || r.status == store.SpeechPending) && !r.at.Before(c.From) && r.at.Before(c.Until) {
					open, openIDs = append(open, r), append(openIDs, id)
				}
			}
			// The tenant's other key spends too; a key's counter never counts it.
			if tt.scope == "key" {
				createSeedRecord(t, s, other, seedRecord{status: store.StatusCompleted, reserved: 9 * mu1, charged: 9 * mu1, at: morning})
			}
			owner := k.ID
			if tt.scope == "tenant" {
				owner = tenant
			}
			c = seededCounter(tt.scope, owner, tt.kind, 10*mu1)
			// Before any hold, a read of the period answers what its records spent.
			now := spent(t, s, c.SpendCounter)
			if now != tt.seed {
				t.Errorf("the period reads %s before its first hold, want %s", now, tt.seed)
			}
			for i, amount := range tt.holds {
				err := holdTask(ctx, s, k, amount, seedDay, c)
				if ok := err == nil; ok != tt.wantOK[i] {
					t.Fatalf("hold %d of %s: %v, want accepted %v", i, amount, err, tt.wantOK[i])
				}
				var ce *store.SpendCapError
				switch {
				case err == nil:
					now += amount
				case !errors.As(err, &ce):
					t.Fatalf("hold %d: %v", i, err)
				case ce.Spent != now:
					t.Errorf("hold %d refused with %s spent, want %s", i, ce.Spent, now)
				}
			}
			if got := spent(t, s, c.SpendCounter); got != tt.want {
				t.Errorf("counter holds %s, want %s", got, tt.want)
			}
			// A reservation open when the counter was made settles to its final charge on it.
			want := tt.want
			for i, id := range openIDs {
				final := open[i].reserved / 5
				if err := s.Transact(ctx, func(tx store.Tx) error { return tx.SettleSpend(ctx, id, final) }); err != nil {
					t.Fatal(err)
				}
				want -= open[i].reserved - final
			}
			if got := spent(t, s, c.SpendCounter); got != want {
				t.Errorf("after the open records settled the counter holds %s, want %s", got, want)
			}
		})
	}
}

// SpendCapSeededOnceAcrossHandles: a key spent 30 today with no cap; then n concurrent first
// reservations of 7 under a daily cap of 100 (and a monthly tenant cap of 200), spread over the
// handles (replicas), half of them in shared commits: the counters are seeded once, exactly as
// many are accepted as the room left allows, and the counters hold exactly the seed plus them.
func SpendCapSeededOnceAcrossHandles(t *testing.T, handles []store.Store, n int) {
	t.Helper()
	ctx := t.Context()
	s := handles[0]
	tenant := fmt.Sprintf("seedc_%d", seq.Add(1))
	k, other := newKey(t, s, tenant, true), newKey(t, s, tenant, true)
	createSeedRecord(t, s, k, seedRecord{status: store.StatusCompleted, reserved: 30, charged: 30, at: seedDay.Add(-time.Hour)})
	open := createSeedRecord(t, s, other, seedRecord{status: store.StatusQueued, reserved: 50, at: seedDay.AddDate(0, 0, -3)})
	const amount = 7
	day := seededCounter("key", k.ID, "day", 100)
	month := seededCounter("tenant", tenant, "month", 200)
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
			if i%4 < 2 {
				hctx = store.ShareCommit(ctx, tenant, k.ID)
			}
			err := holdTask(hctx, h, k, amount, seedDay, month, day)
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
	// The key's day has 70 left: 10 of 7. The tenant's month has 120 left: 17.
	if want := min((100-30)/amount, n); accepted != want {
		t.Errorf("accepted %d of %d, want exactly %d", accepted, n, want)
	}
	if got := spent(t, s, day.SpendCounter); got != money.Micros(30+accepted*amount) {
		t.Errorf("key's day holds %d, want %d", got, 30+accepted*amount)
	}
	if got := spent(t, s, month.SpendCounter); got != money.Micros(80+accepted*amount) {
		t.Errorf("tenant's month holds %d, want %d", got, 80+accepted*amount)
	}
	// The other key's reservation, open when the counters were made, settles at 10 on them.
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.SettleSpend(ctx, open, 10) }); err != nil {
		t.Fatal(err)
	}
	if got := spent(t, s, month.SpendCounter); got != money.Micros(40+accepted*amount) {
		t.Errorf("tenant's month holds %d after the open reservation settled at 10, want %d", got, 40+accepted*amount)
	}
}

func testSpendCapSeededOnceUnderConcurrentHolds(t *testing.T, s store.Store) {
	SpendCapSeededOnceAcrossHandles(t, []store.Store{s, s}, 30)
}

// testSpendCapSeedSurvivesARolledBackFirstHold: the first hold of a period made (and seeded)
// the counter's row in a transaction that then rolled back; the row is gone, so the next hold
// seeds again and still counts what the period spent.
func testSpendCapSeedSurvivesARolledBackFirstHold(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, fmt.Sprintf("seedr_%d", seq.Add(1)), true)
	createSeedRecord(t, s, k, seedRecord{status: store.StatusCompleted, reserved: 9 * mu1, charged: 9 * mu1, at: seedDay.Add(-time.Hour)})
	c := seededCounter("key", k.ID, "day", 10*mu1)
	errLater := errors.New("a later step failed")
	err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.HoldSpend(ctx, store.SpendHold{Ref: "vid_rolled_back", Amount: mu1 / 2, Counters: []store.CappedCounter{c}}); err != nil {
			return err
		}
		return errLater
	})
	if !errors.Is(err, errLater) {
		t.Fatalf("transaction: %v", err)
	}
	if err := holdTask(ctx, s, k, mu1+1, seedDay, c); !errors.Is(err, store.ErrSpendCap) {
		t.Fatalf("a hold past the seeded cap after a rolled-back first hold: %v", err)
	}
	if err := holdTask(ctx, s, k, mu1, seedDay, c); err != nil {
		t.Fatal(err)
	}
	if got := spent(t, s, c.SpendCounter); got != 10*mu1 {
		t.Errorf("counter holds %s, want 10", got)
	}
}
