-- Support (docs/admin.md, "Support: finding a task"): a task's history and the indexes that
-- find a task, a speech record or an asset from what a customer or an operator knows.
--
-- task_events: one row per acceptance, change of status or pipeline step, failed attempt and
-- end of a task, appended in the transaction of the change and never changed. Tasks accepted
-- before this migration have no acceptance row; their history starts with their next change.
CREATE TABLE task_events (
    task_id       TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    at            INTEGER NOT NULL,
    from_status   TEXT NOT NULL,
    to_status     TEXT NOT NULL,
    step          TEXT NOT NULL DEFAULT '',
    attempt       INTEGER NOT NULL DEFAULT 0,
    upstream      TEXT NOT NULL DEFAULT '',
    upstream_job  TEXT NOT NULL DEFAULT '',
    detail        TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (task_id, seq)
) STRICT, WITHOUT ROWID;
-- Search by the upstream's job id: only events that name one are indexed.
CREATE INDEX task_events_upstream_job ON task_events (upstream_job) WHERE upstream_job <> '';

-- Searches and GET /v1/videos walk these in creation order (keyset pagination on
-- created_at, id), so a page costs its rows, not the table.
CREATE INDEX tasks_by_key ON tasks (key_id, created_at, id);
CREATE INDEX tasks_by_tenant ON tasks (tenant_id, created_at, id);
CREATE INDEX tasks_created ON tasks (created_at, id);
-- A status alone (every failed task, the few queued ones) must not scan the history.
CREATE INDEX tasks_by_status ON tasks (status, created_at, id);
CREATE INDEX speeches_by_key ON speeches (key_id, created_at, id);
CREATE INDEX speeches_by_tenant ON speeches (tenant_id, created_at, id);
CREATE INDEX speeches_created ON speeches (created_at, id);
CREATE INDEX assets_by_tenant ON assets (tenant_id, created_at, id);
CREATE INDEX assets_created ON assets (created_at, id);

-- The internal reason behind a failed speech record, for operators only (the client sees the
-- sanitized error_message): the engine's own answer, the timeout, the sweep.
ALTER TABLE speeches ADD COLUMN error_detail TEXT NOT NULL DEFAULT '';
