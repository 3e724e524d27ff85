-- Key lifecycle (docs/admin.md, "Keys: expiry, rotation, caps"): an optional expiry, spend
-- caps per UTC day and month (0: none), and rotation: the hash the last rotation replaced
-- stays valid until prev_valid_until, so a key has at most two secrets at once.
ALTER TABLE api_keys ADD COLUMN expires_at INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN daily_cap INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN monthly_cap INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN prev_hash BLOB;
ALTER TABLE api_keys ADD COLUMN prev_valid_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE api_keys ADD COLUMN rotated_at INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX api_keys_prev_hash ON api_keys (prev_hash) WHERE prev_hash IS NOT NULL;

-- Spend counters (docs/billing.md, "Spend caps"): what a key or a tenant spent in one UTC
-- period, settled charges plus open reservations. Grown by one guarded statement in the
-- reservation's transaction, so two replicas cannot both pass a check made before either wrote.
CREATE TABLE spend_periods (
    scope   TEXT NOT NULL,
    owner   TEXT NOT NULL,
    period  TEXT NOT NULL,
    spent   INTEGER NOT NULL,
    -- the cap the last reservation was checked against (for operators reading the table)
    cap     INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (scope, owner, period)
) STRICT;

-- What each open reservation added to which counter, so its settlement adjusts the same
-- counters (in the period the reservation was made) and then drops these rows.
CREATE TABLE spend_holds (
    ref     TEXT NOT NULL,
    scope   TEXT NOT NULL,
    owner   TEXT NOT NULL,
    period  TEXT NOT NULL,
    amount  INTEGER NOT NULL,
    PRIMARY KEY (ref, scope, period)
) STRICT;
