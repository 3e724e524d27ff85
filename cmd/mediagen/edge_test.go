package main

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// hugeHeaderHead is a request whose one header line runs on for 1,040,000 bytes and never
// ends: the probe's request (issue 25, part 4), which made the server hold the whole line.
func sendHugeHeader(t *testing.T, addr string) (*http.Response, error) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// One generous deadline bounds the exchange: a server that waits for the end of the line
	// answers nothing before it, and the test fails on the missing answer, not on speed.
	if err := conn.SetDeadline(time.Now().Add(8 * time.Second)); err != nil {
		t.Fatal(err)
	}
	go func() {
		// The server stops reading after its bound, so this write fails part way; that is the
		// point. It runs apart so the answer can be read meanwhile.
		line := "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Filler: " + strings.Repeat("a", 1_040_000)
		_, _ = io.WriteString(conn, line)
	}()
	return http.ReadResponse(bufio.NewReader(conn), nil)
}

// Every listener of serve — the API, --debug-listen and --metrics-listen — answers a request
// whose headers run past the bound with 431 once the bound is read, instead of holding a
// megabyte per connection until the header timeout.
func TestEveryListenerAnswers431ToHeadersPastTheBound(t *testing.T) {
	t.Parallel()
	debugAddr := freeAddr(t)
	m, _ := startMain(t, t.TempDir(), "--role", "api", "--log-level", "error", "--debug-listen", debugAddr, "--metrics-listen", "127.0.0.1:0")
	for _, l := range []struct{ name, addr string }{
		{"api", strings.TrimPrefix(m.URL(), "http://")},
		{"debug", debugAddr},
		{"metrics", m.metricsAddr},
	} {
		t.Run(l.name, func(t *testing.T) {
			t.Parallel()
			res, err := sendHugeHeader(t, l.addr)
			if err != nil {
				t.Fatalf("no answer before the deadline: %v", err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusRequestHeaderFieldsTooLarge {
				t.Fatalf("status %d, want 431", res.StatusCode)
			}
		})
	}
}

// dialFrom opens a connection to addr from the loopback address local (127.0.0.2, …), so a
// test can play several client addresses.
func dialFrom(t *testing.T, local, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// refusal is what the server sent on c without being asked: a refused connection gets its
// answer at once, a connection the server keeps gets nothing within the wait.
func refusal(t *testing.T, c net.Conn) string {
	t.Helper()
	if err := c.SetReadDeadline(time.Now().Add(2 * time.Second)); err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(c)
	return string(b)
}

// One client address cannot take every connection: past its bound its new connections are
// refused at once, while another address is still served.
func TestServeRefusesConnectionsPastAClientAddressBound(t *testing.T) {
	t.Parallel()
	m, _ := startMain(t, t.TempDir(), "--role", "api", "--log-level", "error")
	addr := strings.TrimPrefix(m.URL(), "http://")
	const extra = 8
	var conns []net.Conn
	t.Cleanup(func() {
		for _, c := range conns {
			c.Close()
		}
	})
	// 300 is past the default bound of 256 connections per address. The connections send
	// nothing: each is held (until the header timeout) or refused.
	for range 300 {
		conns = append(conns, dialFrom(t, "127.0.0.2", addr))
	}
	for i, c := range conns[len(conns)-extra:] {
		if answer := refusal(t, c); !strings.HasPrefix(answer, "HTTP/1.1 429 ") || !strings.Contains(answer, `"code":"too_many_connections"`) {
			t.Errorf("connection %d past the bound: got %q, want a 429 too_many_connections envelope", 300-extra+i+1, answer)
		}
	}
	if code, _ := get(t, m.URL()+"/healthz", ""); code != http.StatusOK {
		t.Fatalf("another address: /healthz %d, want 200", code)
	}
}
