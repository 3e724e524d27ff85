package adminapi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"mediagen/internal/netlimit"
)

// An admin API body is read as the public API's are (the admin listener wraps its handler in
// netlimit.PaceBodies): one that keeps arriving above the minimum rate is read however long
// it takes in all, and one that stops is answered 408 request_timeout with the connection
// closed, not 400, with nothing written.
func TestAdminBodiesArePacedAndAStalledOneIs408(t *testing.T) {
	t.Parallel()
	e := newEnv(t, "sqlite")
	const stall = 300 * time.Millisecond
	ts := httptest.NewServer(netlimit.PaceBodies(e.srv.Handler(), netlimit.Pace{Stall: stall, Piece: 4 << 10, Total: time.Minute}))
	t.Cleanup(ts.Close)
	addr := strings.TrimPrefix(ts.URL, "http://")
	doc := `{"tenant":"demo","name":"paced"}`
	body := doc[:len(doc)-1] + strings.Repeat(" ", 60<<10) + "}" // within MaxBody, whitespace the decoder skips

	post := func(stopAt int) (int, string, bool) {
		t.Helper()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(20 * time.Second))
		fmt.Fprintf(c, "POST /admin/v1/keys HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nIdempotency-Key: %s\r\n"+
			"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n", e.oper, newIdem(), len(body))
		go func() {
			// 1 KiB every 10 ms: a 4 KiB piece in 40 ms, the whole body in about 0.6 s (two stalls).
			for sent := 0; sent < len(body) && (stopAt < 0 || sent < stopAt); sent += 1 << 10 {
				if _, err := io.WriteString(c, body[sent:min(len(body), sent+1<<10)]); err != nil {
					return
				}
				time.Sleep(10 * time.Millisecond) // the client's pace
			}
		}()
		br := bufio.NewReader(c)
		res, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("no answer: %v", err)
		}
		b, _ := io.ReadAll(res.Body)
		closed := false
		if stopAt >= 0 {
			_, err := br.ReadByte()
			closed = res.Close && err != nil
		}
		return res.StatusCode, string(b), closed
	}

	start := time.Now()
	if status, b, _ := post(-1); status != http.StatusCreated {
		t.Fatalf("paced body over %v: %d %s", time.Since(start).Round(time.Millisecond), status, b)
	}
	if took := time.Since(start); took < stall {
		t.Errorf("the paced body took %v, less than one stall: the test proves nothing", took)
	}
	audits := e.auditCount()
	status, b, closed := post(len(body) / 2)
	if status != http.StatusRequestTimeout || !strings.Contains(b, `"code":"request_timeout"`) || !strings.Contains(b, `"type":"invalid_request_error"`) {
		t.Errorf("stalled body: %d %s, want 408 request_timeout", status, b)
	}
	if !closed {
		t.Error("the connection was kept after the 408")
	}
	if n := e.auditCount(); n != audits {
		t.Errorf("the stalled request wrote %d audit entries", n-audits)
	}
}
