-- The two foreign keys of ledger_entries cost a query each per entry (four per create, a sixth
-- of the time a create holds its tenant's counter row) and can never fire: Post is the only
-- writer of entries, and in the same transaction it inserts their ledger transaction and
-- updates every account they name (an account that is missing fails the Post first); entries
-- and transactions are append-only (the triggers of 0001) and accounts are never deleted.
-- `mediagen admin ledger check` (CheckLedger) reports any entry whose transaction or account
-- is missing, so the rule stays checked, at audit time instead of per insert.
ALTER TABLE ledger_entries DROP CONSTRAINT IF EXISTS ledger_entries_txn_id_fkey;
ALTER TABLE ledger_entries DROP CONSTRAINT IF EXISTS ledger_entries_account_id_fkey;
