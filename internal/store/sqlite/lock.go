//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockRetry is how long LockServe waits for a lock held by someone else to go away.
const lockRetry = 2 * time.Second

// ErrInUse is returned by LockServe when another process already serves the database.
var ErrInUse = errors.New("another mediagen serve process is using this SQLite database")

// LockServe takes an exclusive lock that marks path as served by this process, released by
// Close or when the process dies. SQLite serves one process (its single writer and the task
// cache live in it); a second serve process on the same file is refused rather than left to
// wait on the writer lock and read stale cached tasks. Operator commands (admin, migrate) do
// not take it.
func LockServe(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
	}
	f, err := os.OpenFile(path+".serve-lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	// A lock released a moment ago can still be held for a few milliseconds by a child process
	// forked (for ffmpeg, say) but not yet exec'd at the moment it was closed: the child shares
	// the open file and its lock until exec closes it. Such a lock goes away by itself; another
	// serving process's does not. So a refusal is retried for a short while before it is final.
	deadline := time.Now().Add(lockRetry)
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	for errors.Is(err, syscall.EWOULDBLOCK) && time.Now().Before(deadline) {
		time.Sleep(25 * time.Millisecond)
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	}
	if err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s); run one serve process per SQLite database, or use PostgreSQL for several", ErrInUse, path)
		}
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	return f, nil
}
