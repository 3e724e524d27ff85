package webhook

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/catalog"
	"mediagen/internal/jobs"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// The signature is the Standard Webhooks one: the scheme's published test vector.
func TestSignMatchesTheStandardWebhooksVector(t *testing.T) {
	t.Parallel()
	got := sign([]string{"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}, "msg_p5jXN8AQM9LWM0D4loKWxJek", time.Unix(1614265330, 0), []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("signature %q, want %q", got, want)
	}
}

// verify is what OpenAI's SDKs' webhooks.verifySignature does (openai-node 7.57.0,
// src/resources/webhooks/webhooks.ts): any of the space-separated v1 signatures of
// id.timestamp.body under the secret's base64-decoded bytes, timestamp within 300 s.
func verify(secret string, h http.Header, body []byte, now time.Time) bool {
	ts, err := strconv.ParseInt(h.Get("webhook-timestamp"), 10, 64)
	if err != nil || now.Unix()-ts > 300 || ts > now.Unix()+300 {
		return false
	}
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	if err != nil {
		return false
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(h.Get("webhook-id") + "." + h.Get("webhook-timestamp") + "." + string(body)))
	want := m.Sum(nil)
	for _, part := range strings.Split(h.Get("webhook-signature"), " ") {
		sig, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(part, "v1,"))
		if err == nil && hmac.Equal(sig, want) {
			return true
		}
	}
	return false
}

type received struct {
	header http.Header
	body   []byte
}

// receiver is a tenant's endpoint on loopback (TLS), answering what answer says for the n-th
// request (1-based).
type receiver struct {
	ts     *httptest.Server
	mu     sync.Mutex
	got    []received
	answer func(n int, w http.ResponseWriter) bool // false: drop the connection, no answer
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter) bool) *receiver {
	rc := &receiver{answer: answer}
	rc.ts = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.got = append(rc.got, received{r.Header.Clone(), body})
		n := len(rc.got)
		rc.mu.Unlock()
		if rc.answer != nil && !rc.answer(n, w) {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
	}))
	t.Cleanup(rc.ts.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// url names the receiver by a host name the test resolver maps to loopback.
func (rc *receiver) url(path string) string {
	u, _ := url.Parse(rc.ts.URL)
	return "https://example.com:" + u.Port() + path
}

type env struct {
	t   *testing.T
	db  store.Store
	cat *catalog.Catalog
	svc *Service
}

// newEnv is a service on a fresh store with tenant "demo" switched on, delivering through a
// running engine with a fast schedule.
func newEnv(t *testing.T, rc *receiver, sc Schedule) *env {
	t.Helper()
	return newEnvOn(t, testkit.SQLite(t), rc, sc)
}

// newEnvOn is newEnv on the given store.
func newEnvOn(t *testing.T, db store.Store, rc *receiver, sc Schedule) *env {
	t.Helper()
	cat := catalog.Demo()
	tn, _ := cat.Tenant("demo")
	tn.WebhooksSetting = catalog.Webhooks{Enabled: true, MaxEndpoints: 3}
	var roots = rc.ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	svc := &Service{Store: db, Catalogs: catalog.Static(cat), Schedule: &sc, DisableAfter: 2,
		Client: testkit.LoopbackFetch(t, roots, testkit.Names{"example.com": "127.0.0.1"}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	svc.RegisterMetrics(nil)
	e := jobs.New(jobs.Config{Store: db, Logger: svc.Logger})
	for _, k := range svc.Kinds() {
		k.Poll = 20 * time.Millisecond
		if err := e.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	svc.Notify = e.Notify
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	return &env{t: t, db: db, cat: cat, svc: svc}
}

func (e *env) create(u string) Endpoint {
	e.t.Helper()
	ep, err := e.svc.Create(context.Background(), "demo", 3, []byte(`{"name":"n","url":"`+u+`","event_types":["video.completed","video.failed"]}`))
	if err != nil {
		e.t.Fatal(err)
	}
	return ep
}

// announce writes an event as the state change's transaction would; "" when nothing was.
func (e *env) announce(typ, object string) string {
	e.t.Helper()
	var id string
	err := e.db.Transact(context.Background(), func(tx store.Tx) (err error) {
		id, err = e.svc.Announce(context.Background(), tx, Event{TenantID: "demo", Type: typ, ObjectID: object, At: time.Now()})
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.svc.Wake()
	return id
}

var fast = Schedule{First: 20 * time.Millisecond, Max: 50 * time.Millisecond, Attempts: 4}

// A completion reaches the endpoint signed with its secret, in OpenAI's event shape, naming
// the task and nothing else.
func TestDeliveredSignedInOpenAIsShape(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	e := newEnv(t, rc, fast)
	ep := e.create(rc.url("/hook"))
	if !strings.HasPrefix(ep.SigningSecret, "whsec_") {
		t.Fatalf("secret %q", ep.SigningSecret)
	}
	if e.announce(VideoCompleted, "video_abc") == "" {
		t.Fatal("nothing announced")
	}
	testkit.WaitFor(t, 5*time.Second, "the delivery", func() bool { return len(rc.requests()) == 1 })
	got := rc.requests()[0]
	if !verify(ep.SigningSecret, got.header, got.body, time.Now()) {
		t.Fatalf("signature does not verify: %v", got.header)
	}
	var ev map[string]any
	if err := json.Unmarshal(got.body, &ev); err != nil {
		t.Fatal(err)
	}
	if ev["object"] != "event" || ev["type"] != "video.completed" || ev["id"] != got.header.Get("webhook-id") ||
		ev["data"].(map[string]any)["id"] != "video_abc" || len(ev) != 5 || len(ev["data"].(map[string]any)) != 1 {
		t.Fatalf("payload %s", got.body)
	}
	if strings.Contains(string(got.body), "http") || strings.Contains(string(got.body), "whsec") {
		t.Fatalf("payload carries a URL or a secret: %s", got.body)
	}
	d := e.deliveries(t, ev["id"].(string), ep.ID)
	if d.Status != store.DeliveryDelivered || d.Attempts != 1 {
		t.Fatalf("delivery %+v", d)
	}
}

func (e *env) deliveries(t *testing.T, eventID, endpointID string) store.WebhookDelivery {
	t.Helper()
	var d store.WebhookDelivery
	testkit.WaitFor(t, 5*time.Second, "the delivery's record", func() bool {
		var err error
		d, err = e.db.WebhookDelivery(context.Background(), eventID+"."+endpointID)
		return err == nil && d.Status != store.DeliveryPending
	})
	return d
}

// Failures are retried with the same webhook-id until a 2xx: no answer at all (receiver
// down), 500, and 429 whose Retry-After is honoured.
func TestRetriedWithTheSameWebhookIDUntilDelivered(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		answer  func(n int, w http.ResponseWriter) bool
		minWait time.Duration // between the last failure and the delivery
	}{
		{"receiver down then up", func(n int, w http.ResponseWriter) bool { return n > 2 }, 0},
		{"500 then 200", func(n int, w http.ResponseWriter) bool {
			if n <= 2 {
				w.WriteHeader(500)
			}
			return true
		}, 0},
		{"429 with Retry-After", func(n int, w http.ResponseWriter) bool {
			if n == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(429)
			}
			return true
		}, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rc := newReceiver(t, tc.answer)
			e := newEnv(t, rc, fast)
			ep := e.create(rc.url("/"))
			e.announce(VideoFailed, "video_x")
			testkit.WaitFor(t, 10*time.Second, "a 2xx", func() bool {
				r := rc.requests()
				return len(r) > 0 && len(r) == map[bool]int{true: 2, false: 3}[tc.minWait > 0]
			})
			reqs := rc.requests()
			id := reqs[0].header.Get("webhook-id")
			for i, r := range reqs {
				if r.header.Get("webhook-id") != id || !verify(ep.SigningSecret, r.header, r.body, time.Now()) {
					t.Fatalf("attempt %d: webhook-id %q (first %q), or its signature fails", i+1, r.header.Get("webhook-id"), id)
				}
			}
			d := e.deliveries(t, id, ep.ID)
			log, _ := e.db.WebhookAttempts(context.Background(), d.ID)
			if d.Status != store.DeliveryDelivered || len(log) != len(reqs) || log[len(log)-1].StatusCode != 200 || log[0].Error == "" {
				t.Fatalf("delivery %+v, log %+v", d, log)
			}
			if gap := log[len(log)-1].At.Sub(log[len(log)-2].At); gap < tc.minWait {
				t.Fatalf("retried after %v; Retry-After asked %v", gap, tc.minWait)
			}
		})
	}
}

// A redirect to a private address is refused without dialling it (LoopbackFetch fails the
// test on any dial off loopback), and recorded.
func TestRedirectToAPrivateAddressRefusedAndRecorded(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, w http.ResponseWriter) bool {
		w.Header().Set("Location", "https://10.1.2.3/steal")
		w.WriteHeader(http.StatusTemporaryRedirect)
		return true
	})
	e := newEnv(t, rc, Schedule{First: 10 * time.Millisecond, Max: 10 * time.Millisecond, Attempts: 1})
	ep := e.create(rc.url("/"))
	e.announce(VideoCompleted, "video_r")
	testkit.WaitFor(t, 5*time.Second, "the attempt", func() bool { return len(rc.requests()) == 1 })
	id := rc.requests()[0].header.Get("webhook-id")
	d := e.deliveries(t, id, ep.ID)
	log, _ := e.db.WebhookAttempts(context.Background(), d.ID)
	if d.Status != store.DeliveryFailed || len(log) != 1 || !strings.Contains(log[0].Error, "not allowed") || strings.Contains(log[0].Error, "10.1.2.3") {
		t.Fatalf("delivery %+v, log %+v", d, log)
	}
}

// With the tenant's switch off nothing is written or sent; switched off after an event was
// written, its delivery is dropped unsent. A deleted endpoint is dropped likewise.
func TestSwitchOffOrDeletedEndpointSendsNothing(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	e := newEnv(t, rc, fast)
	ep := e.create(rc.url("/"))
	tn, _ := e.cat.Tenant("demo")
	tn.WebhooksSetting.Enabled = false
	if e.announce(VideoCompleted, "video_off") != "" {
		t.Fatal("an event was written for a tenant whose switch is off")
	}
	// Written while on, then switched off before it is sent: dropped with its reason.
	tn.WebhooksSetting.Enabled = true
	var id string
	_ = e.db.Transact(context.Background(), func(tx store.Tx) (err error) {
		id, err = e.svc.Announce(context.Background(), tx, Event{TenantID: "demo", Type: VideoCompleted, ObjectID: "v", At: time.Now()})
		tn.WebhooksSetting.Enabled = false // before the commit: no run can see it on
		return err
	})
	if id == "" {
		t.Fatal("not written")
	}
	e.svc.Wake()
	d := e.deliveries(t, id, ep.ID)
	log, _ := e.db.WebhookAttempts(context.Background(), d.ID)
	if d.Status != store.DeliveryFailed || len(log) != 1 || log[0].Error != "webhooks switched off" || log[0].StatusCode != 0 {
		t.Fatalf("delivery %+v, log %+v", d, log)
	}
	// A deleted endpoint's delivery is dropped the same way.
	tn.WebhooksSetting.Enabled = true
	if _, err := e.svc.Delete(context.Background(), "demo", ep.ID); err != nil {
		t.Fatal(err)
	}
	ep2 := e.create(rc.url("/2"))
	var id2 string
	_ = e.db.Transact(context.Background(), func(tx store.Tx) (err error) {
		id2, err = e.svc.Announce(context.Background(), tx, Event{TenantID: "demo", Type: VideoCompleted, ObjectID: "v2", At: time.Now()})
		if err == nil {
			err = tx.DeleteWebhookEndpoint(context.Background(), "demo", ep2.ID)
		}
		return err
	})
	e.svc.Wake()
	d = e.deliveries(t, id2, ep2.ID)
	log, _ = e.db.WebhookAttempts(context.Background(), d.ID)
	if d.Status != store.DeliveryFailed || len(log) != 1 || log[0].Error != "endpoint deleted" {
		t.Fatalf("delivery %+v, log %+v", d, log)
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("sent %d requests", n)
	}
}

// An endpoint whose deliveries keep being given up is disabled after DisableAfter of them, and
// then gets no new events; a delivered one resets the run.
func TestEndpointDisabledAfterARunOfFailures(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, w http.ResponseWriter) bool { w.WriteHeader(500); return true })
	e := newEnv(t, rc, Schedule{First: 10 * time.Millisecond, Max: 10 * time.Millisecond, Attempts: 1})
	ep := e.create(rc.url("/"))
	for i := range 2 {
		e.announce(VideoFailed, "v"+strconv.Itoa(i))
		testkit.WaitFor(t, 5*time.Second, "the attempt", func() bool { return len(rc.requests()) == i+1 })
	}
	testkit.WaitFor(t, 5*time.Second, "the endpoint disabled", func() bool {
		got, _ := e.svc.Get(context.Background(), "demo", ep.ID)
		return got.Status == store.WebhookDisabled
	})
	if e.announce(VideoFailed, "v3") != "" {
		t.Fatal("an event was written for a disabled endpoint")
	}
	// The tenant enables it again: its run starts over.
	if _, err := e.svc.Update(context.Background(), "demo", ep.ID, []byte(`{"status":"enabled"}`)); err != nil {
		t.Fatal(err)
	}
	got, _ := e.db.WebhookEndpoint(context.Background(), "demo", ep.ID)
	if got.Status != store.WebhookEnabled || got.FailureRun != 0 {
		t.Fatalf("after enabling: %+v", got)
	}
}

// After a rotation that keeps the old secret, a delivery verifies under either secret; after
// one that does not, only under the new.
func TestRotationSignsWithBothSecretsWhenAsked(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	e := newEnv(t, rc, fast)
	ep := e.create(rc.url("/"))
	rot, err := e.svc.RotateSecret(context.Background(), "demo", ep.ID, []byte(`{"keep_old_secret_active_for_24_hours":true}`))
	if err != nil || rot.SigningSecret == ep.SigningSecret || !strings.HasPrefix(rot.SigningSecret, "whsec_") {
		t.Fatalf("rotate: %+v, %v", rot, err)
	}
	e.announce(VideoCompleted, "v1")
	testkit.WaitFor(t, 5*time.Second, "the delivery", func() bool { return len(rc.requests()) == 1 })
	r := rc.requests()[0]
	if !verify(ep.SigningSecret, r.header, r.body, time.Now()) || !verify(rot.SigningSecret, r.header, r.body, time.Now()) {
		t.Fatalf("a delivery after a keeping rotation must verify under both secrets: %v", r.header)
	}
	again, err := e.svc.RotateSecret(context.Background(), "demo", ep.ID, nil)
	if err != nil {
		t.Fatal(err)
	}
	e.announce(VideoCompleted, "v2")
	testkit.WaitFor(t, 5*time.Second, "the delivery", func() bool { return len(rc.requests()) == 2 })
	r = rc.requests()[1]
	if !verify(again.SigningSecret, r.header, r.body, time.Now()) || verify(rot.SigningSecret, r.header, r.body, time.Now()) || verify(ep.SigningSecret, r.header, r.body, time.Now()) {
		t.Fatalf("after a plain rotation only the new secret may verify: %v", r.header)
	}
}

// test sends one signed sample event now and answers the receiver's status code.
func TestTestSendsASignedSampleAndAnswersTheStatus(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int, w http.ResponseWriter) bool { w.WriteHeader(202); return true })
	e := newEnv(t, rc, fast)
	ep := e.create(rc.url("/"))
	res, err := e.svc.Test(context.Background(), "demo", ep.ID, []byte(`{"event_type":"video.failed"}`))
	if err != nil {
		t.Fatal(err)
	}
	if res != (TestResult{Object: "webhook_endpoint.test", EventType: "video.failed", StatusCode: 202, Success: true, WebhookEndpointID: ep.ID}) {
		t.Fatalf("result %+v", res)
	}
	r := rc.requests()
	if len(r) != 1 || !verify(ep.SigningSecret, r[0].header, r[0].body, time.Now()) || !strings.Contains(string(r[0].body), `"type":"video.failed"`) {
		t.Fatalf("received %+v", r)
	}
	if _, err := e.svc.Test(context.Background(), "other", ep.ID, []byte(`{"event_type":"video.failed"}`)); err == nil {
		t.Fatal("another tenant tested the endpoint")
	}
}

// An event is durable with the state change: written while no process runs deliveries (the
// one that committed it died before sending), it is sent by the next engine to start.
func TestEventWrittenBeforeAnyEngineRunsIsDeliveredLater(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, nil)
	db := testkit.SQLite(t)
	cat := catalog.Demo()
	tn, _ := cat.Tenant("demo")
	tn.WebhooksSetting = catalog.Webhooks{Enabled: true}
	roots := rc.ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	svc := &Service{Store: db, Catalogs: catalog.Static(cat), Schedule: &fast,
		Client: testkit.LoopbackFetch(t, roots, testkit.Names{"example.com": "127.0.0.1"}),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	ep, err := svc.Create(context.Background(), "demo", 1, []byte(`{"name":"n","url":"`+rc.url("/")+`","event_types":["video.completed"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var id string
	if err := db.Transact(context.Background(), func(tx store.Tx) (err error) {
		id, err = svc.Announce(context.Background(), tx, Event{TenantID: "demo", Type: VideoCompleted, ObjectID: "video_1", At: time.Now()})
		return err
	}); err != nil || id == "" {
		t.Fatalf("announce: %q, %v", id, err)
	}
	if n := len(rc.requests()); n != 0 {
		t.Fatalf("%d requests before any engine ran", n)
	}
	e := jobs.New(jobs.Config{Store: db, Logger: svc.Logger})
	for _, k := range svc.Kinds() {
		if err := e.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	testkit.WaitFor(t, 5*time.Second, "the delivery", func() bool { return len(rc.requests()) == 1 })
	r := rc.requests()[0]
	if r.header.Get("webhook-id") != id || !verify(ep.SigningSecret, r.header, r.body, time.Now()) {
		t.Fatalf("delivered %v", r.header)
	}
}

// An answer's size never matters, only its status: a 2xx with a large body is delivered and
// at most maxAnswerBytes of it read. A receiver that never answers is a failed attempt after
// the timeout, retried with the same webhook-id.
func TestAnswerSizeIgnoredAndSilenceTimesOut(t *testing.T) {
	t.Parallel()
	big := newReceiver(t, func(n int, w http.ResponseWriter) bool {
		w.Header().Set("Content-Length", strconv.Itoa(1<<20))
		_, _ = w.Write(make([]byte, 1<<20))
		return true
	})
	e := newEnv(t, big, fast)
	ep := e.create(big.url("/"))
	id := e.announce(VideoCompleted, "v")
	if d := e.deliveries(t, id, ep.ID); d.Status != store.DeliveryDelivered {
		t.Fatalf("a 200 with a 1 MiB body: %+v", d)
	}

	release := make(chan struct{})
	silent := newReceiver(t, func(n int, w http.ResponseWriter) bool {
		if n == 1 {
			<-release // never answers within the attempt's timeout
		}
		return true
	})
	t.Cleanup(func() { close(release) }) // after the receiver's Close in cleanup order: LIFO
	e2 := newEnv(t, silent, fast)
	e2.svc.Timeout = 200 * time.Millisecond
	ep2 := e2.create(silent.url("/"))
	id2 := e2.announce(VideoCompleted, "v")
	d := e2.deliveries(t, id2, ep2.ID)
	log, _ := e2.db.WebhookAttempts(context.Background(), d.ID)
	if d.Status != store.DeliveryDelivered || len(log) != 2 || !strings.Contains(log[0].Error, "did not answer in time") || log[0].StatusCode != 0 {
		t.Fatalf("delivery %+v, log %+v", d, log)
	}
	r := silent.requests()
	if len(r) != 2 || r[0].header.Get("webhook-id") != r[1].header.Get("webhook-id") {
		t.Fatalf("requests %d", len(r))
	}
}

// A slow endpoint holds at most PerEndpoint of the workers: more of its deliveries wait
// without an attempt, and all are delivered in the end.
func TestSlowEndpointHoldsAtMostItsBound(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var now, peak int
	rc := newReceiver(t, func(n int, w http.ResponseWriter) bool {
		mu.Lock()
		now++
		peak = max(peak, now)
		mu.Unlock()
		time.Sleep(100 * time.Millisecond) // the slow receiver's own pace
		mu.Lock()
		now--
		mu.Unlock()
		return true
	})
	e := newEnv(t, rc, fast)
	ep := e.create(rc.url("/"))
	var ids []string
	for i := range 12 {
		ids = append(ids, e.announce(VideoCompleted, "v"+strconv.Itoa(i)))
	}
	for _, id := range ids {
		if d := e.deliveries(t, id, ep.ID); d.Status != store.DeliveryDelivered || d.Attempts != 1 {
			t.Fatalf("delivery %+v", d)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if peak > PerEndpoint || peak < 2 {
		t.Fatalf("%d attempts at once; want 2 to %d", peak, PerEndpoint)
	}
}
