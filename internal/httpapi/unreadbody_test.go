package httpapi

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// rawRequest writes head (request line and headers, without the blank line) on a fresh
// connection, sends no body, and returns the response and whether the server then closed the
// connection. Everything is bounded by one generous deadline: a server that waits for the
// body it was promised hits the deadline and the test fails on the timeout, not on speed.
func rawRequest(t *testing.T, addr, head string) (*http.Response, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(conn, head+"\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("no response before the deadline (the server waits for the body it was promised): %v", err)
	}
	if _, err := io.Copy(io.Discard, res.Body); err != nil {
		t.Fatalf("response body: %v", err)
	}
	res.Body.Close()
	_, err = br.ReadByte()
	closed := errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		closed = false
	}
	return res, closed
}

func isReset(err error) bool {
	return err != nil && strings.Contains(err.Error(), "connection reset")
}

func TestRequestsWithAnUnsentBodyAreAnsweredAtOnceAndClosed(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	addr := strings.TrimPrefix(e.ts.URL, "http://")
	const host = "Host: 127.0.0.1\r\n"
	tests := []struct {
		name   string
		head   string
		status int
	}{
		{"unauthenticated POST, large declared body", "POST /v1/videos HTTP/1.1\r\n" + host + "Content-Type: application/json\r\nContent-Length: 1000000", 401},
		{"unauthenticated POST, small declared body", "POST /v1/videos HTTP/1.1\r\n" + host + "Content-Type: application/json\r\nContent-Length: 1000", 401},
		{"unauthenticated POST, chunked body", "POST /v1/audio/speech HTTP/1.1\r\n" + host + "Content-Type: application/json\r\nTransfer-Encoding: chunked", 401},
		{"bad key, small declared body", "POST /v1/videos HTTP/1.1\r\n" + host + "Authorization: Bearer mg_nope\r\nContent-Type: application/json\r\nContent-Length: 1000", 401},
		{"unknown path with a body", "POST /v1/nothing HTTP/1.1\r\n" + host + "Content-Length: 1000", 404},
		{"wrong method with a body", "PUT /v1/videos HTTP/1.1\r\n" + host + "Content-Length: 1000", 405},
		{"wrong content type", "POST /test/echo HTTP/1.1\r\n" + host + "Content-Type: text/plain\r\nContent-Length: 1000", 415},
		{"GET route with a body", "GET /healthz HTTP/1.1\r\n" + host + "Content-Length: 1000", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, closed := rawRequest(t, addr, tt.head)
			if res.StatusCode != tt.status {
				t.Errorf("status %d, want %d", res.StatusCode, tt.status)
			}
			if !res.Close {
				t.Errorf("no Connection: close on an answer that leaves the declared body unread")
			}
			if !closed {
				t.Errorf("the server kept the connection open")
			}
		})
	}
}

// A request whose body was read whole keeps its connection: closing is only for bodies the
// server did not read.
func TestReadBodiesKeepTheConnection(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	res, err := http.Post(e.ts.URL+"/test/echo", "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Close {
		t.Errorf("status %d, close %v", res.StatusCode, res.Close)
	}
}

// The verification actions are unauthenticated (the token is the credential): an unknown
// token is refused without waiting for the body.
func TestVerifyActionWithUnknownTokenDoesNotWaitForTheBody(t *testing.T) {
	t.Parallel()
	e := newAssetEnv(t)
	addr := strings.TrimPrefix(e.ts.URL, "http://")
	res, closed := rawRequest(t, addr, "POST /verify/vt_unknown/start HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 500")
	if res.StatusCode != http.StatusNotFound {
		t.Errorf("status %d, want 404", res.StatusCode)
	}
	if !res.Close || !closed {
		t.Errorf("connection not closed (header close %v, closed %v)", res.Close, closed)
	}
}
