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

// CreatesOfOneKeyAcrossReplicas runs concurrent creates as the API makes them (task, job and
// reservation in one transaction marked by store.ShareCommit) through several store handles,
// as several replicas would: two keys of one tenant, each admitting exactly funded creates,
// offered twice as many distinct requests, each sent twice (a client retrying on another
// replica), once under an in-flight limit of funded tasks per key (with funds for twice as
// many: the limit, read inside the batch, is the bound) and once with funds for funded creates
// the only bound. Every rule must hold as with unshared transactions: exactly funded creates of each key
// accepted, never two tasks for one client_request_id, no overdraft, counters right, and the
// copy of an accepted request finds it.
func CreatesOfOneKeyAcrossReplicas(t *testing.T, handles []store.Store, funded int) {
	t.Helper()
	t.Run("under an in-flight limit", func(t *testing.T) { createsOfOneKey(t, handles, "acme", funded, true) })
	// Without a limit nothing is read inside the batch: the funds guard alone refuses, in
	// the same round trip as the batch's COMMIT on PostgreSQL.
	t.Run("funds the only bound", func(t *testing.T) { createsOfOneKey(t, handles, "acme-funds", funded, false) })
	t.Run("counts read inside batches", func(t *testing.T) { countsInsideBatches(t, handles, funded) })
}

// countsInsideBatches creates tasks of two keys of one tenant concurrently through every
// handle, nothing refused (so batches stay optimistic), each reading its in-flight counts as
// the API does after its insert: in whatever order they commit, the counts seen must be those of
// a serial order, each value from 1 to the final count seen exactly once.
func countsInsideBatches(t *testing.T, handles []store.Store, perKey int) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keys := []store.Key{newKey(t, handles[0], "acme-counts", true), newKey(t, handles[0], "acme-counts", true)}
	var mu sync.Mutex
	seenKey := map[string]map[int]int{}
	seenTenant := map[int]int{}
	var wg sync.WaitGroup
	for ki, k := range keys {
		seenKey[k.ID] = map[int]int{}
		for r := range perKey {
			s := handles[r%len(handles)]
			wg.Go(func() {
				task := newTask(k, fmt.Sprintf("count-%d-%d", ki, r))
				var n store.InFlight
				err := s.Transact(store.ShareCommit(ctx, k.TenantID, k.ID), func(tx store.Tx) (err error) {
					if err := tx.CreateTask(ctx, task); err != nil {
						return err
					}
					n, err = tx.InFlight(ctx, store.InFlightTasks, k.ID, k.TenantID)
					return err
				})
				if err != nil {
					t.Errorf("create: %v", err)
					return
				}
				mu.Lock()
				seenKey[k.ID][n.Key]++
				seenTenant[n.Tenant]++
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for ki, k := range keys {
		for c := 1; c <= perKey; c++ {
			if seenKey[k.ID][c] != 1 {
				t.Errorf("key %d: count %d seen %d times, want once", ki, c, seenKey[k.ID][c])
			}
		}
	}
	for c := 1; c <= len(keys)*perKey; c++ {
		if seenTenant[c] != 1 {
			t.Errorf("tenant: count %d seen %d times, want once", c, seenTenant[c])
		}
	}
}

func createsOfOneKey(t *testing.T, handles []store.Store, tenant string, funded int, limit bool) {
	funds := funded
	if limit {
		funds = 2 * funded
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const price = 1000
	var keys []store.Key
	for range 2 {
		k := newKey(t, handles[0], tenant, false)
		if err := credit(ctx, handles[0], k, money.Micros(funds*price)); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	type outcome struct {
		key  int
		crid string
		err  error
	}
	out := make(chan outcome, 8*funded)
	var wg sync.WaitGroup
	for ki, k := range keys {
		for r := range 2 * funded {
			crid := fmt.Sprintf("req-%d-%d", ki, r)
			for copy := range 2 {
				s := handles[(r+copy)%len(handles)]
				wg.Go(func() {
					task := newTask(k, crid)
					task.Reserved = price
					err := s.Transact(store.ShareCommit(ctx, k.TenantID, k.ID), func(tx store.Tx) error {
						if err := tx.CreateTask(ctx, task); err != nil {
							return err
						}
						// An in-flight limit of funded tasks per key, checked as the API checks
						// it: its counts are read inside the batch (PostgreSQL sends for them).
						if limit {
							if n, err := tx.InFlight(ctx, store.InFlightTasks, k.ID, k.TenantID); err != nil {
								return err
							} else if n.Key > funded {
								return errOverLimit
							}
						}
						if err := tx.EnqueueJob(ctx, store.Job{ID: taskKind + ":" + task.ID, Kind: taskKind, Ref: task.ID,
							TenantID: task.TenantID, RunAt: task.CreatedAt, CreatedAt: task.CreatedAt}); err != nil {
							return err
						}
						return tx.Post(ctx, store.Txn{ID: "txn_" + task.ID, Kind: "reserve", Ref: task.ID, Entries: []store.Entry{
							{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -price},
							{Account: store.AccountID(k.ID, store.AccountReserved), Amount: price}}})
					})
					out <- outcome{ki, crid, err}
				})
			}
		}
	}
	wg.Wait()
	close(out)
	accepted := make([]int, len(keys))
	perRequest, conflicts := map[string]int{}, map[string]int{}
	for o := range out {
		switch {
		case o.err == nil:
			accepted[o.key]++
			perRequest[o.crid]++
		case errors.Is(o.err, store.ErrConflict):
			conflicts[o.crid]++
		case errors.Is(o.err, store.ErrInsufficientFunds), errors.Is(o.err, errOverLimit):
		default:
			t.Errorf("create %s: %v", o.crid, o.err)
		}
	}
	for crid, n := range perRequest {
		if n > 1 {
			t.Errorf("%s was accepted %d times", crid, n)
		}
		// Funds only go down and tasks only get added here, so the copy of an accepted request
		// cannot have been refused for funds or the limit before it: it must find the original
		// (the API answers a replay with it, even when the balance is spent or the limit reached).
		if conflicts[crid] != 1 {
			t.Errorf("%s: accepted, and its copy got %d conflicts, want 1 (a replay is found before the funds check)", crid, conflicts[crid])
		}
	}
	for i, k := range keys {
		if accepted[i] != funded {
			t.Errorf("key %d: %d creates accepted, want exactly %d (funds for %d, limit %v, %d distinct requests offered)", i, accepted[i], funded, funds, limit, 2*funded)
		}
		for hi, s := range handles {
			b := balance(t, s, k)
			if b.Available != money.Micros((funds-funded)*price) || b.Reserved != money.Micros(funded*price) {
				t.Errorf("key %d on handle %d: available %s reserved %s, want %d and %d", i, hi, b.Available, b.Reserved, (funds-funded)*price, funded*price)
			}
		}
		wantInFlight(t, fmt.Sprintf("key %d", i), tasksInFlight(t, handles[0], k), funded, 2*funded)
	}
}

func testSharedCreatesOfOneKey(t *testing.T, s store.Store) {
	CreatesOfOneKeyAcrossReplicas(t, []store.Store{s}, 30)
}
