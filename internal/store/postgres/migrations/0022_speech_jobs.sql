-- Speech generation is a job of the one engine (kind speech.generate, docs/speech.md): the
-- request enqueues it with the record, and the engine's lease replaces the record's own
-- attempt lease, its renewal, its take-over and its sweep. A record still pending when this
-- migration runs (its process was of the old version, and is gone: migrations run before
-- serving) gets its job, whose first run finds the record's deadline passed and fails it with
-- speech_timeout, refunded, as the sweep did. attempt_until now holds the end of the
-- request's bounded wait, and nothing lists records by it any more.
INSERT INTO jobs (id, kind, queue, ref, tenant_id, key_id, priority, payload, run_at, deadline, created_at)
SELECT 'speech.generate:' || id, 'speech.generate', '', id, tenant_id, key_id, 0, '', created_at, 0, created_at
FROM speeches WHERE status = 'pending'
ON CONFLICT (id) DO NOTHING;
DROP INDEX IF EXISTS speeches_pending;
-- The periodic sweep's job is no one's any more.
DELETE FROM jobs WHERE kind = 'speech.sweep';
