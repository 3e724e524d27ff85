-- One queue for all background work (internal/jobs, docs/architecture.md#the-job-engine):
-- video tasks, asset ingestion, verification callbacks and periodic sweeps are jobs of a kind.
-- A job names the record it works on (ref); the record keeps the domain state, the job only
-- when it runs and under whose lease. A finished job is deleted.
--
-- run_at is when the job may next be claimed. A claim sets it to the lease's end, so one range
-- scan of jobs_due finds both due jobs and jobs whose holder died.
CREATE TABLE jobs (
    id           TEXT PRIMARY KEY,          -- kind ':' ref, or the kind (and queue) of periodic work
    kind         TEXT NOT NULL,
    queue        TEXT NOT NULL DEFAULT '',  -- '' shared; a process-local scope otherwise
    ref          TEXT NOT NULL DEFAULT '',
    tenant_id    TEXT NOT NULL DEFAULT '',
    priority     BIGINT NOT NULL DEFAULT 0,
    payload      TEXT NOT NULL DEFAULT '',
    run_at       BIGINT NOT NULL,
    lease_until  BIGINT NOT NULL DEFAULT 0,
    lease_token  TEXT NOT NULL DEFAULT '',
    attempts     BIGINT NOT NULL DEFAULT 0,
    last_error   TEXT NOT NULL DEFAULT '',
    deadline     BIGINT NOT NULL DEFAULT 0,
    created_at   BIGINT NOT NULL
);
CREATE INDEX jobs_due ON jobs (kind, queue, run_at);

-- Work unfinished when this migration runs moves onto the queue with its schedule and its
-- attempts; a lease held by a process of the old version is dropped (that process is gone:
-- migrations run before serving).
INSERT INTO jobs (id, kind, ref, tenant_id, run_at, attempts, created_at)
    SELECT 'video.task:' || id, 'video.task', id, tenant_id, next_run_at, attempts, created_at
    FROM tasks WHERE status IN ('queued', 'in_progress');
INSERT INTO jobs (id, kind, ref, tenant_id, run_at, attempts, created_at)
    SELECT 'asset.ingest:' || id, 'asset.ingest', id, tenant_id, 0, attempts, created_at
    FROM assets WHERE status = 'Processing';
INSERT INTO jobs (id, kind, ref, tenant_id, run_at, created_at)
    SELECT 'verify.callback:' || id, 'verify.callback', id, tenant_id, callback_next_at, finished_at
    FROM verify_sessions WHERE callback_state = 'pending';

-- The per-table leases and schedules the queue replaces. assets.attempts stays: it is the
-- count a finished asset keeps (a Processing asset's count is its job's).
DROP INDEX tasks_due;
-- mediagen_tasks_active still counts unfinished tasks at every scrape, through this index.
CREATE INDEX tasks_active ON tasks (route, status) WHERE status IN ('queued', 'in_progress');
ALTER TABLE tasks DROP COLUMN next_run_at;
ALTER TABLE tasks DROP COLUMN lease_until;
ALTER TABLE tasks DROP COLUMN lease_token;
ALTER TABLE tasks DROP COLUMN attempts;
DROP INDEX assets_processing;
ALTER TABLE assets DROP COLUMN lease_until;
ALTER TABLE assets DROP COLUMN lease_token;
DROP INDEX verify_sessions_callbacks;
ALTER TABLE verify_sessions DROP COLUMN callback_next_at;
ALTER TABLE verify_sessions DROP COLUMN callback_lease_until;
ALTER TABLE verify_sessions DROP COLUMN callback_lease_token;
