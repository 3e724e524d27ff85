package testkit

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/netip"
	"testing"
	"time"

	"mediagen/internal/media/safefetch"
)

// Names resolves the names it holds to their addresses and every other name to "no such
// host": a test that names a host never sends a DNS query.
type Names map[string]string

// LookupNetIP implements safefetch's resolver.
func (m Names) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[host]; ok {
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

// LoopbackFetch is a safefetch client for tests: loopback allowed, names resolved only by
// names, TLS trusting roots (nil: the system's), and a dial to anything but loopback fails
// the test instead of leaving the machine. Its idle connections close when the test ends.
func LoopbackFetch(t testing.TB, roots *x509.CertPool, names Names) *safefetch.Client {
	t.Helper()
	o := safefetch.Options{AllowLoopback: true, Resolver: names, DialContext: LoopbackDialer(t)}
	if roots != nil {
		o.TLSConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	c := safefetch.New(o)
	t.Cleanup(c.CloseIdleConnections)
	return c
}

// LoopbackDialer dials loopback addresses only; any other fails the test.
func LoopbackDialer(t testing.TB) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: 2 * time.Second}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		ap, err := netip.ParseAddrPort(addr)
		if err != nil || !ap.Addr().IsLoopback() {
			t.Errorf("dialled %s: tests never leave loopback", addr)
			return nil, errors.New("refused by the test")
		}
		return d.DialContext(ctx, network, addr)
	}
}
