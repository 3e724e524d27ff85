// Package pgtest gives each test its own PostgreSQL schema on the test server, so tests run in
// parallel and leave nothing behind.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" driver
)

// DefaultURL is the test server of the Makefile and CI: a local PostgreSQL with trust auth.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// BaseURL is the server tests use: MEDIAGEN_TEST_POSTGRES_URL or DefaultURL.
func BaseURL() string {
	if u := os.Getenv("MEDIAGEN_TEST_POSTGRES_URL"); u != "" {
		return u
	}
	return DefaultURL
}

// URL creates a fresh schema and returns a database URL whose search_path points at it. When
// the server is unreachable the test is skipped, except under CI=true, where PostgreSQL tests
// must run and the test fails instead.
func URL(t testing.TB) string {
	t.Helper()
	base := BaseURL()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("pgtest: PostgreSQL at %s is required under CI=true: %v", base, err)
		}
		t.Skipf("pgtest: PostgreSQL at %s unreachable (run `make test` to start one): %v", base, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "t_" + hex.EncodeToString(b[:])
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec(`DROP SCHEMA ` + schema + ` CASCADE`)
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}
