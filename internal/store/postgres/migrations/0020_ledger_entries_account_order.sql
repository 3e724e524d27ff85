-- A key's latest ledger entries (the operator console's key page, store KeyLedger) read
-- "WHERE account_id = ? ORDER BY id DESC LIMIT n": with (account_id) alone PostgreSQL sorts
-- every entry of a busy account. (account_id, id) serves the same lookups and the order; the
-- old index is a prefix of it and goes. SQLite's index already ends in the rowid (id).
CREATE INDEX ledger_entries_account_id ON ledger_entries (account_id, id);
DROP INDEX ledger_entries_account;
