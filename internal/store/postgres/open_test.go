package postgres

import (
	"context"
	"errors"
	"net/url"
	"strings"
	"testing"
	"time"

	"mediagen/internal/store/postgres/pgtest"
)

// A server that answers and refuses — the database does not exist, the role does not exist —
// will refuse the same way a second later: Open says what to fix and is not ErrUnreachable,
// so serve stops at once instead of waiting out --db-wait. A server that does not answer is
// ErrUnreachable.
func TestOpenTellsARefusalFromAnUnreachableServer(t *testing.T) {
	t.Parallel()
	pgtest.URL(t) // skips (or fails under CI=true) without a server
	with := func(change func(u *url.URL)) string {
		u, err := url.Parse(pgtest.BaseURL())
		if err != nil {
			t.Fatal(err)
		}
		change(u)
		return u.String()
	}
	for _, tc := range []struct {
		name        string
		url         string
		unreachable bool
		want        []string
	}{
		{"a database that does not exist", with(func(u *url.URL) { u.Path = "/mediagen_missing_db" }), false,
			[]string{`database "mediagen_missing_db" does not exist`, "CREATE DATABASE", "createdb"}},
		{"a role that does not exist", with(func(u *url.URL) { u.User = url.User("mediagen_missing_role") }), false,
			[]string{`mediagen_missing_role`, "user"}},
		{"a port nothing listens on", "postgres://nobody@127.0.0.1:1/x?connect_timeout=2&sslmode=disable", true,
			[]string{"postgres: connect to"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			db, err := Open(ctx, tc.url)
			if err == nil {
				_ = db.Close()
				t.Fatal("opened")
			}
			if got := errors.Is(err, ErrUnreachable); got != tc.unreachable {
				t.Errorf("ErrUnreachable = %v, want %v: %v", got, tc.unreachable, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
