-- Webhooks (docs/webhooks.md): a tenant's endpoints, and one delivery per event and endpoint
-- with its log of attempts. The signing secret is kept as issued ("whsec_" + base64): every
-- delivery is signed with its bytes. prev_secret signs beside it until prev_until after a
-- rotation that kept it. event_types is a comma-separated list. failure_run counts deliveries
-- given up in a row. A delivery's event_id is the webhook-id header, the same on every
-- attempt; its payload is fixed when the event is written, in the transaction of the state
-- change it announces. Timestamps are Unix microseconds.
CREATE TABLE webhook_endpoints (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    url         TEXT NOT NULL,
    event_types TEXT NOT NULL,
    secret      TEXT NOT NULL,
    prev_secret TEXT NOT NULL DEFAULT '',
    prev_until  INTEGER NOT NULL DEFAULT 0,
    status      TEXT NOT NULL,
    failure_run INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_endpoints_tenant ON webhook_endpoints (tenant_id, id);
CREATE TABLE webhook_deliveries (
    id          TEXT PRIMARY KEY,
    event_id    TEXT NOT NULL,
    endpoint_id TEXT NOT NULL,
    tenant_id   TEXT NOT NULL,
    event_type  TEXT NOT NULL,
    payload     BLOB NOT NULL,
    status      TEXT NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at);
CREATE TABLE webhook_attempts (
    delivery_id TEXT NOT NULL,
    n           INTEGER NOT NULL,
    at          INTEGER NOT NULL,
    status_code INTEGER NOT NULL,
    latency_us  INTEGER NOT NULL,
    error       TEXT NOT NULL,
    PRIMARY KEY (delivery_id, n)
) STRICT;
-- The number of endpoints of each tenant: creating one bumps its row and is refused past the
-- tenant's bound, so concurrent creates serialise on the row and never pass it.
CREATE TABLE webhook_endpoint_counts (
    tenant_id TEXT PRIMARY KEY,
    n         INTEGER NOT NULL
) STRICT;
