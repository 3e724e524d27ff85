//go:build !unix

package load

import "time"

func nanosleep(d time.Duration) { time.Sleep(d) }
