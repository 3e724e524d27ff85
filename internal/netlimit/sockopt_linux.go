package netlimit

import (
	"net"
	"syscall"
)

// tcpNotSentLowat is TCP_NOTSENT_LOWAT of linux/tcp.h (Linux 3.12 on); the syscall package
// does not name it.
const tcpNotSentLowat = 0x19

// setNotSentLowat bounds the bytes a connection's send buffer holds that the client's window
// has not yet let the kernel send: a writer blocks past it. Data in flight is not counted,
// so a fast, distant client is not slowed; a client that stops reading (a zero window)
// costs the kernel this much instead of the send buffer's autotuned size (up to
// net.ipv4.tcp_wmem's maximum, 4 MiB by default), and the server the copying of it.
func setNotSentLowat(c net.Conn, bytes int) {
	tc, ok := c.(*net.TCPConn)
	if !ok || bytes <= 0 {
		return
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) {
		_ = syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpNotSentLowat, bytes)
	})
}
