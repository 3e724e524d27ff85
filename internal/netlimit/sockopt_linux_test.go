package netlimit

import (
	"net"
	"syscall"
	"testing"
)

// An admitted connection carries the listener's TCP_NOTSENT_LOWAT.
func TestAdmittedConnectionsGetTheNotSentBound(t *testing.T) {
	t.Parallel()
	a := newAcceptor(t, Config{Name: ListenerAPI, Max: 4, NotSentLowat: 128 << 10})
	got, c := a.connect(t, "127.0.0.2")
	if got != "" {
		t.Fatalf("refused: %q", got)
	}
	raw, err := c.(*Conn).Conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var v int
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		v, gerr = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, tcpNotSentLowat)
	}); err != nil || gerr != nil {
		t.Fatal(err, gerr)
	}
	if v != 128<<10 {
		t.Errorf("TCP_NOTSENT_LOWAT = %d, want %d", v, 128<<10)
	}
}
