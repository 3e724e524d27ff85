-- Web console sessions (docs/console.md). A session is made when a person signs in with an
-- API key (kind "tenant") or an admin token (kind "admin"); the browser holds a random secret
-- in an HttpOnly cookie and only its SHA-256 is kept here. credential_hash is the hash of the
-- key or token that signed in: every request re-checks that credential, so a revoked key,
-- an expired token or a rotated-out secret ends its sessions at once. csrf is the session's
-- form token. Timestamps are Unix microseconds; ended_at 0 means "still open".
CREATE TABLE console_sessions (
    hash            BYTEA PRIMARY KEY,
    kind            TEXT NOT NULL,
    credential_hash BYTEA NOT NULL,
    csrf            TEXT NOT NULL,
    created_at      BIGINT NOT NULL,
    expires_at      BIGINT NOT NULL,
    ended_at        BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX console_sessions_expires ON console_sessions (expires_at);
