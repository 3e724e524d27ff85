package main

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/store"
	"mediagen/internal/store/sqlite"
)

// The webhook commands: list a tenant's endpoints, its log, disable and enable (audited as
// cli), and a redelivery refused while the tenant's switch is off (the demo catalog's).
func TestAdminWebhookCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	adminAs(t, dir, "root", "tenant", "list") // makes the database
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "mediagen.db"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Hour)
	err = db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, store.WebhookEndpoint{ID: "whe_cli1", TenantID: "demo", Name: "cli receiver", URL: "https://hooks.example.com/",
			EventTypes: []string{"video.failed"}, Secret: "whsec_c2VjcmV0", Status: store.WebhookEnabled, CreatedAt: at, UpdatedAt: at}, 5); err != nil {
			return err
		}
		d := store.WebhookDelivery{ID: "evt_cli.whe_cli1", EventID: "evt_cli", EndpointID: "whe_cli1", TenantID: "demo", EventType: "video.failed",
			Payload: []byte(`{}`), Status: store.DeliveryPending, CreatedAt: at, UpdatedAt: at}
		if err := tx.CreateWebhookDelivery(ctx, d); err != nil {
			return err
		}
		return tx.RecordWebhookAttempt(ctx, store.WebhookAttempt{DeliveryID: d.ID, N: 1, At: at, StatusCode: 500, Error: "answered HTTP 500"}, store.DeliveryFailed)
	})
	_ = db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if out := adminAs(t, dir, "alice", "webhook", "list", "--tenant", "demo"); !strings.Contains(out, "whe_cli1") || !strings.Contains(out, "enabled") {
		t.Errorf("webhook list:\n%s", out)
	}
	if out := adminAs(t, dir, "alice", "webhook", "deliveries", "whe_cli1", "--status", "failed"); !strings.Contains(out, "evt_cli.whe_cli1") {
		t.Errorf("webhook deliveries:\n%s", out)
	}
	if out := adminAs(t, dir, "alice", "webhook", "disable", "whe_cli1"); !strings.Contains(out, "is disabled") {
		t.Errorf("webhook disable:\n%s", out)
	}
	adminAs(t, dir, "alice", "webhook", "enable", "whe_cli1")
	err = run(ctx, []string{"admin", "webhook", "redeliver", "whe_cli1", "evt_cli.whe_cli1", "--data-dir", dir}, env(nil), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "switched off") {
		t.Errorf("redeliver with the switch off: %v", err)
	}
	audit := adminAs(t, dir, "carol", "audit")
	for _, want := range []string{"webhook_endpoint.disable", "webhook_endpoint.enable", "alice (cli)"} {
		if !strings.Contains(audit, want) {
			t.Errorf("admin audit lacks %q:\n%s", want, audit)
		}
	}
	if strings.Contains(audit, "webhook_delivery.redeliver") {
		t.Errorf("a refused redelivery was audited:\n%s", audit)
	}
}
