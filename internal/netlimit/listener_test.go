package netlimit

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/testkit"
)

// value is the value of the series of family whose labels are exactly labels.
func value(t *testing.T, reg *prometheus.Registry, family string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
	next:
		for _, m := range mf.Metric {
			if len(m.Label) != len(labels) {
				continue
			}
			for _, lp := range m.Label {
				if labels[lp.GetName()] != lp.GetValue() {
					continue next
				}
			}
			if m.Gauge != nil {
				return m.Gauge.GetValue()
			}
			return m.Counter.GetValue()
		}
	}
	t.Fatalf("no series %s%v", family, labels)
	return 0
}

// acceptor runs l's accept loop, handing admitted connections to the test.
type acceptor struct {
	l        *Listener
	accepted chan net.Conn
}

func newAcceptor(t *testing.T, cfg Config) *acceptor {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := &acceptor{l: Wrap(ln, cfg), accepted: make(chan net.Conn, 64)}
	go func() {
		for {
			c, err := a.l.Accept()
			if err != nil {
				return
			}
			a.accepted <- c
		}
	}()
	t.Cleanup(func() {
		_ = a.l.Close()
		for {
			select {
			case c := <-a.accepted:
				_ = c.Close()
			default:
				return
			}
		}
	})
	return a
}

func dial(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// connect dials from local and says what became of the connection: "" when the listener
// admitted it, else the status line of the refusal the client read.
func (a *acceptor) connect(t *testing.T, local string) (string, net.Conn) {
	t.Helper()
	c := dial(t, local, a.l.Addr().String())
	if err := c.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	answered := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(c).ReadString('\n')
		answered <- strings.TrimSpace(line)
	}()
	select {
	case sc := <-a.accepted:
		_ = c.SetReadDeadline(time.Now()) // stop the reader
		<-answered
		_ = c.SetReadDeadline(time.Time{})
		return "", sc
	case line := <-answered:
		if line == "" {
			t.Fatalf("connection from %s neither admitted nor answered", local)
		}
		return line, nil
	}
}

func TestListenerBoundsConnectionsPerClientAndKeepsHeadroom(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	met := NewMetrics(reg)
	a := newAcceptor(t, Config{Name: ListenerAPI, Max: 6, PerClient: 3, HighWater: 4, Few: 1, Metrics: met,
		Proxies: Proxies{netip.MustParsePrefix("127.0.0.9/32")}})
	steps := []struct {
		from, want string
	}{
		{"127.0.0.2", ""}, {"127.0.0.2", ""}, {"127.0.0.2", ""},
		{"127.0.0.2", "HTTP/1.1 429 Too Many Requests"}, // its own bound
		{"127.0.0.3", ""}, // 4 open: the high-water mark
		{"127.0.0.3", "HTTP/1.1 503 Service Unavailable"}, // holds one, not fewer than Few
		{"127.0.0.4", ""}, // holds none: the headroom is for it
		{"127.0.0.5", ""}, // 6 open: full
		{"127.0.0.6", "HTTP/1.1 503 Service Unavailable"}, // full, nothing idle to close
	}
	var admitted []net.Conn
	for i, s := range steps {
		got, c := a.connect(t, s.from)
		if got != s.want {
			t.Fatalf("step %d, from %s: %q, want %q", i+1, s.from, got, s.want)
		}
		if c != nil {
			admitted = append(admitted, c)
		}
	}
	if n := a.l.Open(); n != 6 {
		t.Errorf("open %d, want 6", n)
	}
	if got := value(t, reg, "mediagen_http_connections", map[string]string{"listener": ListenerAPI}); got != 6 {
		t.Errorf("mediagen_http_connections = %v, want 6", got)
	}
	for reason, want := range map[string]float64{ReasonPerClient: 1, ReasonHighWater: 1, ReasonFull: 1} {
		if got := value(t, reg, "mediagen_http_connections_refused_total", map[string]string{"listener": ListenerAPI, "reason": reason}); got != want {
			t.Errorf("refused %s = %v, want %v", reason, got, want)
		}
	}
	// Closing a connection frees its place (and its client's), once however often it closes.
	_ = admitted[0].Close()
	_ = admitted[0].Close()
	if n := a.l.Open(); n != 5 {
		t.Errorf("open after a close: %d, want 5", n)
	}
	if got, _ := a.connect(t, "127.0.0.2"); got != "HTTP/1.1 503 Service Unavailable" {
		t.Errorf("127.0.0.2 with 2 of 3 above the high-water mark: %q, want the 503", got)
	}
	if got, _ := a.connect(t, "127.0.0.7"); got != "" {
		t.Errorf("a new client with room left: %q, want admitted", got)
	}
}

// A trusted proxy carries many clients: it is exempt from the per-client bound and the
// high-water rule, not from Max.
func TestListenerExemptsTrustedProxiesFromPerClientBounds(t *testing.T) {
	t.Parallel()
	a := newAcceptor(t, Config{Name: ListenerAPI, Max: 4, PerClient: 1, HighWater: 2, Few: 1,
		Proxies: Proxies{netip.MustParsePrefix("127.0.0.8/29")}})
	for i := range 4 {
		if got, _ := a.connect(t, "127.0.0.9"); got != "" {
			t.Fatalf("proxy connection %d: %q, want admitted", i+1, got)
		}
	}
	if got, _ := a.connect(t, "127.0.0.9"); got != "HTTP/1.1 503 Service Unavailable" {
		t.Errorf("proxy past Max: %q, want the 503", got)
	}
}

// When the listener is full, a new connection closes the longest-idle keep-alive connection
// instead of being refused.
func TestListenerClosesIdleConnectionsFirstWhenFull(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	met := NewMetrics(reg)
	l := Wrap(ln, Config{Name: ListenerAPI, Max: 2, Metrics: met})
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") }),
		ConnState: l.ConnState, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() { _ = srv.Close() })
	addr := l.Addr().String()

	idle := dial(t, "127.0.0.2", addr)
	br := bufio.NewReader(idle)
	if _, err := io.WriteString(idle, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res.Body)
	busy := dial(t, "127.0.0.3", addr) // sends nothing: not idle, just new
	_ = busy
	// Wait until both are counted and the first is idle (bounded).
	var open, idleN int
	if !testkit.Poll(5*time.Second, func() bool { open, idleN = l.Open(), l.idleCount(); return open == 2 && idleN == 1 }) {
		t.Fatalf("open %d, idle %d; want 2 and 1", open, idleN)
	}
	third := dial(t, "127.0.0.4", addr)
	if _, err := io.WriteString(third, "GET / HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if err := third.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if res, err := http.ReadResponse(bufio.NewReader(third), nil); err != nil || res.StatusCode != 200 {
		t.Fatalf("the new connection at the limit: %v %v, want served", res, err)
	}
	if err := idle.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("the idle connection was not closed: %v", err)
	}
	if got := value(t, reg, "mediagen_http_idle_connections_closed_total", map[string]string{"listener": ListenerAPI}); got != 1 {
		t.Errorf("idle connections closed: %v, want 1", got)
	}
}

func (l *Listener) idleCount() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.idle.Len()
}

func TestClientOfGroupsIPv6ByItsSlash64(t *testing.T) {
	t.Parallel()
	a := ClientOf(netip.MustParseAddr("2001:db8:1:2:aaaa::1"))
	b := ClientOf(netip.MustParseAddr("2001:db8:1:2:bbbb::9"))
	c := ClientOf(netip.MustParseAddr("2001:db8:1:3::1"))
	if a != b || a == c {
		t.Errorf("one /64 must be one client, another /64 another: %v %v %v", a, b, c)
	}
	if ClientOf(netip.MustParseAddr("::ffff:192.0.2.1")) != ClientOf(netip.MustParseAddr("192.0.2.1")) {
		t.Error("an IPv4-mapped address is its IPv4 address")
	}
}

func TestClientOfRequestBelievesOnlyTrustedProxies(t *testing.T) {
	t.Parallel()
	proxies, err := ParseProxies("10.0.0.0/8, 192.0.2.7")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, peer string
		xff        []string
		want       string
	}{
		{"no proxy: the peer", "198.51.100.1:5000", []string{"203.0.113.9"}, "198.51.100.1"},
		{"trusted proxy: the entry it added", "10.1.2.3:5000", []string{"203.0.113.9"}, "203.0.113.9"},
		{"a client's made-up entries on the left are ignored", "10.1.2.3:5000", []string{"1.1.1.1, 203.0.113.9"}, "203.0.113.9"},
		{"a chain of trusted proxies", "10.1.2.3:5000", []string{"203.0.113.9, 192.0.2.7", "10.9.9.9"}, "203.0.113.9"},
		{"trusted proxy without the header: the proxy", "10.1.2.3:5000", nil, "10.1.2.3"},
		{"malformed entry: the last trusted hop", "10.1.2.3:5000", []string{"203.0.113.9, junk"}, "10.1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tt.peer, Header: http.Header{}}
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := proxies.ClientOfRequest(r).String(); got != tt.want {
				t.Errorf("client %s, want %s", got, tt.want)
			}
		})
	}
	if _, err := ParseProxies("10.0.0.0/8,not-an-address"); err == nil {
		t.Error("a malformed entry must be refused")
	}
}

func TestForwardedProtoBelievesOnlyTheNearestTrustedProxy(t *testing.T) {
	t.Parallel()
	proxies, err := ParseProxies("10.0.0.0/8")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, peer string
		xfp        []string
		want       string
	}{
		{"trusted proxy says https", "10.1.2.3:5000", []string{"https"}, "https"},
		{"trusted proxy says http", "10.1.2.3:5000", []string{"HTTP"}, "http"},
		{"untrusted peer: ignored", "198.51.100.1:5000", []string{"https"}, ""},
		{"trusted proxy, no header", "10.1.2.3:5000", nil, ""},
		{"the rightmost entry wins", "10.1.2.3:5000", []string{"https, http"}, "http"},
		{"the last header wins", "10.1.2.3:5000", []string{"http", "https"}, "https"},
		{"an unknown scheme: none", "10.1.2.3:5000", []string{"wss"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tt.peer, Header: http.Header{}}
			for _, v := range tt.xfp {
				r.Header.Add("X-Forwarded-Proto", v)
			}
			if got := proxies.ForwardedProto(r); got != tt.want {
				t.Errorf("proto %q, want %q", got, tt.want)
			}
		})
	}
	if got := Proxies(nil).ForwardedProto(&http.Request{RemoteAddr: "10.1.2.3:5000", Header: http.Header{"X-Forwarded-Proto": {"https"}}}); got != "" {
		t.Errorf("no proxies configured: %q, want none", got)
	}
}
