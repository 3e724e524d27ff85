//go:build unix

package sqlite

import (
	"errors"
	"path/filepath"
	"testing"
)

func TestLockServeRefusesASecondHolderUntilReleased(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	first, err := LockServe(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockServe(path); !errors.Is(err, ErrInUse) {
		t.Fatalf("second lock: %v, want ErrInUse", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := LockServe(path)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	_ = again.Close()
}
