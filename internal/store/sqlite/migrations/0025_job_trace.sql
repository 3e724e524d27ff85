-- The W3C trace context of the request that enqueued a job (docs/tracing.md): the replica
-- that claims the job starts its run's span as a child of it, so one trace shows a task from
-- its POST to its settlement across replicas. '' when the request had none (tracing off).
ALTER TABLE jobs ADD COLUMN traceparent TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN tracestate TEXT NOT NULL DEFAULT '';
