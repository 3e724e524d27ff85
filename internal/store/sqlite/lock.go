//go:build unix

package sqlite

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

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
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s); run one serve process per SQLite database, or use PostgreSQL for several", ErrInUse, path)
		}
		return nil, fmt.Errorf("sqlite: lock %s: %w", path, err)
	}
	return f, nil
}
