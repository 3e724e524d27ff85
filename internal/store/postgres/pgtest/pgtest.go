// Package pgtest gives each test its own PostgreSQL database (or schema) on the test server, so
// tests run in parallel and leave nothing behind.
//
// A package whose tests open stores calls UseTemplate once (in an init of a _test.go file):
// URL then clones a database migrated once per set of migrations (CREATE DATABASE … TEMPLATE,
// about 60 ms) instead of each test migrating a fresh schema (about 250 ms of the server's
// time, the largest part of the PostgreSQL tests' cost: issue 29). Without it, and through
// EmptyURL, a test gets an empty schema.
package pgtest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
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

// URL returns the URL of a database of its own for the test: a clone of the migrated template
// when the package called UseTemplate, else an empty schema (EmptyURL). When the server is
// unreachable the test is skipped, except under CI=true, where PostgreSQL tests must run and
// the test fails instead.
func URL(t testing.TB) string {
	t.Helper()
	if tpl.migrate == nil {
		return EmptyURL(t)
	}
	return cloneURL(t)
}

// EmptyURL creates a fresh, empty schema and returns a database URL whose search_path points
// at it: for tests of the migrations themselves.
func EmptyURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	base, db := server(ctx, t)
	defer db.Close()
	schema := uniqueName()
	if _, err := db.ExecContext(ctx, `CREATE SCHEMA `+schema); err != nil {
		t.Fatalf("pgtest: create schema: %v", err)
	}
	dropAtEnd(t, base, `DROP SCHEMA `+schema+` CASCADE`)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// server opens the test server (BaseURL) and checks that it answers: when it does not, the
// test is skipped, except under CI=true, where it fails.
func server(ctx context.Context, t testing.TB) (string, *sql.DB) {
	t.Helper()
	base := BaseURL()
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		if os.Getenv("CI") == "true" {
			t.Fatalf("pgtest: PostgreSQL at %s is required under CI=true: %v", base, err)
		}
		t.Skipf("pgtest: PostgreSQL at %s unreachable (run `make test` to start one): %v", base, err)
	}
	return base, db
}

// uniqueName is a fresh name for a test's schema or database.
func uniqueName() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "t_" + hex.EncodeToString(b[:])
}

// dropAtEnd runs drop on the server at base when t ends, best effort.
func dropAtEnd(t testing.TB, base, drop string) {
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		_, _ = db.Exec(drop)
	})
}

// tpl is the template of this process's tests (UseTemplate).
var tpl struct {
	migrate func(ctx context.Context, url string) error
	name    string
	once    sync.Once
	err     error
}

// UseTemplate makes URL hand out clones of a database that migrate brought up to date. digest
// names what migrate applies (the migrations' contents): a database made by other migrations
// is another template (mediagen_tpl_<digest>). It is called before the tests that use URL
// run; calling it again starts over with the new template (pgtest's own test does, once per
// run under -count).
func UseTemplate(digest string, migrate func(ctx context.Context, url string) error) {
	tpl.migrate = migrate
	tpl.name = "mediagen_tpl_" + digest[:min(len(digest), 16)]
	tpl.once, tpl.err = sync.Once{}, nil
}

// templateLock serialises the making of templates between test processes (packages run at
// once): a session advisory lock, held on one connection.
const templateLock = 7346219

// makeTemplate makes the template database unless a complete one exists (marked IS_TEMPLATE
// after its migrations committed, so one a killed process left half made is made again).
func makeTemplate(ctx context.Context, base string) error {
	db, err := sql.Open("pgx", base)
	if err != nil {
		return err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, templateLock); err != nil {
		return fmt.Errorf("lock: %w", err)
	}
	defer func() {
		_, _ = conn.ExecContext(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, templateLock)
	}()
	var ready sql.NullBool
	err = conn.QueryRowContext(ctx, `SELECT datistemplate FROM pg_database WHERE datname = $1`, tpl.name).Scan(&ready)
	switch {
	case err == nil && ready.Bool:
		return nil
	case err == nil:
		if _, err := conn.ExecContext(ctx, `DROP DATABASE `+tpl.name+` WITH (FORCE)`); err != nil {
			return fmt.Errorf("drop the half-made template: %w", err)
		}
	case !errors.Is(err, sql.ErrNoRows):
		return err
	}
	// Templates of other migrations (another checkout's, an older commit's) are left alone:
	// a test process of that checkout may be cloning one right now. They are small (about
	// 8 MB); `DROP DATABASE` after `ALTER DATABASE … IS_TEMPLATE false` removes one by hand.
	if _, err := conn.ExecContext(ctx, `CREATE DATABASE `+tpl.name); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if err := tpl.migrate(ctx, withDatabase(base, tpl.name)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if _, err := conn.ExecContext(ctx, `ALTER DATABASE `+tpl.name+` IS_TEMPLATE true ALLOW_CONNECTIONS false`); err != nil {
		return fmt.Errorf("mark: %w", err)
	}
	return nil
}

// cloneURL creates a database from the template for t and drops it when t ends.
func cloneURL(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	base, db := server(ctx, t)
	defer db.Close()
	tpl.once.Do(func() { tpl.err = makeTemplate(ctx, base) })
	if tpl.err != nil {
		t.Fatalf("pgtest: template database %s: %v", tpl.name, tpl.err)
	}
	name := uniqueName()
	if _, err := db.ExecContext(ctx, `CREATE DATABASE `+name+` TEMPLATE `+tpl.name); err != nil {
		t.Fatalf("pgtest: clone the template: %v", err)
	}
	// FORCE ends connections a stopped test left open (a pool's idle ones).
	dropAtEnd(t, base, `DROP DATABASE `+name+` WITH (FORCE)`)
	return withDatabase(base, name)
}

// withDatabase is base with its database name replaced.
func withDatabase(base, name string) string {
	u, err := url.Parse(base)
	if err != nil {
		return base
	}
	u.Path = "/" + strings.TrimPrefix(name, "/")
	return u.String()
}
