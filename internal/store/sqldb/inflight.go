package sqldb

import (
	"context"
	"fmt"

	"mediagen/internal/store"
)

// The in_flight counters (migration 0006) move with the rows they count. Rows are always
// locked key first, then tenant, in creates and terminal transitions alike, so two
// transactions on PostgreSQL never wait for each other in opposite orders.

// addInFlight counts one more unfinished record of the key and of the tenant. The upsert
// locks both counter rows until the transaction ends.
func (t *Tx) addInFlight(ctx context.Context, kind, keyID, tenantID string) error {
	_, err := t.exec(ctx, `INSERT INTO in_flight (kind, owner, n) VALUES (?, ?, 1), (?, ?, 1)
		ON CONFLICT (kind, owner) DO UPDATE SET n = in_flight.n + 1`,
		kind+"_key", keyID, kind+"_tenant", tenantID)
	if err != nil {
		return fmt.Errorf("count %s in flight: %w", kind, err)
	}
	return nil
}

// dropInFlight counts one fewer unfinished record of the key and of the tenant the record
// names. A counter never goes below zero: a drift could only loosen a limit.
func (t *Tx) dropInFlight(ctx context.Context, kind, table, id string) error {
	for _, scope := range []struct{ suffix, column string }{{"_key", "key_id"}, {"_tenant", "tenant_id"}} {
		_, err := t.exec(ctx, `UPDATE in_flight SET n = CASE WHEN n > 0 THEN n - 1 ELSE 0 END
			WHERE kind = ? AND owner = (SELECT `+scope.column+` FROM `+table+` WHERE id = ?)`, kind+scope.suffix, id)
		if err != nil {
			return fmt.Errorf("uncount %s %s in flight: %w", kind, id, err)
		}
	}
	return nil
}

// inFlight reads the key's and the tenant's counters.
func (t *Tx) inFlight(ctx context.Context, kind, keyID, tenantID string) (store.InFlight, error) {
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
