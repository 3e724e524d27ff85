-- The operator plane (docs/admin.md): admin tokens, the audit log, and the stored answers of
-- idempotent admin writes. Timestamps are Unix microseconds; 0 means "never".
CREATE TABLE admin_tokens (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL,
    prefix      TEXT NOT NULL,
    hash        BLOB NOT NULL UNIQUE,
    created_by  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL DEFAULT 0,
    revoked_at  INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Appended in the transaction of the change it records; ids sort by time.
CREATE TABLE admin_audit (
    id           TEXT PRIMARY KEY,
    actor_id     TEXT NOT NULL,
    actor_name   TEXT NOT NULL,
    actor_role   TEXT NOT NULL,
    via          TEXT NOT NULL,
    action       TEXT NOT NULL,
    target_type  TEXT NOT NULL,
    target_id    TEXT NOT NULL,
    before_json  TEXT,
    after_json   TEXT,
    request_id   TEXT NOT NULL,
    remote_addr  TEXT NOT NULL,
    created_at   INTEGER NOT NULL
) STRICT;
CREATE INDEX admin_audit_actor ON admin_audit (actor_id, id);
CREATE INDEX admin_audit_action ON admin_audit (action, id);
CREATE INDEX admin_audit_target ON admin_audit (target_id, id);
CREATE INDEX admin_audit_created ON admin_audit (created_at);
-- Nothing edits or deletes the record of what operators did.
CREATE TRIGGER admin_audit_no_update BEFORE UPDATE ON admin_audit
BEGIN SELECT RAISE(ABORT, 'admin_audit is append-only'); END;
CREATE TRIGGER admin_audit_no_delete BEFORE DELETE ON admin_audit
BEGIN SELECT RAISE(ABORT, 'admin_audit is append-only'); END;

-- The first answer of an admin write, per token and Idempotency-Key, written in the write's
-- transaction; expired rows are replaced or swept lazily by later writes.
CREATE TABLE admin_idempotency (
    token_id      TEXT NOT NULL,
    idem_key      TEXT NOT NULL,
    request_hash  BLOB NOT NULL,
    status        INTEGER NOT NULL,
    body          BLOB NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER NOT NULL,
    PRIMARY KEY (token_id, idem_key)
) STRICT;
CREATE INDEX admin_idempotency_expires ON admin_idempotency (expires_at);
