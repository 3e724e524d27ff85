-- Usage rollups (docs/billing.md, "Usage reports"): one row per UTC hour, tenant, key, alias,
-- route, upstream account, currency and outcome, summing the settlements made in that hour.
-- Every settlement adds to its row in its own transaction (billing.SettleUsage), so a report
-- reads hours, never tasks, and agrees with the ledger to the micro-unit. A task accepted on
-- one day and settled on the next counts in the hour of its settlement.
-- WITHOUT ROWID: the rows are stored in primary-key order, so a report's range of hours is one
-- contiguous read.
CREATE TABLE usage_rollups (
    hour        INTEGER NOT NULL, -- µs since the epoch of the UTC hour's start
    tenant_id   TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    alias       TEXT NOT NULL,
    route       TEXT NOT NULL,
    upstream    TEXT NOT NULL,
    currency    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    count       INTEGER NOT NULL,
    seconds_us  INTEGER NOT NULL,
    tokens      INTEGER NOT NULL,
    characters  INTEGER NOT NULL,
    reserved    INTEGER NOT NULL,
    charged     INTEGER NOT NULL,
    overage     INTEGER NOT NULL,
    refunded    INTEGER NOT NULL,
    PRIMARY KEY (hour, tenant_id, key_id, alias, route, upstream, currency, outcome)
) STRICT, WITHOUT ROWID;
-- The same sums per UTC day, kept by the same settlements: a report of whole days reads 24
-- times fewer rows (a 30-day report grouped by day and alias over 10 million tasks reads
-- about 11,000 of them; bench/usage). A report's partial days at either end of its range are
-- read from the hours.
CREATE TABLE usage_daily (
    day         INTEGER NOT NULL, -- µs since the epoch of the UTC day's start
    tenant_id   TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    alias       TEXT NOT NULL,
    route       TEXT NOT NULL,
    upstream    TEXT NOT NULL,
    currency    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    count       INTEGER NOT NULL,
    seconds_us  INTEGER NOT NULL,
    tokens      INTEGER NOT NULL,
    characters  INTEGER NOT NULL,
    reserved    INTEGER NOT NULL,
    charged     INTEGER NOT NULL,
    overage     INTEGER NOT NULL,
    refunded    INTEGER NOT NULL,
    PRIMARY KEY (day, tenant_id, key_id, alias, route, upstream, currency, outcome)
) STRICT, WITHOUT ROWID;
-- A key's own figures (GET /v1/billing/usage).
CREATE INDEX usage_rollups_key ON usage_rollups (key_id, hour);
CREATE INDEX usage_daily_key ON usage_daily (key_id, day);
-- backfill: what the settlements made before this migration add up to. The same statements are
-- `mediagen admin usage rebuild` (the driver reads them from this file with
-- sqldb.UsageBackfill), so an upgraded database and a rebuilt one agree; they compute what
-- billing.TaskUsage and billing.SpeechUsage compute at settlement. A column that is not valid
-- JSON (an empty result) counts as empty, as it does there.
INSERT INTO usage_rollups (hour, tenant_id, key_id, alias, route, upstream, currency, outcome,
    count, seconds_us, tokens, characters, reserved, charged, overage, refunded)
SELECT hour, tenant_id, key_id, model, route, upstream, currency, outcome,
    COUNT(*), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged),
    SUM(MAX(charged - reserved, 0)), SUM(reserved - MIN(charged, reserved))
FROM (
    SELECT finished_at - finished_at % 3600000000 AS hour, tenant_id, key_id, model, route,
        COALESCE(json_extract(CASE WHEN json_valid(request) THEN request END, '$.upstream'), '') AS upstream,
        COALESCE(json_extract(CASE WHEN json_valid(pricing) THEN pricing END, '$.currency'), '') AS currency,
        CASE status WHEN 'completed' THEN 'succeeded' ELSE status END AS outcome,
        CASE WHEN status = 'completed' THEN COALESCE(CAST(ROUND(json_extract(CASE WHEN json_valid(result) THEN result END, '$.duration') * 1000000) AS INTEGER), 0) ELSE 0 END AS seconds_us,
        CASE WHEN status = 'completed' THEN COALESCE(json_extract(CASE WHEN json_valid(result) THEN result END, '$.completion_tokens'), 0) ELSE 0 END AS tokens,
        0 AS characters, reserved, charged
    FROM tasks WHERE status IN ('completed', 'failed', 'expired')
    UNION ALL
    SELECT finished_at - finished_at % 3600000000, tenant_id, key_id, model, 'speech',
        COALESCE(json_extract(CASE WHEN json_valid(request) THEN request END, '$.upstream'), ''),
        COALESCE(json_extract(CASE WHEN json_valid(pricing) THEN pricing END, '$.currency'), ''),
        CASE status WHEN 'completed' THEN 'succeeded' ELSE status END,
        CASE WHEN status = 'completed' THEN COALESCE(json_extract(CASE WHEN json_valid(result) THEN result END, '$.duration_us'), 0) ELSE 0 END,
        0,
        COALESCE(json_extract(CASE WHEN json_valid(pricing) THEN pricing END, '$.characters'), 0), reserved, charged
    FROM speeches WHERE status IN ('completed', 'failed')
)
GROUP BY hour, tenant_id, key_id, model, route, upstream, currency, outcome;
INSERT INTO usage_daily (day, tenant_id, key_id, alias, route, upstream, currency, outcome,
    count, seconds_us, tokens, characters, reserved, charged, overage, refunded)
SELECT hour - hour % 86400000000, tenant_id, key_id, alias, route, upstream, currency, outcome,
    SUM(count), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged), SUM(overage), SUM(refunded)
FROM usage_rollups
GROUP BY hour - hour % 86400000000, tenant_id, key_id, alias, route, upstream, currency, outcome;
