-- Usage rollups (docs/billing.md, "Usage reports"): one row per UTC hour, tenant, key, alias,
-- route, upstream account, currency and outcome, summing the settlements made in that hour.
-- Every settlement adds to its row in its own transaction (billing.SettleUsage), so a report
-- reads hours, never tasks, and agrees with the ledger to the micro-unit. A task accepted on
-- one day and settled on the next counts in the hour of its settlement.
CREATE TABLE usage_rollups (
    hour        BIGINT NOT NULL, -- µs since the epoch of the UTC hour's start
    tenant_id   TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    alias       TEXT NOT NULL,
    route       TEXT NOT NULL,
    upstream    TEXT NOT NULL,
    currency    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    count       BIGINT NOT NULL,
    seconds_us  BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,
    characters  BIGINT NOT NULL,
    reserved    BIGINT NOT NULL,
    charged     BIGINT NOT NULL,
    overage     BIGINT NOT NULL,
    refunded    BIGINT NOT NULL,
    PRIMARY KEY (hour, tenant_id, key_id, alias, route, upstream, currency, outcome)
);
-- The same sums per UTC day, kept by the same settlements: a report of whole days reads 24
-- times fewer rows (a 30-day report grouped by day and alias over 10 million tasks reads
-- about 11,000 of them; bench/usage). A report's partial days at either end of its range are
-- read from the hours.
CREATE TABLE usage_daily (
    day         BIGINT NOT NULL, -- µs since the epoch of the UTC day's start
    tenant_id   TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    alias       TEXT NOT NULL,
    route       TEXT NOT NULL,
    upstream    TEXT NOT NULL,
    currency    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    count       BIGINT NOT NULL,
    seconds_us  BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,
    characters  BIGINT NOT NULL,
    reserved    BIGINT NOT NULL,
    charged     BIGINT NOT NULL,
    overage     BIGINT NOT NULL,
    refunded    BIGINT NOT NULL,
    PRIMARY KEY (day, tenant_id, key_id, alias, route, upstream, currency, outcome)
);
-- A key's own figures (GET /v1/billing/usage).
CREATE INDEX usage_rollups_key ON usage_rollups (key_id, hour);
CREATE INDEX usage_daily_key ON usage_daily (key_id, day);
-- backfill: what the settlements made before this migration add up to. The same statements are
-- `mediagen admin usage rebuild` (the driver reads them from this file with
-- sqldb.UsageBackfill), so an upgraded database and a rebuilt one agree; they compute what
-- billing.TaskUsage and billing.SpeechUsage compute at settlement. A column that is not a JSON
-- object (an empty result) counts as empty, as it does there; the service writes these columns
-- with a JSON encoder, so one that looks like an object is one.
INSERT INTO usage_rollups (hour, tenant_id, key_id, alias, route, upstream, currency, outcome,
    count, seconds_us, tokens, characters, reserved, charged, overage, refunded)
SELECT hour, tenant_id, key_id, model, route, upstream, currency, outcome,
    COUNT(*), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged),
    SUM(GREATEST(charged - reserved, 0)), SUM(reserved - LEAST(charged, reserved))
FROM (
    SELECT finished_at - finished_at % 3600000000 AS hour, tenant_id, key_id, model, route,
        COALESCE(((CASE WHEN request LIKE '{%}' THEN request::jsonb END)->>'upstream'), '') AS upstream,
        COALESCE(((CASE WHEN pricing LIKE '{%}' THEN pricing::jsonb END)->>'currency'), '') AS currency,
        CASE status WHEN 'completed' THEN 'succeeded' ELSE status END AS outcome,
        CASE WHEN status = 'completed' THEN COALESCE(ROUND(((CASE WHEN result LIKE '{%}' THEN result::jsonb END)->>'duration')::numeric * 1000000)::bigint, 0) ELSE 0 END AS seconds_us,
        CASE WHEN status = 'completed' THEN COALESCE(((CASE WHEN result LIKE '{%}' THEN result::jsonb END)->>'completion_tokens')::bigint, 0) ELSE 0 END AS tokens,
        0::bigint AS characters, reserved, charged
    FROM tasks WHERE status IN ('completed', 'failed', 'expired')
    UNION ALL
    SELECT finished_at - finished_at % 3600000000, tenant_id, key_id, model, 'speech',
        COALESCE(((CASE WHEN request LIKE '{%}' THEN request::jsonb END)->>'upstream'), ''),
        COALESCE(((CASE WHEN pricing LIKE '{%}' THEN pricing::jsonb END)->>'currency'), ''),
        CASE status WHEN 'completed' THEN 'succeeded' ELSE status END,
        CASE WHEN status = 'completed' THEN COALESCE(((CASE WHEN result LIKE '{%}' THEN result::jsonb END)->>'duration_us')::bigint, 0) ELSE 0 END,
        0,
        COALESCE(((CASE WHEN pricing LIKE '{%}' THEN pricing::jsonb END)->>'characters')::bigint, 0), reserved, charged
    FROM speeches WHERE status IN ('completed', 'failed')
) AS settled
GROUP BY hour, tenant_id, key_id, model, route, upstream, currency, outcome;
INSERT INTO usage_daily (day, tenant_id, key_id, alias, route, upstream, currency, outcome,
    count, seconds_us, tokens, characters, reserved, charged, overage, refunded)
SELECT hour - hour % 86400000000, tenant_id, key_id, alias, route, upstream, currency, outcome,
    SUM(count), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged), SUM(overage), SUM(refunded)
FROM usage_rollups
GROUP BY hour - hour % 86400000000, tenant_id, key_id, alias, route, upstream, currency, outcome;
