-- Speech requests (POST /v1/audio/speech). A record is written, with its reservation, before
-- the engine is called, so a crash or a client timeout never loses track of it: a retry of the
-- same request takes over a record whose attempt deadline passed, and the sweep fails and
-- refunds records that nobody took over.
CREATE TABLE speeches (
    id                 TEXT PRIMARY KEY,
    key_id             TEXT NOT NULL,
    tenant_id          TEXT NOT NULL,
    model              TEXT NOT NULL,
    status             TEXT NOT NULL,
    client_request_id  TEXT NOT NULL,
    payload_hash       BYTEA NOT NULL,
    request            TEXT NOT NULL,
    pricing            TEXT NOT NULL,
    reserved           BIGINT NOT NULL,
    charged            BIGINT NOT NULL DEFAULT 0,
    result             TEXT NOT NULL DEFAULT '',
    error_kind         TEXT NOT NULL DEFAULT '',
    error_code         TEXT NOT NULL DEFAULT '',
    error_message      TEXT NOT NULL DEFAULT '',
    error_param        TEXT NOT NULL DEFAULT '',
    attempt_token      TEXT NOT NULL,
    attempt_until      BIGINT NOT NULL,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    finished_at        BIGINT NOT NULL DEFAULT 0
);
-- Idempotency: one record per key and client_request_id, so concurrent duplicates end as one.
CREATE UNIQUE INDEX speeches_client_request ON speeches (key_id, client_request_id) WHERE client_request_id <> '';
-- The sweep: only pending records are indexed, so it costs what is pending, not what is stored.
CREATE INDEX speeches_pending ON speeches (attempt_until) WHERE status = 'pending';
