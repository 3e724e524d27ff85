package rest

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"mediagen/internal/provider"
)

// A call that never left (a refused connection, its turn under the request rate never came)
// says so; one that reached the server and lost its answer does not.
func TestCallsThatNeverLeftAreMarkedNotSent(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close()
	hangup := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	t.Cleanup(hangup.Close)
	for _, tc := range []struct {
		name    string
		base    string
		rate    float64
		notSent bool
	}{
		{"a refused connection never left", closed, 0, true},
		{"a dropped answer left", hangup.URL, 0, false},
		{"a turn under the rate that never came never left", hangup.URL, 0.001, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := New(Config{Name: "t", BaseURL: tc.base, APIKey: "k", RequestsPerSecond: tc.rate})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			if tc.rate > 0 { // the first call takes the turn; the second waits past its deadline
				_, _ = c.Do(ctx, Request{Method: http.MethodPost, Path: "/x"})
			}
			_, err = c.Do(ctx, Request{Method: http.MethodPost, Path: "/x"})
			if !errors.Is(err, provider.ErrTransient) || errors.Is(err, provider.ErrNotSent) != tc.notSent {
				t.Fatalf("err %v, want transient and not-sent %v", err, tc.notSent)
			}
		})
	}
}
