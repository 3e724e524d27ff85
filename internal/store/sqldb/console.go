package sqldb

import (
	"context"
	"fmt"
	"time"

	"mediagen/internal/store"
)

// consoleSweepAge is how long an expired session row stays before the lazy sweep deletes it,
// so a request in flight at its expiry still finds it (and is told it expired).
const consoleSweepAge = 24 * time.Hour

// CreateConsoleSession inserts the session, after deleting a bounded batch of long-expired ones.
func (db *DB) CreateConsoleSession(ctx context.Context, s store.ConsoleSession, now time.Time) error {
	return db.Transact(ctx, func(tx store.Tx) error {
		t := tx.(*Tx)
		if _, err := t.exec(ctx, `DELETE FROM console_sessions WHERE hash IN
			(SELECT hash FROM console_sessions WHERE expires_at < ? LIMIT ?)`, micros(now.Add(-consoleSweepAge)), sweepBatch); err != nil {
			return fmt.Errorf("sweep console sessions: %w", err)
		}
		if _, err := t.exec(ctx, `INSERT INTO console_sessions (hash, kind, credential_hash, csrf, created_at, expires_at, ended_at)
			VALUES (?, ?, ?, ?, ?, ?, 0)`, s.Hash, s.Kind, s.CredentialHash, s.CSRF, micros(s.CreatedAt), micros(s.ExpiresAt)); err != nil {
			if db.d.IsUniqueViolation(err) {
				return fmt.Errorf("create console session: %w", store.ErrConflict)
			}
			return fmt.Errorf("create console session: %w", err)
		}
		return nil
	})
}

// ConsoleSession reads one session by the hash of its secret.
func (db *DB) ConsoleSession(ctx context.Context, hash []byte) (store.ConsoleSession, error) {
	var s store.ConsoleSession
	var created, expires, ended int64
	err := db.readRow(ctx, `SELECT hash, kind, credential_hash, csrf, created_at, expires_at, ended_at
		FROM console_sessions WHERE hash = ?`, hash).Scan(&s.Hash, &s.Kind, &s.CredentialHash, &s.CSRF, &created, &expires, &ended)
	if err != nil {
		return store.ConsoleSession{}, fmt.Errorf("console session: %w", noRows(err))
	}
	s.CreatedAt, s.ExpiresAt, s.EndedAt = fromMicros(created), fromMicros(expires), fromMicros(ended)
	return s, nil
}

// EndConsoleSession marks the session ended; the first end time stays.
func (db *DB) EndConsoleSession(ctx context.Context, hash []byte, at time.Time) error {
	if _, err := db.writeExec(ctx, `UPDATE console_sessions SET ended_at = ? WHERE hash = ? AND ended_at = 0`, micros(at), hash); err != nil {
		return fmt.Errorf("end console session: %w", err)
	}
	return nil
}
