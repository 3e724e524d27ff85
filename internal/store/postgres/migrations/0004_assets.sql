-- The asset library: groups of the virtual and real-human libraries, assets (the service's own
-- copies of media fetched from a URL), and real-human verification sessions. Timestamps are
-- Unix microseconds.
CREATE TABLE asset_groups (
    id           TEXT PRIMARY KEY,
    tenant_id    TEXT NOT NULL,
    library      TEXT NOT NULL,              -- virtual | real_human
    name         TEXT NOT NULL,
    description  TEXT NOT NULL DEFAULT '',
    origin       TEXT NOT NULL,              -- tenant | catalog | operator | verification
    status       TEXT NOT NULL,              -- Active | Revoked
    created_at   BIGINT NOT NULL,
    updated_at   BIGINT NOT NULL
);
CREATE INDEX asset_groups_list ON asset_groups (tenant_id, library, created_at, id);

CREATE TABLE assets (
    id              TEXT PRIMARY KEY,
    tenant_id       TEXT NOT NULL,
    group_id        TEXT NOT NULL REFERENCES asset_groups (id),
    library         TEXT NOT NULL,
    name            TEXT NOT NULL,
    asset_type      TEXT NOT NULL,           -- Image | Video | Audio
    source_url      TEXT NOT NULL,
    status          TEXT NOT NULL,           -- Processing | Active | Failed
    failure_code    TEXT NOT NULL DEFAULT '',
    failure_reason  TEXT NOT NULL DEFAULT '',
    blob_key        TEXT NOT NULL DEFAULT '',
    content_type    TEXT NOT NULL DEFAULT '',
    size_bytes      BIGINT NOT NULL DEFAULT 0,
    duration        DOUBLE PRECISION NOT NULL DEFAULT 0,
    width           BIGINT NOT NULL DEFAULT 0,
    height          BIGINT NOT NULL DEFAULT 0,
    attempts        BIGINT NOT NULL DEFAULT 0,
    lease_until     BIGINT NOT NULL DEFAULT 0,
    lease_token     TEXT NOT NULL DEFAULT '',
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX assets_list ON assets (tenant_id, library, created_at, id);
CREATE INDEX assets_group ON assets (group_id);
-- Processing work: only unfinished assets are indexed.
CREATE INDEX assets_processing ON assets (lease_until) WHERE status = 'Processing';

CREATE TABLE verify_sessions (
    id                    TEXT PRIMARY KEY,
    token_hash            BYTEA NOT NULL UNIQUE,
    tenant_id             TEXT NOT NULL,
    key_id                TEXT NOT NULL,
    callback_url          TEXT NOT NULL DEFAULT '',
    status                TEXT NOT NULL,     -- pending | passed | declined
    group_id              TEXT NOT NULL DEFAULT '',
    created_at            BIGINT NOT NULL,
    expires_at            BIGINT NOT NULL,
    started_at            BIGINT NOT NULL DEFAULT 0,
    finished_at           BIGINT NOT NULL DEFAULT 0,
    redeemed_at           BIGINT NOT NULL DEFAULT 0,
    callback_body         TEXT NOT NULL DEFAULT '',
    callback_state        TEXT NOT NULL DEFAULT '',  -- '' | pending | delivered | failed
    callback_attempts     BIGINT NOT NULL DEFAULT 0,
    callback_next_at      BIGINT NOT NULL DEFAULT 0,
    callback_lease_until  BIGINT NOT NULL DEFAULT 0,
    callback_lease_token  TEXT NOT NULL DEFAULT ''
);
CREATE INDEX verify_sessions_callbacks ON verify_sessions (callback_next_at) WHERE callback_state = 'pending';
