package speech

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/catalog"
	"mediagen/internal/keys"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider"
	"mediagen/internal/provider/openai"
	"mediagen/internal/provider/openai/openaifake"
	"mediagen/internal/provider/rest"
	"mediagen/internal/routing"
	"mediagen/internal/store"
	"mediagen/internal/store/storetest"
)

const routedCatalog = `upstreams:
  - name: openai-a
    kind: openai
    base_url: https://api.openai.com/v1
    api_key_env: OPENAI_A_KEY
  - name: openai-b
    kind: openai
    base_url: https://api.openai.com/v1
    api_key_env: OPENAI_B_KEY
  - name: local-speech
    kind: espeak
    cost: {currency: USD, per_character: 0.00001}
tenants:
  - id: demo
    name: Demo
    currency: USD
    aliases:
      - alias: routed-speech
        product: speech
        upstreams: [openai-a, local-speech]
        model: tts-1
      - alias: both-down
        product: speech
        upstreams: [openai-a, openai-b]
        model: tts-1
      - alias: refusing
        product: speech
        upstreams: [openai-b, local-speech]
        model: tts-1
    rates:
      speech: 0.0002
`

const fakeKey = "sk-fake-right"

// routedEnv is newEnv (the sandbox engine, counted) with the routed catalog: openai-a's key
// is refused by the fake OpenAI API (401), openai-b's is accepted, local-speech is the
// sandbox's espeak path.
func routedEnv(t *testing.T) (*env, *openaifake.Server, *atomic.Int64) {
	t.Helper()
	e := newEnv(t)
	cat, err := catalog.Parse("routed.yaml", []byte(routedCatalog))
	if err != nil {
		t.Fatal(err)
	}
	tenant, _ := cat.Tenant("demo")
	e.caller = keys.Caller{Key: e.caller.Key, Tenant: tenant, Catalog: cat}
	mp3 := filepath.Join(t.TempDir(), "fake.mp3")
	if err := (ffmpeg.Tools{}).Speak(context.Background(), "Hello from the fake", mp3, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	fake := openaifake.Start(openaifake.Config{Key: fakeKey, Speech: mp3, Clip: mp3})
	t.Cleanup(func() {
		for _, v := range fake.Violations() {
			t.Errorf("wire format: %s", v)
		}
		fake.Close()
	})
	client := func(key string) provider.Synthesizer {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = fake.TLS()
		c, err := openai.New(openai.Config{BaseURL: fake.Base(), APIKey: key, HTTP: &http.Client{Transport: tr, Timeout: 5 * time.Second}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	local := e.svc.Engines["sandbox"]
	refused := &atomic.Int64{}
	e.svc.Engines = map[string]provider.Synthesizer{"openai-a": counting{client("sk-refused"), refused}, "openai-b": client(fakeKey), "local-speech": local}
	e.svc.Accounts = cat.Upstream
	e.svc.Router = &routing.Router{}
	return e, fake, refused
}

func (e *env) record(id string) store.Speech {
	e.t.Helper()
	rec, err := e.db.Speech(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

func (e *env) story(id string) []string {
	e.t.Helper()
	events, err := e.db.SpeechEvents(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []string
	for _, ev := range events {
		out = append(out, strings.TrimSpace(ev.To+" "+ev.Step+" "+ev.Upstream+" "+ev.Detail))
	}
	return out
}

// An alias over openai-a (its key refused: 401) and local-speech: the request runs on
// local-speech inside the same wait, the record names local-speech (its request, its finish
// event), the route event names openai-a and why, the reservation used the larger bound of
// the two (openai's) and the ledger balances.
func TestRoutedSpeechFailsOverARefusedKeyToTheNextAccount(t *testing.T) {
	t.Parallel()
	e, _, refused := routedEnv(t)
	text := "Routed to the second account."
	res, err := e.svc.Create(context.Background(), e.caller, []byte(`{"model":"routed-speech","input":"`+text+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.calls.Load() != 1 || refused.Load() != 1 {
		t.Fatalf("local calls %d, refused account's calls %d: want one each", e.calls.Load(), refused.Load())
	}
	rec := e.record(res.ID)
	larger, _ := Estimate("USD", 200, OpenAIBound, text)
	smaller, _ := Estimate("USD", 200, EspeakBound, text)
	if rec.Reserved != larger.Amount || larger.Amount <= smaller.Amount {
		t.Errorf("reserved %s, want the larger bound's %s (espeak's %s)", rec.Reserved, larger.Amount, smaller.Amount)
	}
	if !strings.Contains(string(rec.Request), `"upstream":"local-speech"`) || rec.Status != store.SpeechCompleted || rec.Charged <= 0 {
		t.Errorf("record %s, request %s", rec.Status, rec.Request)
	}
	want := []string{"pending", "pending route openai-a left openai-a: its key was refused (401/403)", "completed  local-speech"}
	if got := e.story(res.ID); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("events\n%q\nwant\n%q", got, want)
	}
	if b := e.balance(); b.Reserved != 0 {
		t.Errorf("balance after settlement %+v", b)
	}
	// Usage and the operator's cost count on the account it ran on.
	hour := time.Now().UTC().Truncate(time.Hour)
	rows, err := e.db.UsageReport(context.Background(), store.UsageQuery{From: hour.Add(-time.Hour), To: hour.Add(2 * time.Hour), GroupBy: []string{store.UsageByUpstream}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Upstream != "local-speech" || rows[0].CostCurrency != "USD" || rows[0].Cost != money.Micros(10*len(text)) {
		t.Errorf("usage by upstream %+v, want one local-speech row costing %d", rows, 10*len(text))
	}
	// The refused account is avoided now: the next request goes straight to local-speech.
	res2, err := e.svc.Create(context.Background(), e.caller, []byte(`{"model":"routed-speech","input":"Again."}`))
	if err != nil {
		t.Fatal(err)
	}
	if refused.Load() != 1 {
		t.Errorf("the refused account was called again: %d calls", refused.Load())
	}
	if got := e.story(res2.ID); len(got) != 3 || !strings.Contains(got[1], "openai-a skipped openai-a: key refused (401/403)") {
		t.Errorf("second request's events %q", got)
	}
	storetest.CheckLedger(t, e.db)
}

// A request refused for its content is not retried on the next account: it fails as a
// one-account request does, refunded in full, and names the account that refused it.
func TestRoutedSpeechRefusedForContentIsNotRetried(t *testing.T) {
	t.Parallel()
	e, fake, _ := routedEnv(t)
	res, err := e.svc.Create(context.Background(), e.caller, []byte(`{"model":"refusing","input":"[refuse] this text"}`))
	var ae *apierr.Error
	if res != nil || !errors.As(err, &ae) || ae.Kind != apierr.KindUpstream {
		t.Fatalf("refused request: %v, %v", res, err)
	}
	if e.calls.Load() != 0 || len(fake.Speeches()) != 1 {
		t.Fatalf("local calls %d, fake calls %d: the refusal moved to another account", e.calls.Load(), len(fake.Speeches()))
	}
	if b := e.balance(); b.Reserved != 0 || b.Available != 10_000_000 {
		t.Errorf("balance after the refusal %+v", b)
	}
	storetest.CheckLedger(t, e.db)
}

// Both accounts refuse their keys: the request fails as a one-account one does (the last
// account's error), refunded, with both accounts in its events.
func TestRoutedSpeechBothAccountsDownFailsRefunded(t *testing.T) {
	t.Parallel()
	e, _, refused := routedEnv(t)
	e.svc.Engines["openai-b"] = e.svc.Engines["openai-a"] // both refused
	_, err := e.svc.Create(context.Background(), e.caller, []byte(`{"model":"both-down","input":"Nobody can say this.","metadata":{"client_request_id":"down-1"}}`))
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Kind != apierr.KindUpstream {
		t.Fatalf("both down: %v", err)
	}
	if refused.Load() != 2 {
		t.Errorf("refused calls %d, want one per account", refused.Load())
	}
	rec, err := e.db.SpeechByRequestID(context.Background(), e.caller.Key.ID, "down-1")
	if err != nil || rec.Status != store.SpeechFailed || rec.Charged != 0 {
		t.Fatalf("record %+v, %v", rec, err)
	}
	got := e.story(rec.ID)
	if len(got) != 4 || !strings.Contains(got[1], "route openai-a left openai-a: its key was refused") || !strings.Contains(got[2], "route openai-b left openai-b: its key was refused") || !strings.HasPrefix(got[3], "failed  openai-b") {
		t.Errorf("events %q", got)
	}
	if b := e.balance(); b.Reserved != 0 || b.Available != 10_000_000 {
		t.Errorf("balance after the failure %+v", b)
	}
	storetest.CheckLedger(t, e.db)
}

// failing is an account whose every call fails with err.
type failing struct {
	err   error
	calls *atomic.Int64
}

func (f failing) Synthesize(context.Context, provider.SpeechRequest) (provider.Speech, error) {
	f.calls.Add(1)
	return provider.Speech{}, f.err
}

// A 5xx (transient, nothing made) moves the request to the next account after one retry on
// the account, and a 429 at once with no retry there, inside the wait; a transient failure
// counts on the account's breaker, which opens after its failures in a row and is then
// skipped; a 429 avoids the account for its Retry-After. The second request never calls the
// failing account: the first one's 5xx made one call and its retry, a 429 one call.
func TestRoutedSpeechMovesOnAfterTransientFailuresAndRateLimits(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, left, skipped string
		err                 error
		calls               int64
	}{
		{"a 5xx", "left openai-a: failed, nothing made", "skipped openai-a: breaker open",
			fmt.Errorf("openai: HTTP 503: %w", provider.ErrTransient), 2},
		{"a 429", "left openai-a: rate-limited (429, Retry-After 1m0s)", "skipped openai-a: rate-limited (429)",
			errors.Join(&rest.StatusError{Call: "POST /audio/speech", Status: http.StatusTooManyRequests}, &provider.RetryAfter{After: time.Minute}, provider.ErrTransient), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e, _, _ := routedEnv(t)
			calls := &atomic.Int64{}
			e.svc.Engines["openai-a"] = failing{c.err, calls}
			e.svc.Router = &routing.Router{Policy: func(string) (int, time.Duration) { return 1, time.Minute }}
			for i := range 2 {
				res, err := e.svc.Create(context.Background(), e.caller, []byte(`{"model":"routed-speech","input":"Moved on."}`))
				if err != nil {
					t.Fatal(err)
				}
				got := e.story(res.ID)
				want := "pending route openai-a " + c.left
				if i == 1 {
					want = "pending route openai-a " + c.skipped
				}
				if len(got) != 3 || !strings.HasPrefix(got[1], want) || got[2] != "completed  local-speech" {
					t.Errorf("request %d events %q, want %q then completed on local-speech", i, got, want)
				}
			}
			if calls.Load() != c.calls || e.calls.Load() != 2 {
				t.Errorf("failing account called %d times, want %d; local %d, want 2", calls.Load(), c.calls, e.calls.Load())
			}
			storetest.CheckLedger(t, e.db)
		})
	}
}
