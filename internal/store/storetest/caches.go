package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// testBalanceFollowsOwnPosts: once a post made through the store has returned, every balance
// read through it shows the post, with readers polling all the while (as clients do). A store
// that caches balances must pass this exactly like one that does not.
func testBalanceFollowsOwnPosts(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	if err := credit(ctx, s, k, 1_000_000); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		readers.Go(func() {
			last := money.Micros(1 << 62)
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := s.Balance(ctx, k.ID)
				if err != nil {
					errs <- err
					return
				}
				// Only reservations happen below, so available only falls.
				if b.Available > last {
					errs <- fmt.Errorf("available went back up from %s to %s", last, b.Available)
					return
				}
				last = b.Available
				readPause()
			}
		})
	}
	for i := 1; i <= 50; i++ {
		if err := reserve(ctx, s, k, 1000); err != nil {
			t.Fatal(err)
		}
		b := balance(t, s, k)
		if want := money.Micros(1_000_000 - 1000*i); b.Available != want || b.Reserved != money.Micros(1000*i) {
			close(stop)
			t.Fatalf("after reservation %d: available %s reserved %s, want %s and %d", i, b.Available, b.Reserved, want, 1000*i)
		}
	}
	close(stop)
	readers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// ReadsBoundedAcrossReplicas checks what a replica (reader) serves after another replica
// (writer) changed a task and a balance in the shared database: a read that starts bound after
// the write returned shows it, whatever the reader had cached. Each round first makes the
// reader read (and cache) the old values.
func ReadsBoundedAcrossReplicas(t *testing.T, writer, reader store.Store, bound time.Duration) {
	t.Helper()
	ctx := t.Context()
	k := newKey(t, writer, "acme", false)
	if err := credit(ctx, writer, k, 1_000_000); err != nil {
		t.Fatal(err)
	}
	id := createTasks(t, writer, k, 1, time.Now().Add(-time.Second))[0]
	for p := 1; p <= 3; p++ {
		for range 3 {
			if _, err := reader.Task(ctx, id); err != nil {
				t.Fatal(err)
			}
			_ = balance(t, reader, k)
		}
		stepTask(t, writer, id, p)
		if err := reserve(ctx, writer, k, 1000); err != nil {
			t.Fatal(err)
		}
		time.Sleep(bound)
		got, err := reader.Task(ctx, id)
		if err != nil || got.Progress != p {
			t.Fatalf("%v after another replica's write: progress %d (%v), want %d", bound, got.Progress, err, p)
		}
		if b := balance(t, reader, k); b.Reserved != money.Micros(1000*p) {
			t.Fatalf("%v after another replica's reservation: reserved %s, want %d", bound, b.Reserved, 1000*p)
		}
	}
}

// TaskWritesSeenPromptly checks a reader whose task cache hears of other replicas' writes
// (PostgreSQL's notifications): each write made on writer shows on reader within within,
// which the caller sets far below the reader's ttl, so a cache that only expired entries
// would fail. It returns the slowest lag seen.
func TaskWritesSeenPromptly(t *testing.T, writer, reader store.Store, within time.Duration) time.Duration {
	t.Helper()
	ctx := t.Context()
	k := newKey(t, writer, "acme", false)
	id := createTasks(t, writer, k, 1, time.Now().Add(-time.Second))[0]
	var slowest time.Duration
	for p := 1; p <= 20; p++ {
		for range 3 {
			if _, err := reader.Task(ctx, id); err != nil {
				t.Fatal(err)
			}
		}
		stepTask(t, writer, id, p)
		wrote := time.Now()
		for {
			got, err := reader.Task(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if got.Progress == p {
				break
			}
			if time.Since(wrote) > within {
				t.Fatalf("write %d not seen on the other replica after %v (it still reads progress %d)", p, within, got.Progress)
			}
			time.Sleep(time.Millisecond)
		}
		slowest = max(slowest, time.Since(wrote))
	}
	return slowest
}

// PollsNeverGoBackAcrossReplicas polls a task on reader from several goroutines while writer,
// another replica, advances it: no poller ever sees progress go back, and each sees the last
// write within bound of it.
func PollsNeverGoBackAcrossReplicas(t *testing.T, writer, reader store.Store, bound time.Duration) {
	t.Helper()
	ctx := t.Context()
	k := newKey(t, writer, "acme", false)
	id := createTasks(t, writer, k, 1, time.Now().Add(-time.Second))[0]
	const last = 40
	polls := startPollers(ctx, reader, id, 4)
	for p := 1; p <= last; p++ {
		stepTask(t, writer, id, p)
	}
	time.Sleep(bound)
	for _, err := range polls.finish() {
		t.Error(err)
	}
	if got, err := reader.Task(ctx, id); err != nil || got.Progress != last {
		t.Errorf("%v after the last write: progress %d (%v), want %d", bound, got.Progress, err, last)
	}
}
