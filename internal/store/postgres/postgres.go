// Package postgres is the shared store for several replicas: PostgreSQL through pgx.
package postgres

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"mediagen/internal/store/sqldb"
)

//go:embed migrations/*.sql
var migrations embed.FS

// usageMigration holds the usage rollups' backfill statement, which RebuildUsage reruns.
const usageMigration = "0021_cost.sql"

// Migrations are the embedded schema files of this dialect.
func Migrations() fs.FS {
	sub, _ := fs.Sub(migrations, "migrations")
	return sub
}

// ErrUnreachable marks an Open that could not reach the server (down, restarting, not yet
// listening, starting up, out of connections): a caller may try again, unlike a bad URL, a
// database or role the server says does not exist, or a failed migration.
var ErrUnreachable = errors.New("server unreachable")

// SQLSTATEs of a connection the server refused (https://www.postgresql.org/docs/current/errcodes-appendix.html).
const (
	sqlstateNoDatabase   = "3D000" // invalid_catalog_name: the database does not exist
	sqlstateNoRole       = "28000" // invalid_authorization_specification: unknown role, no pg_hba entry
	sqlstateBadPassword  = "28P01" // invalid_password
	sqlstateStarting     = "57P03" // cannot_connect_now: starting up, shutting down, in recovery
	sqlstateTooManyConns = "53300" // too_many_connections
)

// connectError says why a first connection failed. A server that answered with a refusal
// (no such database, no such role, a wrong password) will answer the same a second later, so
// it is not ErrUnreachable and the message says what to fix; a server that did not answer, or
// said "not now" (starting up, out of connections), is ErrUnreachable and worth waiting for.
func connectError(dsn string, cfg *pgx.ConnConfig, err error) error {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code == sqlstateStarting || pe.Code == sqlstateTooManyConns {
		return fmt.Errorf("postgres: connect to %s: %w: %w", redact(dsn), ErrUnreachable, err)
	}
	switch pe.Code {
	case sqlstateNoDatabase:
		return fmt.Errorf("postgres: database %q does not exist on %s:%d: create it (as the postgres user: createdb -O %s %s, or in psql: CREATE DATABASE %s OWNER %s;) or correct the database name in --db %s: %w",
			cfg.Database, cfg.Host, cfg.Port, cfg.User, cfg.Database, pgx.Identifier{cfg.Database}.Sanitize(), pgx.Identifier{cfg.User}.Sanitize(), redact(dsn), err)
	case sqlstateNoRole, sqlstateBadPassword:
		return fmt.Errorf("postgres: the server at %s:%d refused user %q: check the user and password in --db %s, that the role exists (CREATE ROLE %s LOGIN PASSWORD '…';) and that pg_hba.conf lets it connect: %w",
			cfg.Host, cfg.Port, cfg.User, redact(dsn), pgx.Identifier{cfg.User}.Sanitize(), err)
	}
	return fmt.Errorf("postgres: the server at %s refused the connection: %w", redact(dsn), err)
}

// Open connects to the database at url (postgres://…) and applies migrations.
func Open(ctx context.Context, url string) (*sqldb.DB, error) {
	cfg, err := pgconnConfig(url)
	if err != nil {
		return nil, err
	}
	pool := stdlib.OpenDB(*cfg)
	pool.SetMaxOpenConns(16)
	pool.SetMaxIdleConns(16)
	if err := pool.PingContext(ctx); err != nil {
		_ = pool.Close()
		return nil, connectError(url, cfg, err)
	}
	db := sqldb.New(pool, pool, dialect{})
	backfill, err := sqldb.UsageBackfill(Migrations(), usageMigration)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	db.SetUsageBackfill(backfill)
	db.EnableSharedCommits(sharedCommitLanes)
	if _, err := db.Migrate(ctx, Migrations()); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return db, nil
}

// MigrationsDigest names the embedded migrations by their contents (hex SHA-256 of every
// file's name and body, in order): tests key their migrated template database by it.
func MigrationsDigest() string {
	h := sha256.New()
	files, _ := fs.Glob(Migrations(), "*.sql")
	for _, f := range files {
		b, _ := fs.ReadFile(Migrations(), f)
		fmt.Fprintf(h, "%s\x00%d\x00", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Migrate brings the database at url up to date and closes it (pgtest's template database).
func Migrate(ctx context.Context, url string) error {
	db, err := Open(ctx, url)
	if err != nil {
		return err
	}
	return db.Close()
}

// sharedCommitLanes is how many batches of creates (store.ShareCommit) one replica commits at
// once, each lane carrying the tenants that hash to it. Half the pool: the other half serves
// reads and unshared transactions.
const sharedCommitLanes = 8

type dialect struct{}

func (dialect) Name() string                 { return "postgres" }
func (dialect) Placeholders(q string) string { return sqldb.RebindDollar(q) }

// LockMigrations takes a transaction-scoped advisory lock, so replicas starting together apply
// each migration once. The lock is the schema's (advisory locks are per database): replicas of
// one deployment share their schema and so the lock, while deployments in other schemas of
// the same database (and tests, a schema each) migrate without waiting for each other.
func (dialect) LockMigrations(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(7346218, hashtext(current_schema()))`)
	return err
}

// DriverCachesStatements is true: pgx keeps a per-connection statement cache, while a
// database/sql statement used in a transaction on another pooled connection would be
// prepared again for every transaction, a round trip each.
func (dialect) DriverCachesStatements() bool { return true }

// ClaimLock makes concurrent claimers skip rows another claimer holds instead of waiting.
func (dialect) ClaimLock() string { return " FOR UPDATE SKIP LOCKED" }

// ClaimSetup pins the plans of the claim's statements after its first, for its transaction
// only; the first statement evaluates it (sqldb.dueTenantsQuery), so it costs no round trip of
// its own. The claim's candidates (sqldb.candidatesQuery) are a chain of index seeks of
// jobs_fair and the primary key whatever the data, and each setting below stops the planner
// from finding otherwise, as measured with 100,000 jobs queued (bench/runner):
//   - enable_sort, enable_incremental_sort off: with no statistics yet (a table that grew
//     since its last analyze), the plan read a group's oldest due job from jobs_tenant_due
//     (or jobs_due) and sorted the tenant's 100,000 rows to find it: seconds for a claim of
//     one where jobs_fair gives the order in one seek.
//   - enable_seqscan, enable_hashjoin, enable_mergejoin off: the same statistics made the
//     plan hash a scan of the table (29 s for a claim of 64). Off, they only cost more; the
//     tiny joins of the claim's CTEs still run as nested loops.
//   - plan_cache_mode: planning the candidates for each claim's arguments took 5 to 20 ms, for
//     a query that runs in under 1 ms; its generic plan is planned once per connection (one
//     per number of tenants served, at most the batch).
//   - jit off: a disabled plan node makes the query look expensive enough to compile, and
//     compiling it took seconds, each time.
func (dialect) ClaimSetup() string {
	return `set_config('plan_cache_mode', 'force_generic_plan', true) || set_config('jit', 'off', true) ||
		set_config('enable_seqscan', 'off', true) || set_config('enable_sort', 'off', true) ||
		set_config('enable_incremental_sort', 'off', true) ||
		set_config('enable_hashjoin', 'off', true) || set_config('enable_mergejoin', 'off', true)`
}

// IsRetryable: deadlock_detected and serialization_failure.
func (dialect) IsRetryable(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && (e.Code == "40P01" || e.Code == "40001")
}

func (dialect) IsUniqueViolation(err error) bool {
	var e *pgconn.PgError
	return errors.As(err, &e) && e.Code == "23505"
}
