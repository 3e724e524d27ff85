package testkit

import (
	"net"
	"net/netip"
	"testing"
)

// FreeAddr's address is on loopback but not 127.0.0.1 (where port-0 servers of other tests
// listen), nothing listens on it, and a process can listen on it.
func TestFreeAddrIsAFreeLoopbackAddressOfItsOwn(t *testing.T) {
	addr := FreeAddr(t)
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().IsLoopback() || ap.Addr() == netip.MustParseAddr("127.0.0.1") || ap.Port() == 0 {
		t.Fatalf("FreeAddr = %q (%v): want a port on a loopback address other than 127.0.0.1", addr, err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Fatalf("something listens on %s", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	ln.Close()
}
