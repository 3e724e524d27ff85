package sqldb

import (
	"context"
	"fmt"

	"mediagen/internal/store"
)

// The in_flight counters (migration 0006) move with the rows they count. Rows are always
// locked tenant first, then key, in creates and terminal transitions alike, and before the
// key's accounts, so two transactions on PostgreSQL never wait for each other in opposite
// orders. Tenant first is what lets a shared commit (group.go) carry creates of several keys
// of a tenant: its first statement takes the tenant's row, so a batch holds nothing another
// batch of the tenant is waiting for.

// addInFlight counts one more unfinished record of the key and of the tenant. The upsert
// locks both counter rows until the transaction ends, and returns the new counts, which the
// transaction keeps: the in-flight check that follows on the hot create path then costs no
// round trip while the rows are locked. In an optimistic shared batch the increments are
// merged with the other members' (merge.go) and sent with the commit, or when a member reads
// the counts: a create with no in-flight limit never waits for them.
func (t *Tx) addInFlight(ctx context.Context, kind, keyID, tenantID string) error {
	t.counted = countedInFlight{}
	if t.merge != nil {
		t.merge.count(kind+"_tenant", tenantID, 1)
		t.merge.count(kind+"_key", keyID, 1)
		return nil
	}
	q := `INSERT INTO in_flight (kind, owner, n) VALUES (?, ?, 1), (?, ?, 1)
		ON CONFLICT (kind, owner) DO UPDATE SET n = in_flight.n + 1
		RETURNING kind, n`
	args := []any{kind + "_tenant", tenantID, kind + "_key", keyID}
	err := t.query(ctx, q, args, func(rows Rows) error {
		f := countedInFlight{kind: kind, keyID: keyID, tenantID: tenantID}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return err
			}
			if k == kind+"_key" {
				f.n.Key = n
			} else {
				f.n.Tenant = n
			}
		}
		t.counted = f
		return nil
	})
	if err != nil {
		return fmt.Errorf("count %s in flight: %w", kind, err)
	}
	return nil
}

// countedInFlight is what the transaction's last addInFlight counted.
type countedInFlight struct {
	kind, keyID, tenantID string
	n                     store.InFlight
}

// dropInFlight counts one fewer unfinished record of the key and of the tenant the record
// names. A counter never goes below zero: a drift could only loosen a limit.
func (t *Tx) dropInFlight(ctx context.Context, kind, table, id string) error {
	t.counted = countedInFlight{}
	for _, scope := range []struct{ suffix, column string }{{"_tenant", "tenant_id"}, {"_key", "key_id"}} {
		_, err := t.exec(ctx, `UPDATE in_flight SET n = CASE WHEN n > 0 THEN n - 1 ELSE 0 END
			WHERE kind = ? AND owner = (SELECT `+scope.column+` FROM `+table+` WHERE id = ?)`, kind+scope.suffix, id)
		if err != nil {
			return fmt.Errorf("uncount %s %s in flight: %w", kind, id, err)
		}
	}
	return nil
}

// uncount is dropInFlight for a record already gone (a deleted asset): the caller names its
// key and tenant. Tenant first, then key, like every other move of the counters.
func (t *Tx) uncount(ctx context.Context, kind, keyID, tenantID string) error {
	t.counted = countedInFlight{}
	for _, row := range []struct{ suffix, owner string }{{"_tenant", tenantID}, {"_key", keyID}} {
		_, err := t.exec(ctx, `UPDATE in_flight SET n = CASE WHEN n > 0 THEN n - 1 ELSE 0 END
			WHERE kind = ? AND owner = ?`, kind+row.suffix, row.owner)
		if err != nil {
			return fmt.Errorf("uncount %s in flight of %s: %w", kind, row.owner, err)
		}
	}
	return nil
}

// inFlight returns the key's and the tenant's counters: as this transaction's last create
// counted them (its rows are still locked, so they cannot have moved), or read.
func (t *Tx) inFlight(ctx context.Context, kind, keyID, tenantID string) (store.InFlight, error) {
	if m := t.merge; m != nil {
		// The batch's increments so far go first; their answer is the count.
		if len(m.counts) > 0 {
			m.queueCounts(t.pipe, t.db.q)
			if err := t.pipe.Flush(t.stmtCtx(ctx)); err != nil {
				return store.InFlight{}, fmt.Errorf("count %s in flight: %w", kind, err)
			}
		}
		k, kok := m.answered[counterRow{kind + "_key", keyID}]
		n, tok := m.answered[counterRow{kind + "_tenant", tenantID}]
		if kok && tok {
			return store.InFlight{Key: int(k), Tenant: int(n)}, nil
		}
	}
	if c := t.counted; c.kind == kind && c.keyID == keyID && c.tenantID == tenantID {
		return c.n, nil
	}
	var f store.InFlight
	err := t.queryRow(ctx, `SELECT
		COALESCE((SELECT n FROM in_flight WHERE kind = ? AND owner = ?), 0),
		COALESCE((SELECT n FROM in_flight WHERE kind = ? AND owner = ?), 0)`,
		kind+"_key", keyID, kind+"_tenant", tenantID).Scan(&f.Key, &f.Tenant)
	if err != nil {
		return store.InFlight{}, fmt.Errorf("read %s in flight: %w", kind, err)
	}
	return f, nil
}

// TasksInFlight counts the unfinished video tasks of a key and of its tenant.
func (t *Tx) TasksInFlight(ctx context.Context, keyID, tenantID string) (store.InFlight, error) {
	return t.inFlight(ctx, "task", keyID, tenantID)
}

// SpeechesInFlight counts the pending speech records of a key and of its tenant.
func (t *Tx) SpeechesInFlight(ctx context.Context, keyID, tenantID string) (store.InFlight, error) {
	return t.inFlight(ctx, "speech", keyID, tenantID)
}

// AssetsInFlight counts the Processing assets of a key and of its tenant.
func (t *Tx) AssetsInFlight(ctx context.Context, keyID, tenantID string) (store.InFlight, error) {
	return t.inFlight(ctx, "asset", keyID, tenantID)
}

// UpstreamSlots returns the upstream jobs counted per account.
func (db *DB) UpstreamSlots(ctx context.Context) (map[string]int, error) {
	rows, err := db.read.QueryContext(ctx, `SELECT owner, n FROM in_flight WHERE kind = 'upstream'`)
	if err != nil {
		return nil, fmt.Errorf("upstream slots: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var owner string
		var n int
		if err := rows.Scan(&owner, &n); err != nil {
			return nil, fmt.Errorf("upstream slots: %w", err)
		}
		out[owner] = n
	}
	return out, rows.Err()
}
