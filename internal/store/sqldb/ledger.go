package sqldb

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

// errRefused: an account's guarded update changed no row (funds, or no such account).
var errRefused = errors.New("account update refused")

// postUpdate is Post's guarded update of one account (args: amount, time, account, amount,
// overdraft, overdraft, amount): the funds check, the ceiling check and the move are one
// statement. The ceiling (store.CeilingOf) holds for every posting but a settlement's
// (overdraft): with every amount at most money.MaxAmount (validTxn) and every balance within
// its ceiling, balance + amount never leaves int64, so the database can always compute the
// guard and refuse, where an unchecked sum would fail every later statement on the row
// (PostgreSQL: bigint out of range; SQLite: a REAL in a STRICT column).
var postUpdate = `UPDATE accounts SET balance = balance + ?, updated_at = ?
	WHERE id = ? AND (allow_negative <> 0 OR balance + ? >= 0 OR (? <> 0 AND kind = 'available'))
	AND (? <> 0 OR ABS(balance + ?) <= ` + ceilingSQL("kind") + `)`

// ceilingSQL is the ceiling of an account of kind col as an SQL expression (store.CeilingOf).
func ceilingSQL(col string) string {
	return fmt.Sprintf("CASE WHEN %s = '%s' THEN %d ELSE %d END", col, store.AccountFunding,
		int64(store.CeilingOf(store.AccountFunding)), int64(store.CeilingOf(store.AccountAvailable)))
}

// postQueued is postUpdate as queued in a shared batch: the server refuses it
// (Piper.RequireRows) unless the guard passed and the account has the first account's currency.
var postQueued = postUpdate + `
	AND currency = (SELECT currency FROM accounts WHERE id = ?)
	RETURNING 1`

// Post appends a balanced transaction. Balances move with a guarded UPDATE per account, so the
// funds check and the debit are one atomic statement: two concurrent reservations cannot both
// pass a check made before either wrote.
func (t *Tx) Post(ctx context.Context, txn store.Txn) error {
	if err := validTxn(txn); err != nil {
		return err
	}
	created := micros(txn.CreatedAt)
	if created == 0 {
		created = micros(t.db.now())
	}
	// Every statement is queued in an optimistic shared batch (Tx.later): a refused guard
	// fails the batch, and its second run, with savepoints, answers here with the reason.
	if err := t.insert(ctx, `INSERT INTO ledger_txns (id, kind, ref, note, created_at)`, "", 5,
		[]any{txn.ID, txn.Kind, txn.Ref, txn.Note, created}); err != nil {
		if t.db.d.IsUniqueViolation(err) {
			return fmt.Errorf("post %s: %w", txn.ID, store.ErrConflict)
		}
		return fmt.Errorf("post %s: %w", txn.ID, err)
	}
	// Update accounts in a fixed order so concurrent transactions touching the same accounts
	// lock them in the same order and cannot deadlock on PostgreSQL.
	entries := append([]store.Entry(nil), txn.Entries...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Account < entries[j].Account })
	if k := oneKey(entries); t.merge != nil && k != "" && !txn.AllowOverdraft {
		// The accounts of one key share its currency; the moves wait for the commit,
		// merged with the batch's others (merge.go), and a refusal is the server's.
		t.touchKey(k)
		for _, e := range entries {
			t.merge.move(e.Account, int64(e.Amount), created)
		}
		return t.insertEntries(ctx, txn.ID, entries)
	}
	if t.merge != nil {
		// Accounts are locked after the in-flight counters (inflight.go): the batch's merged
		// increments go ahead of these updates.
		t.merge.queueCounts(t.pipe, t.db.q)
	}
	var currency string
	for _, e := range entries {
		if k := accountKey(e.Account); k != "" {
			t.touchKey(k)
		}
		if t.merge != nil {
			// Queued, the guard is the server's: a refusal aborts the batch, which runs again
			// with savepoints and answers below with the reason (pipe.go). The currency is
			// guarded against the first account's, as the check below does.
			t.pipe.QueueRead(t.db.group.postGuarded, []any{int64(e.Amount), created, e.Account, int64(e.Amount), boolInt(txn.AllowOverdraft),
				boolInt(txn.AllowOverdraft), int64(e.Amount), entries[0].Account, int64(1)}, nil)
			continue
		}
		err := t.later(ctx, postUpdate+` RETURNING currency`,
			[]any{int64(e.Amount), created, e.Account, int64(e.Amount), boolInt(txn.AllowOverdraft),
				boolInt(txn.AllowOverdraft), int64(e.Amount)},
			func(rows Rows) error {
				if !rows.Next() {
					if err := rows.Err(); err != nil {
						return err
					}
					return errRefused
				}
				var cur string
				if err := rows.Scan(&cur); err != nil {
					return err
				}
				if currency == "" {
					currency = cur
				} else if cur != currency {
					return fmt.Errorf("accounts in %s and %s: %w", currency, cur, store.ErrUnbalanced)
				}
				return nil
			})
		if errors.Is(err, errRefused) {
			return t.refusal(ctx, txn, e)
		}
		if err != nil {
			return fmt.Errorf("post %s: account %s: %w", txn.ID, e.Account, err)
		}
	}
	return t.insertEntries(ctx, txn.ID, entries)
}

// refusal says why the guarded update of e's account refused: no such account, the ceiling
// (a *store.CeilingError), or funds. The statement changed nothing, so the balance read now is
// the one the guard saw, unless a concurrent posting moved it since (then the answer may name
// the other reason; either way nothing was written).
func (t *Tx) refusal(ctx context.Context, txn store.Txn, e store.Entry) error {
	var bal int64
	var kind string
	err := t.queryRow(ctx, `SELECT balance, kind FROM accounts WHERE id = ?`, e.Account).Scan(&bal, &kind)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("post %s: account %s: %w", txn.ID, e.Account, store.ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("post %s: account %s: %w", txn.ID, e.Account, err)
	}
	if !txn.AllowOverdraft {
		c := store.CeilingOf(store.AccountKind(kind))
		if after, ok := money.Add(money.Micros(bal), e.Amount); !ok || after > c || after < -c {
			return fmt.Errorf("post %s: %w", txn.ID, &store.CeilingError{Account: e.Account, Kind: store.AccountKind(kind),
				Balance: money.Micros(bal), Amount: e.Amount, Ceiling: c})
		}
	}
	return fmt.Errorf("post %s: account %s: %w", txn.ID, e.Account, store.ErrInsufficientFunds)
}

// insertEntries inserts a transaction's legs, all in one statement: one round trip fewer per
// leg on PostgreSQL.
func (t *Tx) insertEntries(ctx context.Context, txnID string, entries []store.Entry) error {
	args := make([]any, 0, 3*len(entries))
	for _, e := range entries {
		args = append(args, txnID, e.Account, int64(e.Amount))
	}
	if err := t.insert(ctx, `INSERT INTO ledger_entries (txn_id, account_id, amount)`, "", 3, args); err != nil {
		return fmt.Errorf("post %s entries: %w", txnID, err)
	}
	return nil
}

// oneKey is the key every entry's account belongs to, or "" if they are not all one key's.
func oneKey(entries []store.Entry) string {
	k := accountKey(entries[0].Account)
	for _, e := range entries[1:] {
		if accountKey(e.Account) != k {
			return ""
		}
	}
	return k
}

func validTxn(txn store.Txn) error {
	if txn.ID == "" || txn.Kind == "" {
		return fmt.Errorf("post: transaction needs an id and a kind: %w", store.ErrUnbalanced)
	}
	if len(txn.Entries) < 2 {
		return fmt.Errorf("post %s: fewer than two entries: %w", txn.ID, store.ErrUnbalanced)
	}
	var sum money.Micros
	seen := map[string]bool{}
	for _, e := range txn.Entries {
		if seen[e.Account] {
			return fmt.Errorf("post %s: account %s appears twice: %w", txn.ID, e.Account, store.ErrUnbalanced)
		}
		seen[e.Account] = true
		// No amount above the ceiling of one amount reaches the database: with every balance
		// within its ceiling, the guard's sum then stays inside int64 (postUpdate).
		if e.Amount > money.MaxAmount || e.Amount < -money.MaxAmount {
			return fmt.Errorf("post %s: %w", txn.ID, &store.CeilingError{Account: e.Account, Amount: e.Amount, Ceiling: money.MaxAmount})
		}
		var ok bool
		if sum, ok = money.Add(sum, e.Amount); !ok {
			return fmt.Errorf("post %s: entries overflow: %w", txn.ID, store.ErrUnbalanced)
		}
	}
	if sum != 0 {
		return fmt.Errorf("post %s: entries sum to %s: %w", txn.ID, sum, store.ErrUnbalanced)
	}
	return nil
}

// Balance reads a key's money view in one query, or from the balance cache (balancecache.go).
func (db *DB) Balance(ctx context.Context, keyID string) (store.Balance, error) {
	if db.balances == nil {
		return db.readBalance(ctx, keyID)
	}
	b, tok, ok := db.balances.get(keyID)
	if ok {
		return b, nil
	}
	b, err := db.readBalance(ctx, keyID)
	if err == nil {
		db.balances.put(keyID, b, tok)
	}
	return b, err
}

func (db *DB) readBalance(ctx context.Context, keyID string) (store.Balance, error) {
	rows, err := db.readRows(ctx, `SELECT kind, currency, balance, allow_negative, updated_at
		FROM accounts WHERE key_id = ?`, keyID)
	if err != nil {
		return store.Balance{}, fmt.Errorf("balance %s: %w", keyID, err)
	}
	defer rows.Close()
	b := store.Balance{KeyID: keyID}
	found := false
	var updated int64
	for rows.Next() {
		var kind string
		var bal, upd int64
		var neg int
		if err := rows.Scan(&kind, &b.Currency, &bal, &neg, &upd); err != nil {
			return store.Balance{}, fmt.Errorf("balance %s: %w", keyID, err)
		}
		found = true
		updated = max(updated, upd)
		switch store.AccountKind(kind) {
		case store.AccountAvailable:
			b.Available, b.Unlimited = money.Micros(bal), neg != 0
		case store.AccountReserved:
			b.Reserved = money.Micros(bal)
		case store.AccountSpent:
			b.Used = money.Micros(bal)
		}
	}
	if err := rows.Err(); err != nil {
		return store.Balance{}, fmt.Errorf("balance %s: %w", keyID, err)
	}
	if !found {
		return store.Balance{}, fmt.Errorf("balance %s: %w", keyID, store.ErrNotFound)
	}
	b.UpdatedAt = fromMicros(updated)
	return b, nil
}

// Entries lists an account's ledger entries in posting order.
func (db *DB) Entries(ctx context.Context, account string) ([]store.Entry, error) {
	rows, err := db.read.QueryContext(ctx, db.q(`SELECT account_id, amount FROM ledger_entries WHERE account_id = ? ORDER BY id`), account)
	if err != nil {
		return nil, fmt.Errorf("entries %s: %w", account, err)
	}
	defer rows.Close()
	var out []store.Entry
	for rows.Next() {
		var e store.Entry
		var amt int64
		if err := rows.Scan(&e.Account, &amt); err != nil {
			return nil, fmt.Errorf("entries %s: %w", account, err)
		}
		e.Amount = money.Micros(amt)
		out = append(out, e)
	}
	return out, rows.Err()
}

// Overage sums the key's overage transactions (the spent leg of each).
func (db *DB) Overage(ctx context.Context, keyID string) (money.Micros, error) {
	var sum int64
	err := db.read.QueryRowContext(ctx, db.q(`SELECT COALESCE(SUM(e.amount), 0) FROM ledger_entries e
		JOIN ledger_txns t ON t.id = e.txn_id
		WHERE e.account_id = ? AND t.kind = ?`), store.AccountID(keyID, store.AccountSpent), store.TxnKindOverage).Scan(&sum)
	if err != nil {
		return 0, fmt.Errorf("overage %s: %w", keyID, err)
	}
	return money.Micros(sum), nil
}

// CheckLedger verifies the invariants with three aggregate queries.
func (db *DB) CheckLedger(ctx context.Context) error {
	var problems []string
	collect := func(what, query string) error {
		rows, err := db.read.QueryContext(ctx, query)
		if err != nil {
			return fmt.Errorf("check ledger (%s): %w", what, err)
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var a, b int64
			if err := rows.Scan(&id, &a, &b); err != nil {
				return fmt.Errorf("check ledger (%s): %w", what, err)
			}
			problems = append(problems, fmt.Sprintf("%s %s: %d vs %d", what, id, a, b))
		}
		return rows.Err()
	}
	err := errors.Join(
		collect("transaction not summing to zero", `SELECT txn_id, SUM(amount), 0 FROM ledger_entries
			GROUP BY txn_id HAVING SUM(amount) <> 0`),
		collect("balance differs from its entries", `SELECT a.id, a.balance, COALESCE(SUM(e.amount), 0)
			FROM accounts a LEFT JOIN ledger_entries e ON e.account_id = a.id
			GROUP BY a.id, a.balance HAVING a.balance <> COALESCE(SUM(e.amount), 0)`),
		collect("negative balance not allowed", `SELECT id, balance, 0 FROM accounts
			WHERE allow_negative = 0 AND kind <> 'available' AND balance < 0`),
		// PostgreSQL keeps no foreign keys on entries (postgres migration 0009): this is
		// where an entry without its transaction or account would show.
		collect("entry without its transaction", `SELECT e.txn_id, e.id, 0 FROM ledger_entries e
			LEFT JOIN ledger_txns t ON t.id = e.txn_id WHERE t.id IS NULL`),
		collect("entry without its account", `SELECT e.account_id, e.id, 0 FROM ledger_entries e
			LEFT JOIN accounts a ON a.id = e.account_id WHERE a.id IS NULL`),
		collect("transaction with fewer than two entries", `SELECT t.id, COUNT(e.id), 2 FROM ledger_txns t
			LEFT JOIN ledger_entries e ON e.txn_id = t.id GROUP BY t.id HAVING COUNT(e.id) < 2`),
	)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("ledger invariants violated: %s", strings.Join(problems, "; "))
	}
	return nil
}
