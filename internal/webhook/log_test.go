package webhook

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/apierr"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres"
	"mediagen/internal/store/postgres/pgtest"
	"mediagen/internal/testkit"
)

// redeliverSameEvent runs the redelivery path on e: a delivery given up after the receiver
// refused it is redelivered by hand once the receiver works; the receiver gets the same
// webhook-id and body under a fresh, valid signature, as a new delivery with its own log.
func redeliverSameEvent(t *testing.T, e *env, rc *receiver, up *bool) {
	ctx := context.Background()
	ep := e.create(rc.url("/"))
	id := e.announce(VideoCompleted, "video_again")
	first := e.deliveries(t, id, ep.ID)
	if first.Status != store.DeliveryFailed {
		t.Fatalf("first delivery %+v; want failed", first)
	}
	*up = true
	d, err := e.svc.Redeliver(ctx, "demo", ep.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.ID == first.ID || d.EventID != id || d.Status != store.DeliveryPending {
		t.Fatalf("redelivery %+v", d)
	}
	testkit.WaitFor(t, 5*time.Second, "the redelivery", func() bool {
		got, err := e.svc.Delivery(ctx, "demo", ep.ID, d.ID)
		return err == nil && got.Status == store.DeliveryDelivered && len(got.Attempts) == 1
	})
	reqs := rc.requests()
	last := reqs[len(reqs)-1]
	if last.header.Get("webhook-id") != id || string(last.body) != string(reqs[0].body) || !verify(ep.SigningSecret, last.header, last.body, time.Now()) {
		t.Fatalf("redelivered request: webhook-id %q (want %q), body %s (first %s), or its signature fails",
			last.header.Get("webhook-id"), id, last.body, reqs[0].body)
	}
	// The original stays as it was; the log lists both, newest first.
	list, err := e.svc.Deliveries(ctx, "demo", ep.ID, LogQuery{EventID: id})
	if err != nil || len(list.Data) != 2 || list.Data[0].ID != d.ID || list.Data[1].ID != first.ID || list.Data[1].Status != store.DeliveryFailed {
		t.Fatalf("log of the event: %+v, %v", list, err)
	}
}

func downUntil(up *bool) func(n int, w http.ResponseWriter) bool {
	return func(n int, w http.ResponseWriter) bool {
		if !*up {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		return true
	}
}

var once = Schedule{First: 10 * time.Millisecond, Max: 10 * time.Millisecond, Attempts: 1}

func TestRedeliverySendsTheSameEventSignedAfresh(t *testing.T) {
	t.Parallel()
	up := new(bool)
	rc := newReceiver(t, downUntil(up))
	redeliverSameEvent(t, newEnv(t, rc, once), rc, up)
}

func TestRedeliverySendsTheSameEventSignedAfreshOnPostgres(t *testing.T) {
	t.Parallel()
	db, err := postgres.Open(context.Background(), pgtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	up := new(bool)
	rc := newReceiver(t, downUntil(up))
	redeliverSameEvent(t, newEnvOn(t, db, rc, once), rc, up)
}

// Redelivery is refused, with nothing written, for a disabled endpoint, a tenant whose switch
// is off, an event still pending to the endpoint, and another tenant's or endpoint's delivery.
func TestRedeliveryRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rc := newReceiver(t, func(n int, w http.ResponseWriter) bool { w.WriteHeader(500); return true })
	e := newEnv(t, rc, once)
	ep := e.create(rc.url("/a"))
	other := e.create(rc.url("/b"))
	id := e.announce(VideoFailed, "video_r")
	d := e.deliveries(t, id, ep.ID)
	pendingID := d.EventID + "." + ep.ID + ".rd_pending"
	now := time.Now()
	if err := e.db.Transact(ctx, func(tx store.Tx) error {
		return tx.CreateWebhookDelivery(ctx, store.WebhookDelivery{ID: pendingID, EventID: d.EventID, EndpointID: ep.ID, TenantID: "demo",
			EventType: d.EventType, Payload: d.Payload, Status: store.DeliveryPending, CreatedAt: now, UpdatedAt: now})
	}); err != nil {
		t.Fatal(err)
	}
	tn, _ := e.cat.Tenant("demo")
	for _, tc := range []struct {
		name, tenant, endpoint, delivery, code string
		setup, undo                            func()
	}{
		{name: "still pending", tenant: "demo", endpoint: ep.ID, delivery: d.ID, code: "webhook_delivery_pending"},
		{name: "another tenant", tenant: "other", endpoint: ep.ID, delivery: d.ID, code: "webhooks_disabled"},
		{name: "another endpoint", tenant: "demo", endpoint: other.ID, delivery: d.ID, code: "webhook_delivery_not_found"},
		{name: "no such delivery", tenant: "demo", endpoint: ep.ID, delivery: "evt_x.whe_y", code: "webhook_delivery_not_found"},
		{name: "not an id", tenant: "demo", endpoint: ep.ID, delivery: "../x", code: "webhook_delivery_not_found"},
		{name: "endpoint disabled", tenant: "demo", endpoint: ep.ID, delivery: d.ID, code: "webhook_endpoint_disabled",
			setup: func() { mustStatus(t, e, ep.ID, store.WebhookDisabled) }, undo: func() { mustStatus(t, e, ep.ID, store.WebhookEnabled) }},
		{name: "switch off", tenant: "demo", endpoint: ep.ID, delivery: d.ID, code: "webhooks_disabled",
			setup: func() { tn.WebhooksSetting.Enabled = false }, undo: func() { tn.WebhooksSetting.Enabled = true }},
	} {
		if tc.setup != nil {
			tc.setup()
		}
		_, err := e.svc.Redeliver(ctx, tc.tenant, tc.endpoint, tc.delivery)
		if got := apierr.As(err).Code; got != tc.code {
			t.Errorf("%s: %v (code %q); want %s", tc.name, err, got, tc.code)
		}
		if tc.undo != nil {
			tc.undo()
		}
	}
	list, _ := e.svc.Deliveries(ctx, "demo", ep.ID, LogQuery{})
	if len(list.Data) != 2 {
		t.Fatalf("%d deliveries after refusals; want the two written here", len(list.Data))
	}
}

func mustStatus(t *testing.T, e *env, id, status string) {
	t.Helper()
	if _, err := e.svc.SetStatus(context.Background(), "demo", id, status); err != nil {
		t.Fatal(err)
	}
}

// The log's query parameters: each bad one refused by name.
func TestLogQueryRefusesByParameter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ query, param string }{
		{"status=lost", "status"},
		{"event_type=image.completed", "event_type"},
		{"event_id=a%20b", "event_id"},
		{"since=yesterday", "since"},
		{"since=2026-11-29T10:00:00Z&until=2026-11-29T09:00:00Z", "until"},
		{"limit=0", "limit"},
		{"limit=101", "limit"},
		{"after=..", "after"},
		{"order=asc", "order"},
	} {
		v, _ := url.ParseQuery(tc.query)
		_, err := ParseLogQuery(v)
		if e := apierr.As(err); e.Kind != apierr.KindInvalid || e.Param != tc.param {
			t.Errorf("%s: %v; want invalid %s", tc.query, err, tc.param)
		}
	}
	v, _ := url.ParseQuery("status=failed&event_type=video.failed&since=1796000000&until=2026-12-01T00:00:00Z&limit=5")
	q, err := ParseLogQuery(v)
	if err != nil || q.Status != "failed" || q.Since.Unix() != 1796000000 || q.Until.Day() != 1 || q.Limit != 5 {
		t.Fatalf("%+v, %v", q, err)
	}
}

// The retention pass deletes ended deliveries older than the period, in batches, counts them
// in mediagen_webhook_log_swept_total, and keeps the recent and the pending.
func TestLogSweepKeepsTheRecentAndThePending(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := testkit.SQLite(t)
	now := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	svc := &Service{Store: db, Now: func() time.Time { return now }}
	reg := prometheus.NewRegistry()
	svc.RegisterMetrics(reg)
	write := func(id, status string, at time.Time) {
		if err := db.Transact(ctx, func(tx store.Tx) error {
			return tx.CreateWebhookDelivery(ctx, store.WebhookDelivery{ID: id, EventID: id, EndpointID: "whe_a", TenantID: "demo",
				EventType: VideoCompleted, Payload: []byte(`{}`), Status: status, CreatedAt: at, UpdatedAt: at})
		}); err != nil {
			t.Fatal(err)
		}
	}
	old := now.Add(-DefaultLogRetention - time.Hour)
	for i := range sweepBatch + 7 {
		write("evt_old"+itoa(i), store.DeliveryDelivered, old)
	}
	write("evt_oldpending", store.DeliveryPending, old)
	write("evt_recent", store.DeliveryFailed, now.Add(-time.Hour))
	if err := svc.SweepLog(ctx); err != nil {
		t.Fatal(err)
	}
	if got := sweptCount(t, reg); got != sweepBatch+7 {
		t.Fatalf("swept %v; want %d", got, sweepBatch+7)
	}
	left, _ := db.WebhookDeliveries(ctx, store.WebhookDeliveryQuery{TenantID: "demo", EndpointID: "whe_a", Limit: 10})
	if len(left) != 2 || left[0].ID != "evt_recent" || left[1].ID != "evt_oldpending" {
		t.Fatalf("left %+v", left)
	}
}

func itoa(i int) string { return time.Duration(i).String() }

func sweptCount(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "mediagen_webhook_log_swept_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("mediagen_webhook_log_swept_total not registered")
	return 0
}
