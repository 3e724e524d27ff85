-- Unfinished work per key and per tenant, for the in-flight limits (docs/limits.md). The
-- counters move in the same transaction as the rows they count: +1 when a task or speech
-- record is created, -1 when it reaches a terminal status. Creating takes the counter rows'
-- locks until commit, so on PostgreSQL concurrent creates of one key or tenant — from any
-- replica — wait for one another and each sees the count including everything committed:
-- the limit is exact without COUNT(*) over the tasks on every create.
--   kind: task_key, task_tenant (queued + in_progress video tasks),
--         speech_key, speech_tenant (pending speech records)
CREATE TABLE in_flight (
    kind   TEXT NOT NULL,
    owner  TEXT NOT NULL,
    n      BIGINT NOT NULL,
    PRIMARY KEY (kind, owner)
);
-- Work already unfinished when this migration runs is counted from the rows themselves.
INSERT INTO in_flight (kind, owner, n)
    SELECT 'task_key', key_id, COUNT(*) FROM tasks WHERE status IN ('queued', 'in_progress') GROUP BY key_id;
INSERT INTO in_flight (kind, owner, n)
    SELECT 'task_tenant', tenant_id, COUNT(*) FROM tasks WHERE status IN ('queued', 'in_progress') GROUP BY tenant_id;
INSERT INTO in_flight (kind, owner, n)
    SELECT 'speech_key', key_id, COUNT(*) FROM speeches WHERE status = 'pending' GROUP BY key_id;
INSERT INTO in_flight (kind, owner, n)
    SELECT 'speech_tenant', tenant_id, COUNT(*) FROM speeches WHERE status = 'pending' GROUP BY tenant_id;
