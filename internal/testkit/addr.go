package testkit

import (
	"fmt"
	"math/rand/v2"
	"net"
	"testing"
)

// FreeAddr returns a loopback address nothing listens on, for a process started later to
// listen on. The port is free only when asked, so it is taken on a loopback address of its own
// in 127.0.0.0/8 rather than on 127.0.0.1: a server another test starts on 127.0.0.1:0 in the
// meantime can be handed the same port (one was, and a test talked to another test's server),
// but not on this address.
func FreeAddr(t testing.TB) string {
	t.Helper()
	host := fmt.Sprintf("127.%d.%d.%d", 1+rand.IntN(254), rand.IntN(256), 1+rand.IntN(254))
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
