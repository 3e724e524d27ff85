// Package pgschema gives a benchmark a PostgreSQL schema of its own on a shared server.
package pgschema

import (
	"context"
	"database/sql"
	"fmt"
	"mediagen/bench/internal/proc"
	"net/url"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// Fresh creates schema on the server at base and returns base with search_path set to
// it, and a function that drops it again.
func Fresh(ctx context.Context, base, schema string) (string, func(), error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, fmt.Errorf("bad -pg-url: %w", err)
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, err
	}
	defer db.Close()
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		return "", nil, fmt.Errorf("%s: %w", proc.Redact(u), err)
	}
	if _, err := db.ExecContext(pctx, `CREATE SCHEMA `+schema); err != nil {
		return "", nil, fmt.Errorf("create schema %s: %w", schema, err)
	}
	drop := func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		// The run may have been interrupted: a fresh context, bounded.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_, _ = db.ExecContext(ctx, `DROP SCHEMA IF EXISTS `+schema+` CASCADE`)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}
