-- The id of the HTTP request that enqueued a job (X-Request-Id, or the one the service made),
-- so that the log lines of the job's runs carry it as request_id (docs/deploy.md#logs). Jobs
-- enqueued before this migration, and periodic work, have none.
ALTER TABLE jobs ADD COLUMN request_id TEXT NOT NULL DEFAULT '';
