//go:build !unix

package netlimit

// RaiseFileLimit has nothing to raise where there is no RLIMIT_NOFILE; 0 means unknown.
func RaiseFileLimit() (soft, hard uint64, err error) { return 0, 0, nil }
