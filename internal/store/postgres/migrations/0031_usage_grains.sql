-- Usage rollups at the grain each report asks for (docs/billing.md, "Usage reports", issue 47).
-- usage_rollups and usage_daily are per key and alias: at an operator's cardinality (10,000
-- keys × 50 aliases) they hardly compress (a row per settled task), so operator-wide reports
-- read as many rows as tasks. Two coarser grains, each by hour and by day, kept by the same
-- settlement transaction (sqldb.Tx.AddUsage) and the same rebuild:
--   usage_alias_*   no tenant or key: alias, route, upstream account (the operator-wide
--                   reports by day, hour, alias, route, upstream; the console overview).
--                   Every settlement of an alias adds to one row, so the rows are split in
--                   slots (slot = a hash of the key, sqldb.usageSlots of them), summed at
--                   read: concurrent settlements of different keys rarely wait on one row.
--   usage_tenant_*  per tenant, no key or alias (reports by tenant; a tenant's totals).
-- The rebuild writes slot 0. Both are derived from usage_rollups, so they are backfilled here
-- from it (exactly the sums of its rows).
CREATE TABLE usage_alias_hourly (
    hour        BIGINT NOT NULL,
    alias       TEXT NOT NULL,
    route       TEXT NOT NULL,
    upstream    TEXT NOT NULL,
    currency    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    cost_currency TEXT NOT NULL,
    slot        BIGINT NOT NULL,
    count       BIGINT NOT NULL,
    seconds_us  BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,
    characters  BIGINT NOT NULL,
    reserved    BIGINT NOT NULL,
    charged     BIGINT NOT NULL,
    overage     BIGINT NOT NULL,
    refunded    BIGINT NOT NULL,
    cost        BIGINT NOT NULL,
    PRIMARY KEY (hour, alias, route, upstream, currency, outcome, cost_currency, slot)
);
CREATE TABLE usage_alias_daily (
    day         BIGINT NOT NULL,
    alias       TEXT NOT NULL,
    route       TEXT NOT NULL,
    upstream    TEXT NOT NULL,
    currency    TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    cost_currency TEXT NOT NULL,
    slot        BIGINT NOT NULL,
    count       BIGINT NOT NULL,
    seconds_us  BIGINT NOT NULL,
    tokens      BIGINT NOT NULL,
    characters  BIGINT NOT NULL,
    reserved    BIGINT NOT NULL,
    charged     BIGINT NOT NULL,
    overage     BIGINT NOT NULL,
    refunded    BIGINT NOT NULL,
    cost        BIGINT NOT NULL,
    PRIMARY KEY (day, alias, route, upstream, currency, outcome, cost_currency, slot)
);
CREATE TABLE usage_tenant_hourly (
    hour        BIGINT NOT NULL,
    tenant_id   TEXT NOT NULL,
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
    PRIMARY KEY (hour, tenant_id, currency, outcome, cost_currency)
);
CREATE TABLE usage_tenant_daily (
    day         BIGINT NOT NULL,
    tenant_id   TEXT NOT NULL,
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
    PRIMARY KEY (day, tenant_id, currency, outcome, cost_currency)
);
-- A tenant's filter on the per-key rows (GET /admin/v1/usage?tenant=…&group_by=alias) reads
-- that tenant's rows, not every tenant's of the range.
CREATE INDEX usage_rollups_tenant ON usage_rollups (tenant_id, hour);
CREATE INDEX usage_daily_tenant ON usage_daily (tenant_id, day);
CREATE INDEX usage_tenant_hourly_tenant ON usage_tenant_hourly (tenant_id, hour);
CREATE INDEX usage_tenant_daily_tenant ON usage_tenant_daily (tenant_id, day);
INSERT INTO usage_alias_hourly (hour, alias, route, upstream, currency, outcome, cost_currency, slot, count, seconds_us, tokens, characters, reserved, charged, overage, refunded, cost)
SELECT hour, alias, route, upstream, currency, outcome, cost_currency, 0, SUM(count), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged), SUM(overage), SUM(refunded), SUM(cost)
FROM usage_rollups
GROUP BY hour, alias, route, upstream, currency, outcome, cost_currency;
INSERT INTO usage_alias_daily (day, alias, route, upstream, currency, outcome, cost_currency, slot, count, seconds_us, tokens, characters, reserved, charged, overage, refunded, cost)
SELECT day, alias, route, upstream, currency, outcome, cost_currency, 0, SUM(count), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged), SUM(overage), SUM(refunded), SUM(cost)
FROM usage_daily
GROUP BY day, alias, route, upstream, currency, outcome, cost_currency;
INSERT INTO usage_tenant_hourly (hour, tenant_id, currency, outcome, cost_currency, count, seconds_us, tokens, characters, reserved, charged, overage, refunded, cost)
SELECT hour, tenant_id, currency, outcome, cost_currency, SUM(count), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged), SUM(overage), SUM(refunded), SUM(cost)
FROM usage_rollups
GROUP BY hour, tenant_id, currency, outcome, cost_currency;
INSERT INTO usage_tenant_daily (day, tenant_id, currency, outcome, cost_currency, count, seconds_us, tokens, characters, reserved, charged, overage, refunded, cost)
SELECT day, tenant_id, currency, outcome, cost_currency, SUM(count), SUM(seconds_us), SUM(tokens), SUM(characters), SUM(reserved), SUM(charged), SUM(overage), SUM(refunded), SUM(cost)
FROM usage_daily
GROUP BY day, tenant_id, currency, outcome, cost_currency;
