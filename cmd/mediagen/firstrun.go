package main

import (
	"context"
	"fmt"

	"mediagen/internal/billing"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
)

const (
	demoTenant      = "demo"
	demoCredit      = money.Micros(100 * money.Scale)
	metaDemoKeyName = "demo_key_id"
)

// firstRun creates the demo key with a starting credit, once per database. The meta row, the
// key and the credit commit together, so a crash cannot leave a key without its credit or make
// a second one on the next start.
func (m *Main) firstRun(ctx context.Context) error {
	tenant, ok := m.cat().Tenant(demoTenant)
	if !ok {
		return nil
	}
	secret, display, hash := keys.Generate()
	key := store.Key{ID: idgen.New("key"), TenantID: tenant.ID, Name: "demo", Prefix: display, Hash: hash, CreatedAt: nowUTC()}
	created := false
	err := m.db.Transact(ctx, func(tx store.Tx) error {
		wrote, err := tx.SetMetaOnce(ctx, metaDemoKeyName, key.ID)
		if err != nil || !wrote {
			return err
		}
		if err := tx.CreateKey(ctx, key, tenant.Currency); err != nil {
			return err
		}
		_, err = billing.Credit(ctx, tx, key, tenant.Currency, demoCredit, "demo starting credit", nowUTC())
		created = err == nil
		return err
	})
	if err != nil {
		return fmt.Errorf("create demo key: %w", err)
	}
	if !created {
		id, _, _ := m.db.Meta(ctx, metaDemoKeyName)
		m.log.Info("the demo key was made on the first start; its secret is not stored", "key_id", id,
			"new_secret", "mediagen admin key rotate "+id, "another_key", "mediagen admin key create --tenant "+tenant.ID)
		return nil
	}
	m.DemoKey = secret
	if !m.Terminal {
		// A secret must not land in a log file or a log pipeline: only a person at a terminal
		// sees it. The log says how to get one instead, by key id alone.
		m.log.Info("demo key made with "+demoCredit.String()+" "+tenant.Currency+" of credit; its secret is printed only when stdout is a terminal",
			"key_id", key.ID, "tenant", tenant.ID,
			"new_secret", "mediagen admin key rotate "+key.ID, "another_key", "mediagen admin key create --tenant "+tenant.ID)
		return nil
	}
	m.log.Info("demo key made; its secret is printed on the terminal", "key_id", key.ID, "tenant", tenant.ID)
	// The tenant's own address when the catalog gives it one: the address it is shown
	// everywhere else.
	base := m.Config.PublicURL
	if a := tenant.AddressFor(""); a != "" {
		base = a
	}
	fmt.Fprintf(m.stdout, `
Demo tenant %q is ready with %s %s of credit. Its API key (shown once, keep it):

    %s

Try it:

    curl -s -H "Authorization: Bearer %s" %s/v1/billing/balance

Make a video with the sandbox engine, then poll the task id it answers:

    curl -s -H "Authorization: Bearer %s" -H "Content-Type: application/json" %s/v1/videos \
      -d '{"model":"demo-video-fast","prompt":"a paper boat on a pond","metadata":{"duration":4,"resolution":"480p"}}'
    curl -s -H "Authorization: Bearer %s" %s/v1/videos/<id>

Or open the web console, %s/console/, and sign in with the key (docs/console.md).

`, tenant.ID, demoCredit, tenant.Currency, secret, secret, base, secret, base, secret, base, base)
	return nil
}
