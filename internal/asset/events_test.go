package asset

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-json-experiment/json"

	"mediagen/internal/catalog"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/testkit"
	"mediagen/internal/webhook"
)

// The tests' PostgreSQL databases are clones of one the migrations made once (pgtest).
func init() { pgtest.UseTemplate(postgres.MigrationsDigest(), postgres.Migrate) }

// openStore is a fresh migrated store of the driver (PostgreSQL: skipped when its server is
// unreachable, except under CI=true).
func openStore(t *testing.T, driver string) store.Store {
	t.Helper()
	if driver == "sqlite" {
		return testkit.SQLite(t)
	}
	db, err := postgres.Open(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// tap is the real webhook service that, for its first failN calls, fails the transaction
// after writing the event into it: the state change it announces must roll back with it.
type tap struct {
	inner *webhook.Service
	failN atomic.Int64
	mu    sync.Mutex
	ids   []string // every event id written, committed or not
}

func (p *tap) Announce(ctx context.Context, tx store.Tx, e webhook.Event) (string, error) {
	id, err := p.inner.Announce(ctx, tx, e)
	if err != nil || id == "" {
		return id, err
	}
	p.mu.Lock()
	p.ids = append(p.ids, id)
	p.mu.Unlock()
	if p.failN.Add(-1) >= 0 {
		return "", errors.New("the transaction failed after the event was written")
	}
	return id, nil
}

func (p *tap) Wake() {}

func (p *tap) written() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.ids...)
}

// newHookedEnv is an env on the driver's store whose tenant acme has webhooks on and one
// endpoint subscribed to every asset event; the tap fails its first failN transactions.
func newHookedEnv(t *testing.T, driver string, failN int64) (*env, *tap, string) {
	t.Helper()
	db := openStore(t, driver)
	cat, err := catalog.Parse("test", []byte(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	tn, _ := cat.Tenant("acme")
	tn.WebhooksSetting = catalog.Webhooks{Enabled: true, MaxEndpoints: 3}
	hooks := &webhook.Service{Store: db, Catalogs: catalog.Static(cat), Client: testkit.LoopbackFetch(t, nil, testkit.Names{"hooks.example.com": "127.0.0.1"})}
	ep, err := hooks.Create(context.Background(), "acme", 3, []byte(`{"name":"n","url":"https://hooks.example.com/in",`+
		`"event_types":["asset.ready","asset.failed","asset.verification.completed","asset.verification.failed"]}`))
	if err != nil {
		t.Fatal(err)
	}
	p := &tap{inner: hooks}
	p.failN.Store(failN)
	e := newEnv(t, envOpts{db: db, mutate: func(c *Config) { c.Events = p }})
	return e, p, ep.ID
}

// event reads the delivery of event id to endpoint and its payload's data.
func event(t *testing.T, db store.Store, id, endpoint string) (store.WebhookDelivery, map[string]any) {
	t.Helper()
	d, err := db.WebhookDelivery(context.Background(), id+"."+endpoint)
	if err != nil {
		t.Fatalf("delivery of %s: %v", id, err)
	}
	var ev struct {
		ID     string         `json:"id"`
		Object string         `json:"object"`
		Type   string         `json:"type"`
		Data   map[string]any `json:"data"`
	}
	if err := json.Unmarshal(d.Payload, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.ID != id || ev.Object != "event" || ev.Type != d.EventType {
		t.Fatalf("payload %s", d.Payload)
	}
	return d, ev.Data
}

// rolledBack fails unless the event id was never committed.
func rolledBack(t *testing.T, db store.Store, id, endpoint string) {
	t.Helper()
	if _, err := db.WebhookDelivery(context.Background(), id+"."+endpoint); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the event of a rolled-back state change: %v, want not found", err)
	}
}

// An asset that leaves Processing is announced once, in the transaction that records its
// outcome: Active as asset.ready, Failed as asset.failed, naming the asset only. When that
// transaction fails after the event was written, neither is kept, and the run that commits
// writes both.
func TestAssetOutcomeAnnouncedInItsTransaction(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct{ name, status, event string }{
				{"ready", store.AssetActive, webhook.AssetReady},
				{"failed", store.AssetFailed, webhook.AssetFailed},
			} {
				t.Run(c.name, func(t *testing.T) {
					e, p, endpoint := newHookedEnv(t, driver, 1)
					src := e.url("missing.png")
					if c.status == store.AssetActive {
						src = e.write("a.png", pngBytes(t, 64, 64))
					}
					id := e.createAsset(acme, e.virtualGroup(acme), src, "Image")
					if m := e.wait(acme, id); m["Status"] != c.status {
						t.Fatalf("asset %v", m)
					}
					ids := p.written()
					if len(ids) != 2 {
						t.Fatalf("events written %v, want the rolled-back one and the committed one", ids)
					}
					rolledBack(t, e.db, ids[0], endpoint)
					d, data := event(t, e.db, ids[1], endpoint)
					if d.EventType != c.event || len(data) != 1 || data["id"] != id {
						t.Fatalf("delivery %+v, data %v", d, data)
					}
				})
			}
		})
	}
}

// A finished verification is announced once, in the transaction that finishes it: passed as
// asset.verification.completed with its group, declined as asset.verification.failed, each
// with the SHA-256 of the VerifyToken and never the token. A finish whose transaction failed
// leaves the session pending and nothing announced; the next action finishes it.
func TestVerificationAnnouncedInItsTransaction(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct{ name, action, event, page string }{
				{"passed", ActionConfirm, webhook.VerificationCompleted, PagePassed},
				{"declined", ActionDecline, webhook.VerificationFailed, PageDeclined},
			} {
				t.Run(c.name, func(t *testing.T) {
					e, p, endpoint := newHookedEnv(t, driver, 1)
					ctx := t.Context()
					_, token := e.session(acme, `{}`)
					if _, err := e.svc.Act(ctx, token, ActionStart); err != nil {
						t.Fatal(err)
					}
					e.clock.Advance(e.svc.cfg.MinCheck)
					if _, err := e.svc.Act(ctx, token, c.action); err == nil {
						t.Fatal("the failed transaction finished the session")
					}
					if st, err := e.svc.Page(ctx, token); err != nil || st.State != PageStarted {
						t.Fatalf("after the rolled-back finish: %+v %v", st, err)
					}
					if st, err := e.svc.Act(ctx, token, c.action); err != nil || st.State != c.page {
						t.Fatalf("finish: %+v %v", st, err)
					}
					ids := p.written()
					if len(ids) != 2 {
						t.Fatalf("events written %v, want the rolled-back one and the committed one", ids)
					}
					rolledBack(t, e.db, ids[0], endpoint)
					d, data := event(t, e.db, ids[1], endpoint)
					sum := sha256.Sum256([]byte(token))
					v, err := e.db.VerifySessionByToken(ctx, sum[:])
					if err != nil {
						t.Fatal(err)
					}
					want := map[string]any{"id": v.ID, "verify_token_sha256": hex.EncodeToString(sum[:])}
					if v.GroupID != "" {
						want["group_id"] = v.GroupID
					}
					if d.EventType != c.event || len(data) != len(want) || (c.event == webhook.VerificationCompleted) != (v.GroupID != "") {
						t.Fatalf("delivery %+v, data %v, session %+v", d, data, v)
					}
					for k, w := range want {
						if data[k] != w {
							t.Fatalf("data %v, want %v", data, want)
						}
					}
					if bytes.Contains(d.Payload, []byte(token)) {
						t.Fatalf("the event carries the VerifyToken: %s", d.Payload)
					}
				})
			}
		})
	}
}
