package webhook

import (
	"context"
	"net/http"
	"testing"
	"time"

	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
)

// The tests' PostgreSQL databases are clones of one the migrations made once (pgtest).
func init() { pgtest.UseTemplate(postgres.MigrationsDigest(), postgres.Migrate) }

// The whole path on PostgreSQL: an event written in a transaction, claimed by the engine,
// retried after a 500 with the same webhook-id, delivered and logged.
func TestDeliveredAfterARetryOnPostgres(t *testing.T) {
	t.Parallel()
	db, err := postgres.Open(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	rc := newReceiver(t, func(n int, w http.ResponseWriter) bool {
		if n == 1 {
			w.WriteHeader(500)
		}
		return true
	})
	e := newEnvOn(t, db, rc, fast)
	ep := e.create(rc.url("/"))
	id := e.announce(VideoCompleted, "video_pg")
	d := e.deliveries(t, id, ep.ID)
	log, _ := db.WebhookAttempts(context.Background(), d.ID)
	if d.Status != store.DeliveryDelivered || len(log) != 2 || log[0].StatusCode != 500 || log[1].StatusCode != 200 {
		t.Fatalf("delivery %+v, log %+v", d, log)
	}
	r := rc.requests()
	if len(r) != 2 || r[0].header.Get("webhook-id") != id || r[1].header.Get("webhook-id") != id || !verify(ep.SigningSecret, r[1].header, r[1].body, time.Now()) {
		t.Fatalf("requests %+v", r)
	}
}
