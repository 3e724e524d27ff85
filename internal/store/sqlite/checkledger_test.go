package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/store"
)

// TestCheckLedgerFindsEachKindOfDamage shows that the invariant check every scenario ends
// with can fail: each case damages a healthy ledger behind the store's back (the triggers
// only protect the ledger tables from UPDATE and DELETE) and expects the check to name it.
func TestCheckLedgerFindsEachKindOfDamage(t *testing.T) {
	cases := []struct {
		name   string
		damage []string // SQL run directly on the file; ? is the key's available account
		want   []string
	}{
		{"balance edited without an entry", []string{`UPDATE accounts SET balance = balance + 1 WHERE id = ?`},
			[]string{"balance differs from its entries"}},
		{"one-legged transaction", []string{
			`INSERT INTO ledger_txns (id, kind, ref, note, created_at) VALUES ('txn_bad', 'credit', '', '', 0)`,
			`INSERT INTO ledger_entries (txn_id, account_id, amount) VALUES ('txn_bad', ?, 5)`,
			`UPDATE accounts SET balance = balance + 5 WHERE id = ?`},
			[]string{"transaction not summing to zero", "transaction with fewer than two entries"}},
		{"negative reserved balance", []string{`UPDATE accounts SET balance = -1 WHERE id = replace(?, ':available', ':reserved')`},
			[]string{"negative balance not allowed"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.db")
			db, err := Open(context.Background(), path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := t.Context()
			k := store.Key{ID: "key_1", TenantID: "acme", Name: "k", Prefix: "mg_x", Hash: []byte("h"), CreatedAt: time.Now()}
			avail := store.AccountID(k.ID, store.AccountAvailable)
			if !strings.HasSuffix(avail, ":available") {
				t.Fatalf("account id %q: the reserved-account case assumes the ':available' suffix", avail)
			}
			err = db.Transact(ctx, func(tx store.Tx) error {
				if err := tx.CreateKey(ctx, k, "USD"); err != nil {
					return err
				}
				return tx.Post(ctx, store.Txn{ID: "txn_ok", Kind: "credit", Entries: []store.Entry{
					{Account: store.FundingAccountID("USD"), Amount: -100}, {Account: avail, Amount: 100}}})
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := db.CheckLedger(ctx); err != nil {
				t.Fatalf("healthy ledger: %v", err)
			}
			raw, err := sql.Open("sqlite", "file:"+path)
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			for _, q := range c.damage {
				args := make([]any, strings.Count(q, "?"))
				for i := range args {
					args[i] = avail
				}
				if _, err := raw.Exec(q, args...); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			err = db.CheckLedger(ctx)
			if err == nil {
				t.Fatal("damaged ledger passed the check")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("check said %q, want it to mention %q", err, w)
				}
			}
		})
	}
}
