-- The operator's cost (docs/billing.md, "Cost and margin"): each settled task and speech record
-- stores what it cost the operator, computed at settlement from the cost block of the upstream
-- account that ran it (billing.TaskCost, billing.SpeechCost): cost_micros in cost_currency,
-- NULL (and cost_currency '') when that cost is unknown, never 0 for unknown. cost_account is
-- the account it ran on. Records settled before this migration have no cost: unknown.
ALTER TABLE tasks ADD COLUMN cost_micros BIGINT;
ALTER TABLE tasks ADD COLUMN cost_currency TEXT NOT NULL DEFAULT '';
ALTER TABLE tasks ADD COLUMN cost_account TEXT NOT NULL DEFAULT '';
ALTER TABLE speeches ADD COLUMN cost_micros BIGINT;
ALTER TABLE speeches ADD COLUMN cost_currency TEXT NOT NULL DEFAULT '';
ALTER TABLE speeches ADD COLUMN cost_account TEXT NOT NULL DEFAULT '';
-- The usage rollups gain the cost: cost_currency is a dimension ('' for records whose cost is
-- unknown, so known and unknown never mix in one sum) and cost the sum of the known costs.
-- The rollups are derived data: they are rebuilt here from the records, with the same
-- statements as `mediagen admin usage rebuild` (the driver reads them from this file).
DROP TABLE usage_rollups;
DROP TABLE usage_daily;
CREATE TABLE usage_rollups (
    hour        BIGINT NOT NULL,
    tenant_id   TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    alias       TEXT NOT NULL,
    route       TEXT NOT NULL,
    upstream    TEXT NOT NULL,
    currency    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    cost_currency TEXT NOT NULL,
    count       BIGINT NOT NULL,
    seconds_us  BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,
    characters  BIGINT NOT NULL,
    reserved    BIGINT NOT NULL,
    charged     BIGINT NOT NULL,
    overage     BIGINT NOT NULL,
    refunded    BIGINT NOT NULL,
    cost        BIGINT NOT NULL,
    PRIMARY KEY (hour, tenant_id, key_id, alias, route, upstream, currency, outcome, cost_currency)
);
CREATE TABLE usage_daily (
    day         BIGINT NOT NULL,
    tenant_id   TEXT NOT NULL,
    key_id      TEXT NOT NULL,
    alias       TEXT NOT NULL,
    route       TEXT NOT NULL,
    upstream    TEXT NOT NULL,
    currency    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    cost_currency TEXT NOT NULL,
    count       BIGINT NOT NULL,
    seconds_us  BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,
    characters  BIGINT NOT NULL,
    reserved    BIGINT NOT NULL,
    charged     BIGINT NOT NULL,
    overage     BIGINT NOT NULL,
    refunded    BIGINT NOT NULL,
    cost        BIGINT NOT NULL,
    PRIMARY KEY (day, tenant_id, key_id, alias, route, upstream, currency, outcome, cost_currency)
);
CREATE INDEX usage_rollups_key ON usage_rollups (key_id, hour);
CREATE INDEX usage_daily_key ON usage_daily (key_id, day);
-- backfill: what the settlements made add up to (migration 0015's, with the cost). The same statements are
-- `mediagen admin usage rebuild` (the driver reads them from this file with
-- sqldb.UsageBackfill), so an upgraded database and a rebuilt one agree; they compute what
-- billing.TaskUsage and billing.SpeechUsage compute at settlement. A column that is not a JSON
-- object (an empty result) counts as empty, as it does there; the service writes these columns
-- with a JSON encoder, so one that looks like an object is one.
INSERT INTO usage_rollups (hour, tenant_id, key_id, alias, route, upstream, currency, outcome,
    count, seconds_us, tokens, characters, reserved, charged, overage, refunded, cost_currency, cost)
SELECT hour, tenant_id, key_id, model, route, upstream, currency, outcome,
    COUNT(*), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged),
    SUM(GREATEST(charged - reserved, 0)), SUM(reserved - LEAST(charged, reserved)), cost_currency, SUM(cost)
FROM (
    SELECT finished_at - finished_at % 3600000000 AS hour, tenant_id, key_id, model, route,
        COALESCE(NULLIF(((CASE WHEN state LIKE '{%}' THEN state::jsonb END)->>'account'), ''),
            ((CASE WHEN request LIKE '{%}' THEN request::jsonb END)->>'upstream'), '') AS upstream,
        COALESCE(((CASE WHEN pricing LIKE '{%}' THEN pricing::jsonb END)->>'currency'), '') AS currency,
        CASE status WHEN 'completed' THEN 'succeeded' ELSE status END AS outcome,
        CASE WHEN status = 'completed' THEN COALESCE(ROUND(((CASE WHEN result LIKE '{%}' THEN result::jsonb END)->>'duration')::numeric * 1000000)::bigint, 0) ELSE 0 END AS seconds_us,
        CASE WHEN status = 'completed' THEN COALESCE(((CASE WHEN result LIKE '{%}' THEN result::jsonb END)->>'completion_tokens')::bigint, 0) ELSE 0 END AS tokens,
        0::bigint AS characters, reserved, charged,
        CASE WHEN cost_micros IS NULL THEN '' ELSE cost_currency END AS cost_currency, COALESCE(cost_micros, 0) AS cost
    FROM tasks WHERE status IN ('completed', 'failed', 'expired')
    UNION ALL
    SELECT finished_at - finished_at % 3600000000, tenant_id, key_id, model, 'speech',
        COALESCE(((CASE WHEN request LIKE '{%}' THEN request::jsonb END)->>'upstream'), ''),
        COALESCE(((CASE WHEN pricing LIKE '{%}' THEN pricing::jsonb END)->>'currency'), ''),
        CASE status WHEN 'completed' THEN 'succeeded' ELSE status END,
        CASE WHEN status = 'completed' THEN COALESCE(((CASE WHEN result LIKE '{%}' THEN result::jsonb END)->>'duration_us')::bigint, 0) ELSE 0 END,
        0,
        COALESCE(((CASE WHEN pricing LIKE '{%}' THEN pricing::jsonb END)->>'characters')::bigint, 0), reserved, charged,
        CASE WHEN cost_micros IS NULL THEN '' ELSE cost_currency END, COALESCE(cost_micros, 0)
    FROM speeches WHERE status IN ('completed', 'failed')
) AS settled
GROUP BY hour, tenant_id, key_id, model, route, upstream, currency, outcome, cost_currency;
INSERT INTO usage_daily (day, tenant_id, key_id, alias, route, upstream, currency, outcome,
    count, seconds_us, tokens, characters, reserved, charged, overage, refunded, cost_currency, cost)
SELECT hour - hour % 86400000000, tenant_id, key_id, alias, route, upstream, currency, outcome,
    SUM(count), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged), SUM(overage), SUM(refunded),
    cost_currency, SUM(cost)
FROM usage_rollups
GROUP BY hour - hour % 86400000000, tenant_id, key_id, alias, route, upstream, currency, outcome, cost_currency;
