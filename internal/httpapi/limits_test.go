package httpapi

import (
	"context"
	"errors"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/limits"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
	"mediagen/internal/video"
)

// limitedCatalog is the test catalog with a catalog-wide limits block: every limit the block
// does not set is unlimited, so each test sees only the limit it is about.
func limitedCatalog(t testing.TB, key, tenant map[string]string) *catalog.Catalog {
	t.Helper()
	base, err := os.ReadFile("testdata/catalog.yaml")
	if err != nil {
		t.Fatal(err)
	}
	block := func(name string, fields []string, set map[string]string) string {
		s := "  " + name + ":\n"
		for _, f := range fields {
			v, ok := set[f]
			if !ok {
				if f == "burst" {
					continue
				}
				v = "unlimited"
			}
			s += "    " + f + ": " + v + "\n"
		}
		return s
	}
	src := "limits:\n" +
		block("key", []string{"requests_per_second", "burst", "concurrent_requests", "video_tasks_in_flight", "speech_in_flight",
			"asset_ingests_in_flight"}, key) +
		block("tenant", []string{"requests_per_second", "burst", "video_tasks_in_flight", "speech_in_flight",
			"asset_ingests_in_flight"}, tenant) +
		string(base)
	c, err := catalog.Parse("limited.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newLimitedVideoEnv is a video test server on a catalog with the given limits and a
// limiter on a clock that stands still until the test moves it.
func newLimitedVideoEnv(t *testing.T, cat *catalog.Catalog) (*videoEnv, *testkit.Clock) {
	t.Helper()
	e := newVideoEnv(t, "acme")
	e.srv.catalogs = catalog.Static(cat)
	clk := testkit.NewClock(time.Now()) // stands still until the test moves it
	e.srv.limiter = limits.New(clk.Now, 1)
	return e, clk
}

const fastBody = `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5,"resolution":"720p","ratio":"16:9","client_request_id":"%s"}}`

func createBody(crid string) string { return strings.Replace(fastBody, "%s", crid, 1) }

// noTask fails the test if the key has a task for the client_request_id.
func (e *videoEnv) noTask(t *testing.T, k store.Key, crid string) {
	t.Helper()
	if task, err := e.store.TaskByRequestID(context.Background(), k.ID, crid); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused request left task %+v (%v)", task, err)
	}
}

func wantRetryAfter(t *testing.T, r response, want string) {
	t.Helper()
	if got := r.header.Get("Retry-After"); got != want {
		t.Errorf("Retry-After = %q, want %q", got, want)
	}
}

func (e *testEnv) metric(t *testing.T, series string) string {
	t.Helper()
	r := e.do("GET", "/metrics", nil, "")
	for _, line := range strings.Split(string(r.body), "\n") {
		if name, v, ok := strings.Cut(line, " "); ok && name == series {
			return v
		}
	}
	t.Fatalf("no series %s in /metrics", series)
	return ""
}

func TestRateLimitAnswers429BeforeTheBodyAndWritesNothing(t *testing.T) {
	t.Parallel()
	e, clk := newLimitedVideoEnv(t, limitedCatalog(t, map[string]string{"requests_per_second": "0.5", "burst": "2"}, nil))
	for _, crid := range []string{"r1", "r2"} {
		if r := e.post(e.key, createBody(crid)); r.status != 202 {
			t.Fatalf("create %s within the burst: %d %s", crid, r.status, r.body)
		}
	}
	before := e.balance(e.keyRec)
	r := e.post(e.key, createBody("r3"))
	checkEnvelope(t, r, 429, "rate_limit_error", "rate_limit_exceeded")
	wantRetryAfter(t, r, "2") // one token at 0.5/s
	e.noTask(t, e.keyRec, "r3")
	if after := e.balance(e.keyRec); after != before {
		t.Errorf("balance moved for a refused create: %+v -> %+v", before, after)
	}
	// The check comes before the body is read: a body that would be a 400 is a 429.
	checkEnvelope(t, e.post(e.key, `{not json`), 429, "rate_limit_error", "rate_limit_exceeded")
	// Every authenticated route shares the key's bucket.
	checkEnvelope(t, e.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer " + e.key}, ""),
		429, "rate_limit_error", "rate_limit_exceeded")
	// Another key of the tenant has its own bucket.
	other, _ := e.newKey("acme", startCredit, false)
	if r := e.post(other, createBody("o1")); r.status != 202 {
		t.Errorf("another key refused: %d %s", r.status, r.body)
	}
	if got := e.metric(t, `mediagen_rate_limited_total{limit="rate",scope="key"}`); got != "3" {
		t.Errorf("key rate refusals counted %s, want 3", got)
	}
	clk.Advance(2 * time.Second)
	if r := e.post(e.key, createBody("r3")); r.status != 202 {
		t.Errorf("refused after Retry-After: %d %s", r.status, r.body)
	}
}

func TestTenantRateLimitIsSharedByItsKeys(t *testing.T) {
	t.Parallel()
	e, _ := newLimitedVideoEnv(t, limitedCatalog(t, nil, map[string]string{"requests_per_second": "1", "burst": "2"}))
	second, secondRec := e.newKey("acme", startCredit, false)
	if r := e.post(e.key, createBody("a1")); r.status != 202 {
		t.Fatal(r.status, string(r.body))
	}
	if r := e.post(second, createBody("b1")); r.status != 202 {
		t.Fatal(r.status, string(r.body))
	}
	r := e.post(second, createBody("b2"))
	checkEnvelope(t, r, 429, "rate_limit_error", "rate_limit_exceeded")
	wantRetryAfter(t, r, "1")
	e.noTask(t, secondRec, "b2")
	if !strings.Contains(string(r.body), "account") {
		t.Errorf("message does not say the account's keys together are limited: %s", r.body)
	}
	if got := e.metric(t, `mediagen_rate_limited_total{limit="rate",scope="tenant"}`); got != "1" {
		t.Errorf("tenant rate refusals counted %s, want 1", got)
	}
	// Another tenant is not affected.
	lim, _ := e.newKey("limited", startCredit, false)
	if r := e.do("GET", "/v1/billing/balance", map[string]string{"Authorization": "Bearer " + lim}, ""); r.status != 200 {
		t.Errorf("another tenant refused: %d", r.status)
	}
}

// finishTask fails one queued task of the store as a worker would, settling its reservation.
func (e *videoEnv) finishTask(t *testing.T) {
	t.Helper()
	ctx := t.Context()
	claimed, err := e.store.ClaimJobs(ctx, video.TaskKind, "", time.Now().Add(time.Hour), time.Minute, 1, nil)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("claim: %d %v", len(claimed), err)
	}
	j := claimed[0]
	c, err := e.store.TaskRun(ctx, j.Ref)
	if err != nil {
		t.Fatal(err)
	}
	err = e.store.Transact(ctx, func(tx store.Tx) error {
		if err := tx.UpdateJob(ctx, store.JobUpdate{ID: j.ID, Token: j.Token, Done: true}); err != nil {
			return err
		}
		if err := tx.AdvanceTask(ctx, store.Advance{ID: c.ID, Status: store.StatusFailed, FinishedAt: time.Now()}); err != nil {
			return err
		}
		_, err := billing.Settle(ctx, tx, c.KeyID, c.ID, c.Reserved, 0, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestVideoTasksInFlightLimitRefusesWithoutWriting(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		key, tenant map[string]string
		second      bool // the third create comes from a second key of the tenant
		scope       string
	}{
		{"key limit", map[string]string{"video_tasks_in_flight": "2"}, nil, false, "key"},
		{"tenant limit across keys", nil, map[string]string{"video_tasks_in_flight": "2"}, true, "tenant"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, _ := newLimitedVideoEnv(t, limitedCatalog(t, tt.key, tt.tenant))
			for _, crid := range []string{"r1", "r2"} {
				if r := e.post(e.key, createBody(crid)); r.status != 202 {
					t.Fatalf("create %s: %d %s", crid, r.status, r.body)
				}
			}
			key, rec := e.key, e.keyRec
			if tt.second {
				key, rec = e.newKey("acme", startCredit, false)
			}
			before := e.balance(rec)
			r := e.post(key, createBody("r3"))
			checkEnvelope(t, r, 429, "rate_limit_error", "too_many_tasks_in_flight")
			wantRetryAfter(t, r, "5")
			e.noTask(t, rec, "r3")
			if after := e.balance(rec); after != before {
				t.Errorf("balance moved for a refused create: %+v -> %+v", before, after)
			}
			if got := e.metric(t, `mediagen_rate_limited_total{limit="in_flight",scope="`+tt.scope+`"}`); got != "1" {
				t.Errorf("in-flight refusals counted %s, want 1", got)
			}
			// A replay of an accepted task is answered, not refused: it adds no work.
			if r := e.post(e.key, createBody("r1")); r.status != 202 {
				t.Errorf("replay refused: %d %s", r.status, r.body)
			}
			// When a task finishes, its slot is free again.
			e.finishTask(t)
			if r := e.post(key, createBody("r3")); r.status != 202 {
				t.Errorf("refused after a task finished: %d %s", r.status, r.body)
			}
			checkEnvelope(t, e.post(key, createBody("r4")), 429, "rate_limit_error", "too_many_tasks_in_flight")
		})
	}
}

func TestConcurrentRequestsPerKeyRefusedWhileOthersRun(t *testing.T) {
	t.Parallel()
	e, _ := newLimitedVideoEnv(t, limitedCatalog(t, map[string]string{"concurrent_requests": "2"}, nil))
	entered, release := make(chan struct{}, 2), make(chan struct{})
	e.srv.handle("GET /test/hold", e.srv.auth(func(w http.ResponseWriter, r *http.Request) error {
		entered <- struct{}{}
		select {
		case <-release:
		case <-time.After(10 * time.Second):
		}
		writeJSON(w, 200, map[string]string{"ok": "yes"})
		return nil
	}))
	auth := map[string]string{"Authorization": "Bearer " + e.key}
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r := e.do("GET", "/test/hold", auth, ""); r.status != 200 {
				t.Errorf("held request: %d %s", r.status, r.body)
			}
		}()
	}
	for i := 0; i < 2; i++ {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatal("held requests did not start")
		}
	}
	r := e.post(e.key, createBody("c1"))
	checkEnvelope(t, r, 429, "rate_limit_error", "too_many_concurrent_requests")
	wantRetryAfter(t, r, "1")
	e.noTask(t, e.keyRec, "c1")
	close(release)
	wg.Wait()
	if r := e.post(e.key, createBody("c1")); r.status != 202 {
		t.Errorf("refused after the others ended: %d %s", r.status, r.body)
	}
}

func TestDefaultLimitsLetTheDemoFlowThrough(t *testing.T) {
	t.Parallel()
	// The demo catalog (the defaults) admits a burst of 200 requests of one key at once.
	e := newTestEnvWith(t, catalog.Demo(), &video.Service{}, DefaultMaxBodyBytes)
	secret, _ := e.newKey("demo", startCredit, false)
	auth := map[string]string{"Authorization": "Bearer " + secret}
	for i := 0; i < int(catalog.DefaultLimits().Key.Burst); i++ {
		if r := e.do("GET", "/v1/billing/balance", auth, ""); r.status != 200 {
			t.Fatalf("request %d: %d %s", i+1, r.status, r.body)
		}
	}
}

func TestSpeechInFlightLimitRefusesWithoutWriting(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t)
	se.srv.catalogs = catalog.Static(limitedCatalog(t, map[string]string{"speech_in_flight": "1"}, nil))
	ctx := t.Context()
	// A generation of the key still running (as on another replica): its record is pending.
	now := time.Now().UTC()
	running := store.Speech{ID: "speech_running", KeyID: se.keyRec.ID, TenantID: "acme", Model: "acme-speech",
		Status: store.SpeechPending, PayloadHash: []byte{1}, Request: []byte(`{}`), Pricing: []byte(`{}`),
		AttemptToken: "att", AttemptUntil: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now}
	if err := se.store.Transact(ctx, func(tx store.Tx) error { return tx.CreateSpeech(ctx, running) }); err != nil {
		t.Fatal(err)
	}
	r := se.post(se.key, spBody(`"input":"Hello there."`, `{"client_request_id":"s1"}`))
	decodeErr(t, r, 429, "rate_limit_error", "too_many_speech_in_flight", "")
	wantRetryAfter(t, r, "2")
	if b := se.balance(); b.Available != startCredit || b.Reserved != 0 || b.Used != 0 {
		t.Errorf("balance moved for a refused speech: %+v", b)
	}
	if rec, err := se.store.SpeechByRequestID(ctx, se.keyRec.ID, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused speech left a record: %+v %v", rec, err)
	}
	if n := se.engine.calls.Load(); n != 0 {
		t.Errorf("the engine was called %d times for a refused speech", n)
	}
	err := se.store.Transact(ctx, func(tx store.Tx) error {
		return tx.FinishSpeech(ctx, store.SpeechFinish{ID: running.ID, Token: "att", Status: store.SpeechFailed, FinishedAt: now})
	})
	if err != nil {
		t.Fatal(err)
	}
	decodeSpeech(t, se.post(se.key, spBody(`"input":"Hello there."`, `{"client_request_id":"s1"}`)))
}
