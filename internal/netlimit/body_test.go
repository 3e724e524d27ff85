package netlimit

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"mediagen/internal/apierr"
)

// pacedServer answers with what its handler read of the body: "ok N" or the error's kind.
// pause, when set, is how long the handler works between the two halves of the body.
func pacedServer(t *testing.T, p Pace, pause time.Duration) string {
	t.Helper()
	h := PaceBodies(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		half := make([]byte, r.ContentLength/2)
		n, err := io.ReadFull(r.Body, half)
		if err == nil {
			time.Sleep(pause) // the server busy elsewhere (storing a part, say): not the client's time
			var m int64
			m, err = io.Copy(io.Discard, r.Body)
			n += int(m)
		}
		switch {
		case err == nil:
			fmt.Fprintf(w, "ok %d", n)
		case errors.Is(err, ErrBodyTimeout) && errors.Is(err, os.ErrDeadlineExceeded) && BodyErr(r.Context()) != nil:
			e := apierr.As(err)
			w.WriteHeader(e.Status())
			io.WriteString(w, e.CodeOrDefault())
		default:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	}), p)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://")
}

// send posts size bytes in chunks of chunk every every, stopping after stopAt bytes when
// stopAt >= 0, and returns the answer's status line and body.
func send(t *testing.T, addr string, size, chunk int, every time.Duration, stopAt int) string {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", size)
	go func() {
		sent := 0
		for sent < size && (stopAt < 0 || sent < stopAt) {
			n := min(chunk, size-sent)
			if _, err := c.Write([]byte(strings.Repeat("b", n))); err != nil {
				return
			}
			sent += n
			time.Sleep(every)
		}
	}()
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	b, _ := io.ReadAll(res.Body)
	return fmt.Sprintf("%d %s", res.StatusCode, b)
}

// The pace: a body that keeps arriving faster than a piece per stall is read whatever its
// length, and time the server spends between reads is not counted against the client; a body
// that stops is cut a stall later, and one that trickles past the total bound is cut there —
// each with the 408 answer in the read error's chain.
func TestPacedBodyOutcomes(t *testing.T) {
	t.Parallel()
	const stall = 300 * time.Millisecond
	cases := []struct {
		name   string
		pace   Pace
		pause  time.Duration
		size   int
		chunk  int
		every  time.Duration
		stopAt int
		want   string
	}{
		{"steady above the minimum rate, four stalls long, is read", Pace{Stall: stall, Piece: 4 << 10, Total: time.Minute},
			0, 48 << 10, 1 << 10, 25 * time.Millisecond, -1, "200 ok 49152"},
		{"a server that pauses longer than a stall between reads does not cut it", Pace{Stall: stall, Piece: 4 << 10, Total: time.Minute},
			3 * stall, 16 << 10, 16 << 10, 0, -1, "200 ok 16384"},
		{"stopping half way is 408 a stall later", Pace{Stall: stall, Piece: 4 << 10, Total: time.Minute},
			0, 16 << 10, 1 << 10, 10 * time.Millisecond, 8 << 10, "408 request_timeout"},
		{"a trickle below a piece per stall is 408", Pace{Stall: stall, Piece: 4 << 10, Total: time.Minute},
			0, 16 << 10, 100, 25 * time.Millisecond, -1, "408 request_timeout"},
		{"above the rate but past the total bound is 408", Pace{Stall: stall, Piece: 1 << 10, Total: 4 * stall},
			0, 64 << 10, 1 << 10, 25 * time.Millisecond, -1, "408 request_timeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			addr := pacedServer(t, c.pace, c.pause)
			if got := send(t, addr, c.size, c.chunk, c.every, c.stopAt); got != c.want {
				t.Errorf("got %q, want %q", got, c.want)
			}
		})
	}
}
