package sqldb

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migrate applies the numbered *.sql files of migrations (named like 0001_init.sql) that the
// database has not seen, each in its own transaction together with its bookkeeping row. It
// returns the versions it applied.
func (db *DB) Migrate(ctx context.Context, migrations fs.FS) ([]int, error) {
	if err := db.bootstrap(ctx); err != nil {
		return nil, fmt.Errorf("migrate: create schema_migrations: %w", err)
	}
	files, err := fs.Glob(migrations, "*.sql")
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	type mig struct {
		version int
		name    string
	}
	var list []mig
	for _, f := range files {
		num, _, ok := strings.Cut(path.Base(f), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migrate: file %s is not named NNNN_name.sql", f)
		}
		list = append(list, mig{v, f})
	}
	sort.Slice(list, func(i, j int) bool { return list[i].version < list[j].version })
	var applied []int
	for _, m := range list {
		body, err := fs.ReadFile(migrations, m.name)
		if err != nil {
			return applied, fmt.Errorf("migrate: %w", err)
		}
		did, err := db.applyOne(ctx, m.version, m.name, string(body))
		if err != nil {
			return applied, err
		}
		if did {
			applied = append(applied, m.version)
		}
	}
	return applied, nil
}

func (db *DB) applyOne(ctx context.Context, version int, name, body string) (bool, error) {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migrate %s: %w", name, err)
	}
	defer func() { _ = tx.Rollback() }()
	if err := db.d.LockMigrations(ctx, tx); err != nil {
		return false, fmt.Errorf("migrate %s: lock: %w", name, err)
	}
	var n int
	if err := tx.QueryRowContext(ctx, db.q(`SELECT COUNT(*) FROM schema_migrations WHERE version = ?`), version).Scan(&n); err != nil {
		return false, fmt.Errorf("migrate %s: %w", name, err)
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return false, fmt.Errorf("migrate %s: %w", name, err)
	}
	if _, err := tx.ExecContext(ctx, db.q(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`),
		version, name, micros(db.now())); err != nil {
		return false, fmt.Errorf("migrate %s: %w", name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migrate %s: commit: %w", name, err)
	}
	return true, nil
}

// bootstrap creates the bookkeeping table under the migration lock: CREATE TABLE IF NOT EXISTS
// alone races between replicas on PostgreSQL.
func (db *DB) bootstrap(ctx context.Context) error {
	tx, err := db.write.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	if err := db.d.LockMigrations(ctx, tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return err
	}
	return tx.Commit()
}
