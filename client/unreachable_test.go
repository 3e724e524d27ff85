package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
)

// closedAddr is a loopback address nothing listens at.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestRefusedConnectionFailsAfterOneRetryNamingTheAddress(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		maxRetries int
		wantDials  int64
	}{
		{"default retries: one short retry", 0, 2},
		{"retries off: no retry", -1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			base := "http://" + closedAddr(t)
			var dials atomic.Int64
			d := &net.Dialer{}
			hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				dials.Add(1)
				return d.DialContext(ctx, network, addr)
			}}}
			c, err := New(base, "mg_test", Options{HTTPClient: hc, MaxRetries: tt.maxRetries})
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Balance(context.Background())
			var u *UnreachableError
			if !errors.As(err, &u) || u.BaseURL != base {
				t.Fatalf("err = %v, want an UnreachableError for %s", err, base)
			}
			if want := "cannot reach mediagen at " + base + ": connection refused — is the service running?"; !strings.Contains(err.Error(), want) {
				t.Errorf("message %q, want it to contain %q", err.Error(), want)
			}
			if n := dials.Load(); n != tt.wantDials {
				t.Errorf("%d dials, want %d", n, tt.wantDials)
			}
		})
	}
}
