// Package netlimit bounds what clients can make a listener hold: connections in total and
// per client address, with headroom kept above a high-water mark for clients that hold few
// connections (health checks, ordinary API clients), and idle keep-alive connections closed
// first when the listener is full. It also reads the process's file-descriptor limit, which
// the bounds must fit in. docs/http.md has the numbers and why each was chosen.
package netlimit

import (
	"container/list"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"
)

// Config bounds one listener.
type Config struct {
	// Name is the listener's label in the metrics: one of ListenerAPI, ListenerDebug,
	// ListenerMetrics.
	Name string
	// Max is the most connections open at once. At Max a new connection closes the longest
	// idle keep-alive connection, or is refused when there is none.
	Max int
	// PerClient bounds the connections of one client address (0: only Max).
	PerClient int
	// HighWater: from this many open connections on, only a client holding fewer than Few
	// connections gets a new one, so the last Max-HighWater connections are kept for clients
	// that hold few (0 or Max: no headroom, every client may take the last places).
	HighWater, Few int
	// Proxies are exempt from PerClient and HighWater: a reverse proxy carries many clients
	// over its connections. Max still holds for them.
	Proxies Proxies
	// Metrics, when set, counts connections and refusals.
	Metrics *Metrics
	// NotSentLowat, when positive, bounds each admitted connection's queue of bytes not yet
	// sent (TCP_NOTSENT_LOWAT, Linux): what a client with a closed window makes the kernel
	// hold and the server copy.
	NotSentLowat int
}

// Why a connection was refused: the reason label of mediagen_http_connections_refused_total.
const (
	ReasonPerClient = "per_client"
	ReasonHighWater = "high_water"
	ReasonFull      = "full"
)

// Listener wraps a net.Listener with the bounds of its Config. Set the http.Server's
// ConnState to the Listener's ConnState so that it knows which connections are idle.
type Listener struct {
	net.Listener
	cfg Config

	mu       sync.Mutex
	open     int
	byClient map[Client]int
	idle     list.List // *Conn in StateIdle, longest idle first
}

// Wrap bounds ln. Max below 1 is 1; HighWater 0 or above Max is Max.
func Wrap(ln net.Listener, cfg Config) *Listener {
	cfg.Max = max(1, cfg.Max)
	if cfg.HighWater <= 0 || cfg.HighWater > cfg.Max {
		cfg.HighWater = cfg.Max
	}
	if cfg.Metrics != nil {
		cfg.Metrics.limit.WithLabelValues(cfg.Name).Set(float64(cfg.Max))
	}
	return &Listener{Listener: ln, cfg: cfg, byClient: map[Client]int{}}
}

// Config is the listener's configuration, as Wrap adjusted it.
func (l *Listener) Config() Config { return l.cfg }

// Open is the number of connections the listener holds.
func (l *Listener) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.open
}

// Accept returns the next connection the bounds admit. Refused connections get a fixed
// answer and are closed here; they never reach the server.
func (l *Listener) Accept() (net.Conn, error) {
	for {
		nc, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer := peerAddr(nc.RemoteAddr())
		c := &Conn{Conn: nc, l: l, client: ClientOf(peer)}
		reason, shed := l.admit(c, l.cfg.Proxies.Trusted(peer))
		if shed != nil {
			_ = shed.Conn.Close() // already uncounted by admit
			l.count(func(m *Metrics) { m.shed.WithLabelValues(l.cfg.Name).Inc() })
		}
		if reason != "" {
			l.count(func(m *Metrics) { m.refused.WithLabelValues(l.cfg.Name, reason).Inc() })
			refuse(nc, reason)
			continue
		}
		l.count(func(m *Metrics) { m.open.WithLabelValues(l.cfg.Name).Inc() })
		setNotSentLowat(nc, l.cfg.NotSentLowat)
		return c, nil
	}
}

func (l *Listener) count(f func(*Metrics)) {
	if l.cfg.Metrics != nil {
		f(l.cfg.Metrics)
	}
}

// admit counts c in, or says why not. At Max it makes room by taking the longest idle
// connection out of the count, for the caller to close outside the lock.
func (l *Listener) admit(c *Conn, trusted bool) (reason string, shed *Conn) {
	l.mu.Lock()
	defer l.mu.Unlock()
	held := l.byClient[c.client]
	switch {
	case !trusted && l.cfg.PerClient > 0 && held >= l.cfg.PerClient:
		return ReasonPerClient, nil
	case !trusted && l.cfg.HighWater < l.cfg.Max && l.open >= l.cfg.HighWater && held >= l.cfg.Few:
		return ReasonHighWater, nil
	case l.open >= l.cfg.Max:
		e := l.idle.Front()
		if e == nil {
			return ReasonFull, nil
		}
		shed = e.Value.(*Conn)
		l.releaseLocked(shed)
	}
	l.open++
	l.byClient[c.client]++
	return "", shed
}

// releaseLocked takes c out of the counts, once.
func (l *Listener) releaseLocked(c *Conn) {
	if c.released {
		return
	}
	c.released = true
	if c.idleAt != nil {
		l.idle.Remove(c.idleAt)
		c.idleAt = nil
	}
	l.open--
	if l.byClient[c.client]--; l.byClient[c.client] <= 0 {
		delete(l.byClient, c.client) // the map holds only clients with connections
	}
	if l.cfg.Metrics != nil {
		l.cfg.Metrics.open.WithLabelValues(l.cfg.Name).Dec()
	}
}

// ConnState is the http.Server hook that tells the listener which connections are idle
// keep-alive connections, the first to go when it is full.
func (l *Listener) ConnState(nc net.Conn, s http.ConnState) {
	c, ok := nc.(*Conn)
	if !ok || c.l != l {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if c.released {
		return
	}
	if c.idleAt != nil {
		l.idle.Remove(c.idleAt)
		c.idleAt = nil
	}
	if s == http.StateIdle {
		c.idleAt = l.idle.PushBack(c)
	}
}

// Conn is a connection the listener counts until it is closed.
type Conn struct {
	net.Conn
	l      *Listener
	client Client
	// Under l.mu:
	released bool
	idleAt   *list.Element
}

// Close closes the connection and takes it out of the listener's counts.
func (c *Conn) Close() error {
	c.l.mu.Lock()
	c.l.releaseLocked(c)
	c.l.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite half-closes a TCP connection: net/http uses it to send its last answer (a 431,
// say) before closing, so that the client reads the answer rather than a reset.
func (c *Conn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom keeps the TCP connection's sendfile path for writers that use it.
func (c *Conn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

func peerAddr(a net.Addr) netip.Addr {
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(ta.IP)
		return ip.Unmap()
	}
	ap, err := netip.ParseAddrPort(a.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}

// refuseWriteTimeout bounds the write of a refusal: the answer is a few hundred bytes into a
// fresh connection's empty send buffer, so it never blocks unless the peer is gone; the
// accept loop must not wait on one client.
const refuseWriteTimeout = 100 * time.Millisecond

// Refusals are fixed answers: the connection is refused before anything of the request is
// read, so they are written whatever the client was going to ask. Retry-After is a hint:
// connections free up within seconds (the header and idle timeouts).
var (
	refusePerClient = answer("429 Too Many Requests",
		`{"error":{"message":"Too many connections from this client address. Reuse or close the ones you hold, then retry after 1 s (Retry-After).","type":"rate_limit_error","code":"too_many_connections"}}`)
	refuseBusy = answer("503 Service Unavailable",
		`{"error":{"message":"The server is at its connection limit. Retry after 1 s (Retry-After).","type":"api_error","code":"server_busy"}}`)
)

func answer(status, body string) []byte {
	return []byte("HTTP/1.1 " + status + "\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n" +
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: " + strconv.Itoa(len(body)+1) + "\r\n\r\n" + body + "\n")
}

// refuse answers a refused connection and closes it. The answer is best effort: a client
// that has already sent its request may see the connection reset before it reads it.
func refuse(nc net.Conn, reason string) {
	_ = nc.SetWriteDeadline(time.Now().Add(refuseWriteTimeout))
	a := refuseBusy
	if reason == ReasonPerClient {
		a = refusePerClient
	}
	_, _ = nc.Write(a)
	if cw, ok := nc.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	_ = nc.Close()
}
