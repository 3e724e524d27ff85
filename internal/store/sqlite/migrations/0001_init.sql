-- Keys, accounts and the append-only double-entry ledger. Timestamps are Unix microseconds.
CREATE TABLE api_keys (
    id          TEXT PRIMARY KEY,
    tenant_id   TEXT NOT NULL,
    name        TEXT NOT NULL,
    prefix      TEXT NOT NULL,
    hash        BLOB NOT NULL UNIQUE,
    unlimited   INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    revoked_at  INTEGER NOT NULL DEFAULT 0
) STRICT;
CREATE INDEX api_keys_tenant ON api_keys (tenant_id, created_at);

CREATE TABLE accounts (
    id              TEXT PRIMARY KEY,
    key_id          TEXT NOT NULL,
    kind            TEXT NOT NULL,
    currency        TEXT NOT NULL,
    balance         INTEGER NOT NULL,
    allow_negative  INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL
) STRICT;
CREATE INDEX accounts_key ON accounts (key_id);

CREATE TABLE ledger_txns (
    id          TEXT PRIMARY KEY,
    kind        TEXT NOT NULL,
    ref         TEXT NOT NULL,
    note        TEXT NOT NULL,
    created_at  INTEGER NOT NULL
) STRICT;
CREATE INDEX ledger_txns_ref ON ledger_txns (ref);

CREATE TABLE ledger_entries (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    txn_id      TEXT NOT NULL REFERENCES ledger_txns (id),
    account_id  TEXT NOT NULL REFERENCES accounts (id),
    amount      INTEGER NOT NULL
) STRICT;
CREATE INDEX ledger_entries_account ON ledger_entries (account_id);
CREATE INDEX ledger_entries_txn ON ledger_entries (txn_id);

-- The ledger is append-only: history is corrected by new transactions, never by edits.
CREATE TRIGGER ledger_entries_no_update BEFORE UPDATE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'ledger_entries is append-only'); END;
CREATE TRIGGER ledger_entries_no_delete BEFORE DELETE ON ledger_entries
BEGIN SELECT RAISE(ABORT, 'ledger_entries is append-only'); END;
CREATE TRIGGER ledger_txns_no_update BEFORE UPDATE ON ledger_txns
BEGIN SELECT RAISE(ABORT, 'ledger_txns is append-only'); END;
CREATE TRIGGER ledger_txns_no_delete BEFORE DELETE ON ledger_txns
BEGIN SELECT RAISE(ABORT, 'ledger_txns is append-only'); END;

CREATE TABLE meta (
    name   TEXT PRIMARY KEY,
    value  TEXT NOT NULL
) STRICT;
