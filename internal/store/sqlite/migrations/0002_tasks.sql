-- Video tasks. The table is also the work queue (next_run_at, lease_*), so a task's state and
-- its schedule change together in one row.
CREATE TABLE tasks (
    id                 TEXT PRIMARY KEY,
    key_id             TEXT NOT NULL,
    tenant_id          TEXT NOT NULL,
    route              TEXT NOT NULL,
    model              TEXT NOT NULL,
    status             TEXT NOT NULL,
    progress           INTEGER NOT NULL,
    client_request_id  TEXT NOT NULL,
    payload_hash       BLOB NOT NULL,
    request            TEXT NOT NULL,
    pricing            TEXT NOT NULL,
    reserved           INTEGER NOT NULL,
    charged            INTEGER NOT NULL DEFAULT 0,
    result             TEXT NOT NULL DEFAULT '',
    error_code         TEXT NOT NULL DEFAULT '',
    error_message      TEXT NOT NULL DEFAULT '',
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    finished_at        INTEGER NOT NULL DEFAULT 0,
    next_run_at        INTEGER NOT NULL,
    lease_until        INTEGER NOT NULL DEFAULT 0,
    lease_token        TEXT NOT NULL DEFAULT '',
    attempts           INTEGER NOT NULL DEFAULT 0,
    step               TEXT NOT NULL DEFAULT '',
    state              TEXT NOT NULL DEFAULT ''
) STRICT;
-- Idempotency: one task per key and client_request_id, enforced by the database so concurrent
-- duplicates end as one task.
CREATE UNIQUE INDEX tasks_client_request ON tasks (key_id, client_request_id) WHERE client_request_id <> '';
-- The queue: only unfinished tasks are indexed, so claiming costs what is due, not what is stored.
CREATE INDEX tasks_due ON tasks (next_run_at) WHERE status IN ('queued', 'in_progress');
