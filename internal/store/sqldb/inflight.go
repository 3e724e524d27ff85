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

// inFlightTables names the table whose rows each kind counts: a terminal transition finds the
// key and tenant to uncount on the record's row.
var inFlightTables = map[store.InFlightKind]string{
	store.InFlightTasks:    "tasks",
	store.InFlightSpeeches: "speeches",
	store.InFlightAssets:   "assets",
}

// counterKind is the in_flight row kind of a kind's key or tenant counter.
func counterKind(kind store.InFlightKind, scope string) string { return string(kind) + "_" + scope }

// addInFlight counts one more unfinished record of the key and of the tenant. The upsert
// locks both counter rows until the transaction ends, and returns the new counts, which the
// transaction keeps: the in-flight check that follows on the hot create path then costs no
// round trip while the rows are locked. In an optimistic shared batch the increments are
// merged with the other members' (merge.go) and sent with the commit, or when a member reads
// the counts: a create with no in-flight limit never waits for them.
func (t *Tx) addInFlight(ctx context.Context, kind store.InFlightKind, keyID, tenantID string) error {
	t.counted = countedInFlight{}
	keyRow, tenantRow := counterKind(kind, "key"), counterKind(kind, "tenant")
	if t.merge != nil {
		t.merge.count(tenantRow, tenantID, 1)
		t.merge.count(keyRow, keyID, 1)
		return nil
	}
	q := `INSERT INTO in_flight (kind, owner, n) VALUES (?, ?, 1), (?, ?, 1)
		ON CONFLICT (kind, owner) DO UPDATE SET n = in_flight.n + 1
		RETURNING kind, n`
	args := []any{tenantRow, tenantID, keyRow, keyID}
	err := t.query(ctx, q, args, func(rows Rows) error {
		f := countedInFlight{kind: kind, keyID: keyID, tenantID: tenantID}
		for rows.Next() {
			var k string
			var n int
			if err := rows.Scan(&k, &n); err != nil {
				return err
			}
			if k == keyRow {
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
	kind            store.InFlightKind
	keyID, tenantID string
	n               store.InFlight
}

// dropInFlight counts one fewer unfinished record of the key and of the tenant the record
// (in its kind's table) names. A counter never goes below zero: a drift could only loosen a
// limit.
func (t *Tx) dropInFlight(ctx context.Context, kind store.InFlightKind, id string) error {
	t.counted = countedInFlight{}
	table := inFlightTables[kind]
	for _, scope := range []struct{ name, column string }{{"tenant", "tenant_id"}, {"key", "key_id"}} {
		_, err := t.exec(ctx, `UPDATE in_flight SET n = CASE WHEN n > 0 THEN n - 1 ELSE 0 END
			WHERE kind = ? AND owner = (SELECT `+scope.column+` FROM `+table+` WHERE id = ?)`, counterKind(kind, scope.name), id)
		if err != nil {
			return fmt.Errorf("uncount %s %s in flight: %w", kind, id, err)
		}
	}
	return nil
}

// uncount is dropInFlight for a record already gone (a deleted asset): the caller names its
// key and tenant. Tenant first, then key, like every other move of the counters.
func (t *Tx) uncount(ctx context.Context, kind store.InFlightKind, keyID, tenantID string) error {
	t.counted = countedInFlight{}
	for _, row := range []struct{ scope, owner string }{{"tenant", tenantID}, {"key", keyID}} {
		_, err := t.exec(ctx, `UPDATE in_flight SET n = CASE WHEN n > 0 THEN n - 1 ELSE 0 END
			WHERE kind = ? AND owner = ?`, counterKind(kind, row.scope), row.owner)
		if err != nil {
			return fmt.Errorf("uncount %s in flight of %s: %w", kind, row.owner, err)
		}
	}
	return nil
}

// InFlight returns the key's and the tenant's counters of a kind: as this transaction's last
// create counted them (its rows are still locked, so they cannot have moved), or read.
func (t *Tx) InFlight(ctx context.Context, kind store.InFlightKind, keyID, tenantID string) (store.InFlight, error) {
	keyRow, tenantRow := counterKind(kind, "key"), counterKind(kind, "tenant")
	if m := t.merge; m != nil {
		// The batch's increments so far go first; their answer is the count.
		if len(m.counts) > 0 {
			m.queueCounts(t.pipe, t.db.q)
			if err := t.pipe.Flush(t.stmtCtx(ctx)); err != nil {
				return store.InFlight{}, fmt.Errorf("count %s in flight: %w", kind, err)
			}
		}
		k, kok := m.answered[counterRow{keyRow, keyID}]
		n, tok := m.answered[counterRow{tenantRow, tenantID}]
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
		keyRow, keyID, tenantRow, tenantID).Scan(&f.Key, &f.Tenant)
	if err != nil {
		return store.InFlight{}, fmt.Errorf("read %s in flight: %w", kind, err)
	}
	return f, nil
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
