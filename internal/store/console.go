package store

import (
	"context"
	"time"
)

// ConsoleSession is a signed-in web console session (internal/console). Only hashes are kept:
// Hash is the SHA-256 of the cookie's secret, CredentialHash the hash of the API key or admin
// token that signed in, re-checked on every request.
type ConsoleSession struct {
	Hash           []byte
	Kind           string // tenant or admin
	CredentialHash []byte
	CSRF           string // the session's form token
	CreatedAt      time.Time
	ExpiresAt      time.Time
	EndedAt        time.Time // zero while open
}

// Open reports whether the session may still be used at now.
func (s ConsoleSession) Open(now time.Time) bool {
	return s.EndedAt.IsZero() && now.Before(s.ExpiresAt)
}

// ConsoleStore keeps console sessions.
type ConsoleStore interface {
	// CreateConsoleSession stores s and deletes a bounded number of sessions that expired or
	// ended before now minus a day (the lazy sweep).
	CreateConsoleSession(ctx context.Context, s ConsoleSession, now time.Time) error
	// ConsoleSession reads the session whose secret hashes to hash, or ErrNotFound.
	ConsoleSession(ctx context.Context, hash []byte) (ConsoleSession, error)
	// EndConsoleSession ends the session (sign out); ending it twice keeps the first time and
	// an unknown hash is not an error.
	EndConsoleSession(ctx context.Context, hash []byte, at time.Time) error
}
