package httpapi

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/store/storetest"
)

// setCaps gives an existing key spend caps.
func setCaps(t testing.TB, s store.Store, k store.Key, caps store.Caps) store.Key {
	t.Helper()
	ctx := context.Background()
	var after store.Key
	err := s.Transact(ctx, func(tx store.Tx) (err error) {
		_, after, err = keys.Update(ctx, tx, k.ID, keys.Changes{Daily: &caps.Daily, Monthly: &caps.Monthly}, time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return after
}

// clockEnv is a server on a clock the test moves, with a key cache whose TTL outlives the
// events the test moves the clock across.
func clockEnv(t *testing.T, ttl time.Duration) (*testEnv, *atomic.Int64) {
	t.Helper()
	db := openTestStore(t, "sqlite")
	var clock atomic.Int64
	clock.Store(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	s := New(Config{Store: db, Catalog: catalog.Demo(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: now, KeyCacheTTL: ttl})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return &testEnv{t: t, srv: s, ts: ts, store: db}, &clock
}

func bearer(secret string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + secret}
}

func errMessage(t *testing.T, r response) string {
	t.Helper()
	var env struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("envelope: %v: %s", err, r.body)
	}
	return env.Error.Message
}

// An expired key answers 401 expired_api_key saying when, at its expiry to the microsecond,
// although the key cache still holds it.
func TestExpiredKeyAnswers401AtItsExpiryEvenCached(t *testing.T) {
	t.Parallel()
	e, clock := clockEnv(t, time.Hour)
	secret, k := e.newKey("demo", 0, false)
	expiry := time.Unix(0, clock.Load()).Add(30 * time.Minute)
	ctx := t.Context()
	if err := e.store.Transact(ctx, func(tx store.Tx) error {
		_, _, err := keys.Update(ctx, tx, k.ID, keys.Changes{ExpiresAt: &expiry}, time.Unix(0, clock.Load()))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if r := e.do("GET", "/v1/billing/balance", bearer(secret), ""); r.status != 200 {
		t.Fatalf("before the expiry: %d %s", r.status, r.body)
	}
	clock.Store(expiry.Add(-time.Microsecond).UnixNano())
	if r := e.do("GET", "/v1/billing/balance", bearer(secret), ""); r.status != 200 {
		t.Fatalf("a microsecond before the expiry: %d %s", r.status, r.body)
	}
	clock.Store(expiry.UnixNano())
	r := e.do("GET", "/v1/billing/balance", bearer(secret), "")
	checkEnvelope(t, r, 401, "authentication_error", "expired_api_key")
	if msg := errMessage(t, r); !strings.Contains(msg, "expired at "+expiry.UTC().Format(time.RFC3339)) {
		t.Errorf("message %q does not say when it expired", msg)
	}
}

// After a rotation the old secret works for the grace period and then answers 401 saying it
// was rotated; the new secret works throughout; a rotation without grace stops the old
// secret at once.
func TestRotatedSecretWorksOnlyInsideItsGrace(t *testing.T) {
	t.Parallel()
	e, clock := clockEnv(t, 2*time.Second)
	old, k := e.newKey("demo", 0, false)
	at := func() time.Time { return time.Unix(0, clock.Load()).UTC() }
	ctx := t.Context()
	rotate := func(grace time.Duration) string {
		t.Helper()
		var secret string
		if err := e.store.Transact(ctx, func(tx store.Tx) (err error) {
			secret, _, _, err = keys.Rotate(ctx, tx, k.ID, grace, at())
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return secret
	}
	start := at()
	fresh := rotate(time.Hour)
	for _, step := range []struct {
		at      time.Duration
		secret  string
		code    string
		mention string
	}{
		{0, old, "", ""},
		{0, fresh, "", ""},
		{time.Hour - time.Millisecond, old, "", ""},
		{time.Hour, old, "expired_api_key", "rotated at " + start.Format(time.RFC3339)},
		{time.Hour, fresh, "", ""},
	} {
		clock.Store(start.Add(step.at).UnixNano())
		r := e.do("GET", "/v1/billing/balance", bearer(step.secret), "")
		if step.code == "" {
			if r.status != 200 {
				t.Fatalf("+%v: %d %s", step.at, r.status, r.body)
			}
			continue
		}
		checkEnvelope(t, r, 401, "authentication_error", step.code)
		if msg := errMessage(t, r); !strings.Contains(msg, step.mention) {
			t.Errorf("+%v: message %q lacks %q", step.at, msg, step.mention)
		}
	}
	// No grace: the secret just replaced stops at once (past the cache's TTL since its last use).
	clock.Add(int64(time.Minute))
	newest := rotate(0)
	checkEnvelope(t, e.do("GET", "/v1/billing/balance", bearer(fresh), ""), 401, "authentication_error", "expired_api_key")
	if r := e.do("GET", "/v1/billing/balance", bearer(newest), ""); r.status != 200 {
		t.Fatalf("newest secret: %d %s", r.status, r.body)
	}
	// Same key: same id and balance answer.
	if got, err := e.store.KeyByHash(ctx, keys.Hash(newest)); err != nil || got.ID != k.ID {
		t.Fatalf("the newest secret finds %+v, %v", got, err)
	}
}

// assertCapRefused checks a 402 spend_cap_exceeded with nothing written: no task or record, no
// ledger transaction.
func assertCapRefused(t *testing.T, s store.Store, r response, k store.Key, before store.Balance, reservations int, kind string) {
	t.Helper()
	checkEnvelope(t, r, 402, "insufficient_balance", "spend_cap_exceeded")
	if msg := errMessage(t, r); !strings.Contains(msg, kind+" spend cap") || !strings.Contains(msg, "resets at ") {
		t.Errorf("message %q does not name the %s cap and its reset", msg, kind)
	}
	ctx := context.Background()
	if _, err := s.TaskByRequestID(ctx, k.ID, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a task was stored: %v", err)
	}
	if _, err := s.SpeechByRequestID(ctx, k.ID, "r"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a speech record was stored: %v", err)
	}
	if b, _ := s.Balance(ctx, k.ID); b.Available != before.Available || b.Reserved != before.Reserved {
		t.Errorf("money moved: %+v, before %+v", b, before)
	}
	if en, _ := s.Entries(ctx, store.AccountID(k.ID, store.AccountReserved)); len(en) != reservations {
		t.Errorf("ledger entries on the reserved account: %v, want the %d of earlier requests", en, reservations)
	}
	storetest.CheckLedger(t, s)
}

// Every video route that reserves money checks the caps before writing anything.
func TestEveryVideoRouteRefusesOverTheCap(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		route, body string
	}{
		{"native", `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5,"resolution":"720p","ratio":"16:9","client_request_id":"r"}}`},
		{"production", `{"model":"acme-production-lite","prompt":"a cat","metadata":{"resolution":"1080p","client_request_id":"r"}}`},
		{"enhancement", `{"model":"acme-enhance-lite","metadata":{"video_url":"http://media.example/a.mp4","duration":5.5,"resolution_limit":720,"fps":60,"client_request_id":"r"}}`},
	} {
		t.Run(tt.route, func(t *testing.T) {
			t.Parallel()
			e := newVideoEnv(t, "acme")
			// Every reservation here is above 0.05; an unlimited key is capped all the same.
			_, unl := e.newKey("acme", 0, true)
			for _, k := range []store.Key{e.keyRec, unl} {
				before := e.balance(k)
				k = setCaps(t, e.store, k, store.Caps{Daily: money.CapOf(50_000)})
				secret := e.key
				if k.Unlimited {
					secret = "" // made below
				}
				if secret == "" {
					var fresh string
					if err := e.store.Transact(t.Context(), func(tx store.Tx) (err error) {
						fresh, _, _, err = keys.Rotate(t.Context(), tx, k.ID, 0, time.Now())
						return err
					}); err != nil {
						t.Fatal(err)
					}
					secret = fresh
				}
				assertCapRefused(t, e.store, e.post(secret, tt.body), k, before, 0, "daily")
			}
		})
	}
}

// A tenant's cap (catalog spend_caps) binds its keys together, monthly here.
func TestTenantMonthlyCapRefusesWithThe402(t *testing.T) {
	t.Parallel()
	cat := testCatalog(t)
	acme, _ := cat.Tenant("acme")
	acme.SpendCaps.Monthly = catalog.Cap{Cap: money.CapOf(200_000)}
	e := newTestEnvWith(t, cat, nil, DefaultMaxBodyBytes)
	secret, k := e.newKey("acme", startCredit, false)
	native := `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5,"resolution":"720p","ratio":"16:9","client_request_id":"%s"}}`
	post := func(id string) response {
		return e.do("POST", "/v1/videos", map[string]string{"Authorization": "Bearer " + secret, "Content-Type": "application/json"},
			strings.Replace(native, "%s", id, 1))
	}
	if r := post("first"); r.status != 202 { // 0.13608 of 0.20
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	before, _ := e.store.Balance(t.Context(), k.ID)
	r := post("r")
	assertCapRefused(t, e.store, r, k, before, 1, "monthly")
	if msg := errMessage(t, r); !strings.Contains(msg, "account's") {
		t.Errorf("a tenant cap's message %q does not say it is the account's", msg)
	}
}

// Speech reserves too: over the cap it is a 402 with no record and no engine call.
func TestSpeechRefusesOverTheCap(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t)
	setCaps(t, se.store, se.keyRec, store.Caps{Monthly: money.CapOf(1)})
	before := se.balance()
	r := se.post(se.key, spBody(`"input":"Hello."`, `{"client_request_id":"r"}`))
	assertCapRefused(t, se.store, r, se.keyRec, before, 0, "monthly")
	if n := se.engine.calls.Load(); n != 0 {
		t.Errorf("engine calls %d", n)
	}
}

// 50 concurrent POST /v1/videos on one key with a daily cap that holds exactly 7 of their
// reservations: exactly 7 are accepted and 43 answer 402 spend_cap_exceeded, on each store
// (on PostgreSQL the creates share commits, their counter growths merged).
func TestCapExactUnder50ConcurrentRequests(t *testing.T) {
	t.Parallel()
	for _, driver := range []string{"sqlite", "postgres"} {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			// Every other limit unlimited: only the cap refuses.
			e := newTestEnvOn(t, driver, limitedCatalog(t, nil, nil), nil, DefaultMaxBodyBytes)
			secret, k := e.newKey("acme", startCredit, false)
			const reservation = 136_080 // native fast 720p 16:9 5 s
			setCaps(t, e.store, k, store.Caps{Daily: money.CapOf(7*reservation + reservation/2)})
			body := `{"model":"acme-video-fast","prompt":"a cat","metadata":{"duration":5,"resolution":"720p","ratio":"16:9","client_request_id":"c%d"}}`
			var wg sync.WaitGroup
			var accepted, capped atomic.Int64
			for i := range 50 {
				wg.Go(func() {
					r := e.do("POST", "/v1/videos", map[string]string{"Authorization": "Bearer " + secret, "Content-Type": "application/json"},
						strings.Replace(body, "%d", strconv.Itoa(i), 1))
					switch {
					case r.status == 202:
						accepted.Add(1)
					case r.status == 402 && strings.Contains(string(r.body), `"spend_cap_exceeded"`):
						capped.Add(1)
					default:
						t.Errorf("request %d: %d %s", i, r.status, r.body)
					}
				})
			}
			wg.Wait()
			if accepted.Load() != 7 || capped.Load() != 43 {
				t.Errorf("%d accepted and %d refused by the cap, want exactly 7 and 43", accepted.Load(), capped.Load())
			}
			b, _ := e.store.Balance(t.Context(), k.ID)
			if b.Reserved != 7*reservation {
				t.Errorf("reserved %s, want 7 reservations", b.Reserved)
			}
			storetest.CheckLedger(t, e.store)
		})
	}
}
