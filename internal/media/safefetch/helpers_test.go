package safefetch

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
)

// errNotDialled is what the recording dialer answers for any address that
// is neither loopback nor an in-memory pipe server: tests never send a
// packet outside 127.0.0.0/8 and ::1.
var errNotDialled = errors.New("test dialer: refusing to dial a non-loopback address")

// recorder is an injected DialContext that records every address the client
// tried to dial. Loopback addresses are dialled for real; addresses
// registered with servePipe get an in-memory net.Pipe served by an
// http.Server (no network at all); everything else fails with errNotDialled.
type recorder struct {
	mu    sync.Mutex
	addrs []string
	pipes map[string]*pipeListener
}

func (r *recorder) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	r.addrs = append(r.addrs, addr)
	pl := r.pipes[addr]
	r.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return nil, fmt.Errorf("test dialer got a non-IP address %q: %w", addr, err)
	}
	if ap.Addr().IsLoopback() {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	if pl != nil {
		return pl.dial()
	}
	return nil, errNotDialled
}

func (r *recorder) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.addrs...)
}

// servePipe makes addr (a pretend public "ip:port") answer with h over
// in-memory pipes.
func (r *recorder) servePipe(t *testing.T, addr string, h http.Handler) {
	t.Helper()
	pl := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(pl) }()
	t.Cleanup(func() { _ = srv.Close() })
	r.mu.Lock()
	if r.pipes == nil {
		r.pipes = map[string]*pipeListener{}
	}
	r.pipes[addr] = pl
	r.mu.Unlock()
}

type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) dial() (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// fakeResolver answers from a script: each lookup of a name consumes the
// next answer; the last answer repeats. Unknown names fail like NXDOMAIN.
type fakeResolver struct {
	mu      sync.Mutex
	answers map[string][][]netip.Addr
	lookups []string
}

func newFakeResolver() *fakeResolver {
	return &fakeResolver{answers: map[string][][]netip.Addr{}}
}

func (f *fakeResolver) set(host string, seq ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var answers [][]netip.Addr
	for _, s := range seq {
		var ips []netip.Addr
		for _, part := range splitComma(s) {
			ips = append(ips, netip.MustParseAddr(part))
		}
		answers = append(answers, ips)
	}
	f.answers[host] = answers
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

func (f *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lookups = append(f.lookups, host)
	seq := f.answers[host]
	if len(seq) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	ans := seq[0]
	if len(seq) > 1 {
		f.answers[host] = seq[1:]
	}
	return ans, nil
}

// testClient builds a client whose every dial goes through a recorder and
// whose names resolve through a fakeResolver.
func testClient(t *testing.T, o Options) (*Client, *recorder, *fakeResolver) {
	t.Helper()
	rec := &recorder{}
	res := newFakeResolver()
	if o.Resolver == nil {
		o.Resolver = res
	}
	o.DialContext = rec.dial
	c := New(o)
	t.Cleanup(c.CloseIdleConnections)
	return c, rec, res
}

// tlsConfigFor trusts an httptest TLS server's certificate.
func tlsConfigFor(t *testing.T, srv *httptest.Server) *tls.Config {
	t.Helper()
	tr, ok := srv.Client().Transport.(*http.Transport)
	if !ok {
		t.Fatal("httptest client has no *http.Transport")
	}
	return tr.TLSClientConfig.Clone()
}

func assertKind(t *testing.T, err, want error) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %v", want)
	}
	if !errors.Is(err, want) {
		t.Fatalf("got %v, want kind %v", err, want)
	}
}
