package postgres_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
)

// TestAuditLogRefusesUpdateAndDelete: the database itself keeps the audit log append-only,
// whatever SQL reaches it.
func TestAuditLogRefusesUpdateAndDelete(t *testing.T) {
	url := pgtest.URL(t)
	db, err := postgres.Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := store.AuditEntry{ID: "aud_1", ActorID: "cli", ActorName: "root", ActorRole: "owner", Via: "cli", Action: "key.create",
		TargetType: "key", TargetID: "key_1", After: []byte(`{}`), CreatedAt: time.Now()}
	if err := db.Transact(context.Background(), func(tx store.Tx) error { return tx.AppendAudit(context.Background(), e) }); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{`UPDATE admin_audit SET action = 'x'`, `DELETE FROM admin_audit`} {
		if _, err := raw.Exec(q); err == nil {
			t.Errorf("%s: accepted", q)
		}
	}
	if list, _ := db.Audit(context.Background(), store.AuditQuery{}); len(list) != 1 || list[0].Action != "key.create" {
		t.Errorf("audit after the attempts: %+v", list)
	}
}
