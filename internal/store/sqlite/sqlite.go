// Package sqlite is the embedded store: modernc's pure-Go SQLite in WAL mode with one writer
// connection (so writers queue in Go instead of failing with SQLITE_BUSY) and a small read
// pool that proceeds alongside it.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

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

// Open opens (creating if needed) the database file at path and applies migrations.
func Open(ctx context.Context, path string) (*sqldb.DB, error) {
	return open(ctx, path, walRestartFrames)
}

// open is Open with the WAL bound as a parameter, for the tests.
func open(ctx context.Context, path string, maxWALFrames int) (*sqldb.DB, error) {
	if dir := filepath.Dir(path); dir != "" {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("sqlite: create directory for %s: %w", path, err)
		}
	}
	common := "_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=foreign_keys(1)&_pragma=synchronous(NORMAL)"
	base := "file:" + (&url.URL{Path: path}).EscapedPath() + "?"
	// The writer never checkpoints; the checkpointer does (checkpoint.go). Its temporary
	// files — the savepoint journals of group commit — stay in memory: on disk they cost a
	// write system call per page a savepoint touches.
	write, err := sql.Open("sqlite", base+common+"&_txlock=immediate&_pragma=wal_autocheckpoint(0)&_pragma=journal_size_limit(67108864)&_pragma=temp_store(MEMORY)")
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	write.SetMaxOpenConns(1)
	write.SetMaxIdleConns(1)
	write.SetConnMaxLifetime(0)
	if err := write.PingContext(ctx); err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	read, err := sql.Open("sqlite", base+common+"&_pragma=query_only(1)")
	if err != nil {
		_ = write.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	read.SetMaxOpenConns(4)
	read.SetMaxIdleConns(4)
	db := sqldb.New(write, read, dialect{})
	backfill, err := sqldb.UsageBackfill(Migrations(), usageMigration)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	db.SetUsageBackfill(backfill)
	if _, err := db.Migrate(ctx, Migrations()); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite %s: %w", path, err)
	}
	// One writer connection: concurrent transactions share commits (sqldb/group.go).
	db.EnableGroupCommit()
	ckpt, err := sql.Open("sqlite", base+common)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	ckpt.SetMaxOpenConns(1)
	db.CloseWith(startCheckpointer(ckpt, checkpointEvery, maxWALFrames, db.BetweenCommits))
	return db, nil
}

type dialect struct{}

func (dialect) Name() string                                  { return "sqlite" }
func (dialect) Placeholders(q string) string                  { return q }
func (dialect) LockMigrations(context.Context, *sql.Tx) error { return nil } // BEGIN IMMEDIATE already excludes other writers

// DriverCachesStatements is false: modernc prepares on every call, so DB keeps statements
// (on SQLite's single writer connection they are always on the right connection).
func (dialect) DriverCachesStatements() bool { return false }

// ClaimLock is empty: SQLite has no row locks, and its single writer already serialises claims.
func (dialect) ClaimLock() string { return "" }

// ClaimSetup: none; SQLite plans a prepared statement once, and its plans of the claim's
// seeks do not depend on statistics.
func (dialect) ClaimSetup() string { return "" }

// IsRetryable is false: SQLite has one writer, so its transactions never deadlock.
func (dialect) IsRetryable(error) bool { return false }

func (dialect) IsUniqueViolation(err error) bool {
	var e *msqlite.Error
	if !errors.As(err, &e) {
		return false
	}
	return e.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || e.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY
}
