-- Keys, accounts and the append-only double-entry ledger. Timestamps are Unix microseconds.
CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    prefix      TEXT NOT NULL,
    hash        BYTEA NOT NULL UNIQUE,
    unlimited   INTEGER NOT NULL DEFAULT 0,
    created_at  BIGINT NOT NULL,
    revoked_at  BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);

CREATE TABLE accounts (
    id              TEXT PRIMARY KEY,
    key_id          TEXT NOT NULL,
    kind            TEXT NOT NULL,
    currency        TEXT NOT NULL,
    balance         BIGINT NOT NULL,
    allow_negative  INTEGER NOT NULL,
    updated_at      BIGINT NOT NULL
);
CREATE INDEX accounts_key ON accounts (key_id);

CREATE TABLE ledger_txns (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    ref         TEXT NOT NULL,
    note        TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);
CREATE INDEX ledger_txns_ref ON ledger_txns (ref);

CREATE TABLE ledger_entries (
    id          BIGSERIAL PRIMARY KEY,
    txn_id      TEXT NOT NULL REFERENCES ledger_txns (id),
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    amount      BIGINT NOT NULL
);
CREATE INDEX ledger_entries_account ON ledger_entries (account_id);
CREATE INDEX ledger_entries_txn ON ledger_entries (txn_id);

-- The ledger is append-only: history is corrected by new transactions, never by edits.
CREATE FUNCTION ledger_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only', TG_TABLE_NAME;
END $$;
CREATE TRIGGER ledger_entries_append_only BEFORE UPDATE OR DELETE ON ledger_entries
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();
CREATE TRIGGER ledger_txns_append_only BEFORE UPDATE OR DELETE ON ledger_txns
    FOR EACH ROW EXECUTE FUNCTION ledger_append_only();

CREATE TABLE meta (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
);
