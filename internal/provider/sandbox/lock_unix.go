//go:build unix

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// errLocked means another live process holds the lock.
var errLocked = errors.New("held by another process")

// lockFile takes an exclusive, non-blocking flock on path (created if missing). Closing the
// returned file releases it; so does the death of this process. The descriptor is
// close-on-exec, so the tools a render starts do not inherit (and prolong) the lock.
func lockFile(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, fmt.Errorf("flock %s: %w", path, err)
	}
	return f, nil
}
