//go:build unix

package netlimit

import (
	"fmt"
	"syscall"
)

// RaiseFileLimit raises the soft limit on open files to the hard limit when it is lower, and
// returns the limit in force. Go (since 1.19) already raises it at start on Unix, to one below
// the hard limit (go.dev/issue/46279; src/syscall/rlimit.go); this covers a runtime that did
// not, and reads the figure the connection bounds must fit in.
func RaiseFileLimit() (soft, hard uint64, err error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, 0, fmt.Errorf("read the open-file limit: %w", err)
	}
	if l.Max > 0 && l.Cur < l.Max-1 {
		raised := l
		raised.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
			l = raised
		}
	}
	return uint64(l.Cur), uint64(l.Max), nil
}
