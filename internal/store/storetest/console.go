package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"testing"
	"time"

	"mediagen/internal/store"
)

// A session is found by its hash, ends once, and long-expired sessions are swept by later
// sign-ins while recent ones stay.
func testConsoleSessions(t *testing.T, s store.Store) {
	ctx := context.Background()
	at := time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)
	hash := func(v string) []byte { h := sha256.Sum256([]byte(v)); return h[:] }
	old := store.ConsoleSession{Hash: hash("old"), Kind: "tenant", CredentialHash: hash("key"), CSRF: "c-old",
		CreatedAt: at.Add(-72 * time.Hour), ExpiresAt: at.Add(-48 * time.Hour)}
	live := store.ConsoleSession{Hash: hash("live"), Kind: "admin", CredentialHash: hash("token"), CSRF: "c-live",
		CreatedAt: at, ExpiresAt: at.Add(12 * time.Hour)}
	if err := s.CreateConsoleSession(ctx, old, old.CreatedAt); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateConsoleSession(ctx, live, at); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateConsoleSession(ctx, live, at); !errors.Is(err, store.ErrConflict) {
		t.Errorf("second session with the same hash: %v; want ErrConflict", err)
	}
	if _, err := s.ConsoleSession(ctx, old.Hash); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("session expired two days before a sign-in: %v; want it swept (ErrNotFound)", err)
	}
	got, err := s.ConsoleSession(ctx, live.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.Kind != "admin" || !bytes.Equal(got.CredentialHash, live.CredentialHash) || got.CSRF != "c-live" ||
		!got.CreatedAt.Equal(at) || !got.ExpiresAt.Equal(live.ExpiresAt) || !got.EndedAt.IsZero() {
		t.Errorf("read back %+v; want %+v", got, live)
	}
	if !got.Open(at.Add(time.Hour)) || got.Open(live.ExpiresAt) {
		t.Errorf("Open: want open before its expiry and closed at it")
	}
	if err := s.EndConsoleSession(ctx, live.Hash, at.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.EndConsoleSession(ctx, live.Hash, at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.EndConsoleSession(ctx, hash("nobody"), at); err != nil {
		t.Errorf("ending an unknown session: %v; want nil", err)
	}
	got, err = s.ConsoleSession(ctx, live.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if !got.EndedAt.Equal(at.Add(time.Minute)) || got.Open(at.Add(2*time.Minute)) {
		t.Errorf("ended at %v; want the first end, %v, and closed", got.EndedAt, at.Add(time.Minute))
	}
}
