-- The operator plane (docs/admin.md): admin tokens, the audit log, and the stored answers of
-- idempotent admin writes. Timestamps are Unix microseconds; 0 means "never".
CREATE TABLE admin_tokens (
    id          TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL,
    prefix      TEXT NOT NULL,
    hash        BYTEA NOT NULL UNIQUE,
    created_by  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL DEFAULT 0,
    revoked_at  BIGINT NOT NULL DEFAULT 0
);

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
    created_at   BIGINT NOT NULL
);
CREATE INDEX admin_audit_actor ON admin_audit (actor_id, id);
CREATE INDEX admin_audit_action ON admin_audit (action, id);
CREATE INDEX admin_audit_target ON admin_audit (target_id, id);
CREATE INDEX admin_audit_created ON admin_audit (created_at);
-- Nothing edits or deletes the record of what operators did.
CREATE FUNCTION admin_audit_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END $$;
CREATE TRIGGER admin_audit_append_only BEFORE UPDATE OR DELETE ON admin_audit
    FOR EACH ROW EXECUTE FUNCTION admin_audit_append_only();

-- The first answer of an admin write, per token and Idempotency-Key, written in the write's
-- transaction; expired rows are replaced or swept lazily by later writes.
CREATE TABLE admin_idempotency (
    token_id      TEXT NOT NULL,
    idem_key      TEXT NOT NULL,
    request_hash  BYTEA NOT NULL,
    status        INTEGER NOT NULL,
    body          BYTEA NOT NULL,
    created_at    BIGINT NOT NULL,
    expires_at    BIGINT NOT NULL,
    PRIMARY KEY (token_id, idem_key)
);
CREATE INDEX admin_idempotency_expires ON admin_idempotency (expires_at);
