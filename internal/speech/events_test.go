package speech

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
	if err != nil {
		return "", err
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

// hooked switches webhooks on for the env's tenant with one endpoint subscribed to speech
// events, and returns the tap that announces them and the endpoint's id.
func hooked(e *env, failN int64) (*tap, string) {
	e.t.Helper()
	cat := catalog.Demo()
	tn, _ := cat.Tenant("demo")
	tn.WebhooksSetting = catalog.Webhooks{Enabled: true, MaxEndpoints: 3}
	svc := &webhook.Service{Store: e.db, Catalogs: catalog.Static(cat), Client: testkit.LoopbackFetch(e.t, nil, testkit.Names{"hooks.example.com": "127.0.0.1"})}
	ep, err := svc.Create(context.Background(), "demo", 3,
		[]byte(`{"name":"n","url":"https://hooks.example.com/in","event_types":["speech.completed","speech.failed"]}`))
	if err != nil {
		e.t.Fatal(err)
	}
	p := &tap{inner: svc}
	p.failN.Store(failN)
	e.svc.Events = p
	return p, ep.ID
}

// maxMove bounds how far the test moves the clock while it waits: far below the env's 10 s
// wait, so the run that commits is never refused for starting late.
const maxMove = 3 * time.Second

// A settled generation is announced once, in its settlement's transaction: completed as
// speech.completed and failed as speech.failed, naming the record and the request's
// client_request_id; when the transaction fails after the event was written, neither the
// outcome nor the event is kept, and the run that commits writes both.
func TestSpeechSettlementAnnouncedInItsTransaction(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			for _, c := range []struct {
				name, text, status, event string
			}{
				{"completed", "Hello there.", store.SpeechCompleted, webhook.SpeechCompleted},
				{"failed", "Hello [sandbox:fail] there.", store.SpeechFailed, webhook.SpeechFailed},
			} {
				t.Run(c.name, func(t *testing.T) {
					e := newEnvOn(t, openStore(t, driver), manualEngine)
					p, endpoint := hooked(e, 1)
					e.start()
					rec := e.acceptOnly(`{"model":"demo-speech","input":"` + c.text + `","metadata":{"client_request_id":"req-` + c.name + `"}}`)
					// The first settlement rolled back; its job runs again after its backoff on the
					// env's still clock, moved on a little at each look (never near the request's
					// wait) since the retry's time is set after the rollback, at a moment the test
					// cannot see.
					testkit.WaitFor(t, 60*time.Second, "the first settlement", func() bool {
						p.mu.Lock()
						defer p.mu.Unlock()
						return len(p.ids) > 0
					})
					var got store.Speech
					var moved time.Duration
					testkit.WaitEvery(t, 50*time.Millisecond, 60*time.Second, "the record stayed pending", func() bool {
						var err error
						if got, err = e.db.Speech(context.Background(), rec.ID); err != nil {
							t.Fatal(err)
						}
						if got.Status != store.SpeechPending {
							return true
						}
						if moved < maxMove {
							e.clock.Advance(100 * time.Millisecond)
							moved += 100 * time.Millisecond
						}
						return false
					})
					if got.Status != c.status {
						t.Fatalf("record %+v", got)
					}
					p.mu.Lock()
					ids := append([]string(nil), p.ids...)
					p.mu.Unlock()
					if len(ids) != 2 {
						t.Fatalf("events written %v, want the rolled-back one and the committed one", ids)
					}
					if _, err := e.db.WebhookDelivery(context.Background(), ids[0]+"."+endpoint); !errors.Is(err, store.ErrNotFound) {
						t.Fatalf("the event of the rolled-back settlement: %v, want not found", err)
					}
					d, err := e.db.WebhookDelivery(context.Background(), ids[1]+"."+endpoint)
					if err != nil || d.EventType != c.event || d.Status != store.DeliveryPending {
						t.Fatalf("delivery %+v, %v", d, err)
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
					want := map[string]any{"id": rec.ID, "client_request_id": "req-" + c.name}
					if ev.ID != ids[1] || ev.Object != "event" || ev.Type != c.event || len(ev.Data) != 2 ||
						ev.Data["id"] != want["id"] || ev.Data["client_request_id"] != want["client_request_id"] {
						t.Fatalf("payload %s", d.Payload)
					}
				})
			}
		})
	}
}
