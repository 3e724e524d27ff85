package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/store"
)

// TestBackgroundCheckpointMovesTheWAL writes well past what one WAL checkpoint would hold and
// checks that the pages reach the database file while the store is open. The writer has
// auto-checkpointing off, so only the background checkpointer can have put them there.
func TestBackgroundCheckpointMovesTheWAL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	db, err := Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := fileSize(t, path)
	ctx := t.Context()
	value := strings.Repeat("x", 8000)
	for i := range 300 {
		if err := db.Transact(ctx, func(tx store.Tx) error {
			_, err := tx.SetMetaOnce(ctx, fmt.Sprintf("k%d", i), value)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for fileSize(t, path) < before+2<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("database file still %d bytes (WAL %d bytes): nothing checkpointed", fileSize(t, path), fileSize(t, path+"-wal"))
		}
		time.Sleep(50 * time.Millisecond) // a wait of its own: package sqlite's tests cannot import testkit (an import cycle)
	}
}

// TestWALStaysBoundedUnderSteadyWrites writes without a pause, which a passive checkpoint never
// catches up with, and checks that the WAL file keeps being reset.
func TestWALStaysBoundedUnderSteadyWrites(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.db")
	const maxFrames = 256 // 1 MiB of 4 KiB pages
	db, err := open(context.Background(), path, maxFrames)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := t.Context()
	value := strings.Repeat("x", 8000)
	var largest int64
	var wg sync.WaitGroup
	var n atomic.Int64
	// Write until the database holds enough to tell (a WAL that is never reset holds more
	// than everything written), not for a fixed time: a loaded machine writes longer instead
	// of skipping. And for at least 16 checkpoint periods: a reset WAL peaks at what is
	// written between two checkpoints, however long the run, and one late checkpoint under
	// load (a CI run wrote 70 MiB in 1.8 s, the WAL peaking at 38 MiB) must not decide.
	const enough = 64 << 20
	var done atomic.Bool
	start := time.Now()
	minRun := 16 * checkpointEvery
	stop := start.Add(30 * time.Second)
	for range 8 {
		wg.Go(func() {
			for !done.Load() {
				i := n.Add(1)
				if err := db.Transact(ctx, func(tx store.Tx) error {
					_, err := tx.SetMetaOnce(ctx, fmt.Sprintf("k%d", i), value)
					return err
				}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for !done.Load() {
		if fi, err := os.Stat(path + "-wal"); err == nil {
			largest = max(largest, fi.Size())
		}
		if fileSize(t, path) >= enough && time.Since(start) >= minRun || time.Now().After(stop) {
			done.Store(true)
		}
		time.Sleep(20 * time.Millisecond) // fixed: samples the WAL's size while the writers run
	}
	wg.Wait()
	written := fileSize(t, path)
	t.Logf("%d transactions, database %d MiB, largest WAL seen %.1f MiB", n.Load(), written>>20, float64(largest)/(1<<20))
	if written < 16<<20 {
		t.Skipf("only %d MiB written: too little to tell", written>>20)
	}
	// Bounded means the file is reset again and again: it holds what was written between two
	// checkpoints, a small part of the database. Unbounded (measured with no reset), it held
	// more than everything written: 178 MiB of WAL beside a 127 MiB database.
	if largest > written/2 {
		t.Errorf("the WAL reached %d MiB beside a %d MiB database: it is not being reset", largest>>20, written>>20)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
