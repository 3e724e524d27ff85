package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
		time.Sleep(50 * time.Millisecond)
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
