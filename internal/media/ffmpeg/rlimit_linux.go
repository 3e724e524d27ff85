//go:build linux

package ffmpeg

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// limitMemory sets the started child pid's RLIMIT_DATA to max bytes (0: leaves it alone). A
// child that has already exited (ESRCH) needs no limit.
func limitMemory(pid int, max int64) error {
	if max <= 0 {
		return nil
	}
	lim := unix.Rlimit{Cur: uint64(max), Max: uint64(max)}
	if err := unix.Prlimit(pid, unix.RLIMIT_DATA, &lim, nil); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("limit memory: %w", err)
	}
	return nil
}
