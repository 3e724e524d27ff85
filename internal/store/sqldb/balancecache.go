package sqldb

import (
	"strings"
	"time"

	"mediagen/internal/store"
)

// The balance cache serves GET /v1/billing/balance. Every ledger post made through this DB
// forgets the key's entry around its commit (readCache's bracket), so a caller never sees its
// balance from before a charge this process made. Posts made elsewhere — another replica, or
// `mediagen admin credit` writing the SQLite file from its own process — are not heard of, so
// an entry lives at most ttl: that is the staleness bound for them.

// EnableBalanceCache keeps up to entries balances for at most ttl each. Call it before the DB
// is used; entries <= 0 or ttl <= 0 leaves it off.
func (db *DB) EnableBalanceCache(entries int, ttl time.Duration) {
	if entries > 0 && ttl > 0 {
		db.balances = newReadCache(entries, ttl, func(a, b store.Balance) bool { return a.UpdatedAt.Before(b.UpdatedAt) })
	}
}

// CachedBalances reports how many balances the cache holds (0 without a cache).
func (db *DB) CachedBalances() int {
	if db.balances == nil {
		return 0
	}
	return db.balances.len()
}

// touchKey records that the transaction moved key keyID's money; the balance cache forgets
// it after the commit.
func (t *Tx) touchKey(keyID string) {
	if t.db.balances != nil {
		t.touchedKeys = append(t.touchedKeys, keyID)
	}
}

// accountKey is the key an account id belongs to ("" for accounts of no key, such as the
// funding accounts), from store.AccountID's form.
func accountKey(account string) string {
	i := strings.LastIndexByte(account, ':')
	if i <= 0 {
		return ""
	}
	switch store.AccountKind(account[i+1:]) {
	case store.AccountAvailable, store.AccountReserved, store.AccountSpent:
		return account[:i]
	}
	return ""
}
