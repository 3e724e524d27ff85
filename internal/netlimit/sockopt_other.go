//go:build !linux

package netlimit

import "net"

// setNotSentLowat is a no-op where TCP_NOTSENT_LOWAT is not known to this package.
func setNotSentLowat(net.Conn, int) {}
