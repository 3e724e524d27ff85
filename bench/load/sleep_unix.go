//go:build unix

package load

import (
	"syscall"
	"time"
)

// nanosleep blocks the calling thread for d; the runtime moves other goroutines off it.
func nanosleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	for syscall.Nanosleep(&ts, &ts) == syscall.EINTR {
	}
}
