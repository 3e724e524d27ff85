package httpapi

import (
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/speech"
	"mediagen/internal/store"
	"mediagen/internal/store/storetest"
	"mediagen/internal/testkit"
)

// A text request is generated, stored, measured and charged once: the measured duration of the
// stored audio in microseconds × the rate, to the micro-unit; the reservation is released.
func TestSpeechGeneratesAndChargesMeasuredDuration(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t)
	r := se.post(se.key, spBody(`"input":"Hello from the speech test.","instructions":"Calm and clear."`, `{"client_request_id":"gen-1"}`))
	b := decodeSpeech(t, r)
	if b.Metadata == nil || b.Metadata.ClientRequestID != "gen-1" {
		t.Errorf("metadata %s", r.body)
	}
	charge, us := se.measuredCharge(t, b)
	if us < 500_000 || us > 10_000_000 {
		t.Errorf("implausible duration %d µs", us)
	}
	if bal := se.balance(); bal.Used != charge || bal.Reserved != 0 || bal.Available != startCredit-charge {
		t.Fatalf("balance %+v, want used %s", bal, charge)
	}
	rec, _ := se.store.Speech(t.Context(), b.ID)
	// The reservation is the sandbox engine's bound for the spoken text at 0.0002 per second.
	quote, err := speech.Estimate("USD", 200, speech.EspeakBound, "Hello from the speech test.\nCalm and clear.")
	if err != nil {
		t.Fatal(err)
	}
	want := money.Micros(quote.EstimatedSeconds * 200)
	if rec.Status != store.SpeechCompleted || rec.Reserved != want || rec.Charged != charge || rec.KeyID != se.keyRec.ID {
		t.Errorf("record %+v", rec)
	}
	storetest.CheckLedger(t, se.store)

	// Without client_request_id: no metadata in the answer, and every request is new.
	r1 := decodeSpeech(t, se.post(se.key, spBody(`"input":"One."`, "")))
	r2 := decodeSpeech(t, se.post(se.key, spBody(`"input":"One."`, "")))
	if r1.Metadata != nil || r1.ID == r2.ID || strings.Contains(string(se.post(se.key, spBody(`"input":"One."`, "")).body), "metadata") {
		t.Errorf("no-id requests: %+v %+v", r1, r2)
	}
	if n := se.engine.calls.Load(); n != 4 {
		t.Errorf("engine calls %d, want 4", n)
	}
}

// Replays return the original (same id, a fresh link to the same audio) with no new
// generation or charge; a changed payload under the same id is 409; the id is scoped to the
// key; a retry that arrives while the original runs waits for it.
func TestSpeechIdempotency(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t)
	body := spBody(`"input":"Replay me.","instructions":"Slowly."`, `{"client_request_id":"idem-1"}`)
	first := decodeSpeech(t, se.post(se.key, body))
	after := se.balance()
	// Same payload, different formatting and trimming: the same request.
	same := `{ "metadata": {"client_request_id": "  idem-1 "}, "instructions": " Slowly. ", "input": "Replay me.\n", "model": "acme-speech" }`
	testkit.NextSecond() // a later second, so the link is minted fresh
	again := decodeSpeech(t, se.post(se.key, same))
	if again.ID != first.ID || again.Duration != first.Duration || again.Created != first.Created {
		t.Fatalf("replay %+v, original %+v", again, first)
	}
	key := func(u string) string { return u[:strings.Index(u, "?")] }
	if again.URL == first.URL || key(again.URL) != key(first.URL) || again.URLExpiresAt <= first.URLExpiresAt {
		t.Errorf("replay link %s, original %s: want a fresh link to the same file", again.URL, first.URL)
	}
	if bal := se.balance(); bal != after {
		t.Errorf("replay moved money: %+v → %+v", after, bal)
	}
	if n := se.engine.calls.Load(); n != 1 {
		t.Errorf("engine calls %d, want 1", n)
	}
	// A different payload under the same id is a conflict, and is not charged.
	for _, changed := range []string{
		spBody(`"input":"Replay me!","instructions":"Slowly."`, `{"client_request_id":"idem-1"}`),
		spBody(`"input":"Replay me.\nSlowly."`, `{"client_request_id":"idem-1"}`),
		spBody(`"input":"Replay me.","instructions":"Slowly."`, `{"client_request_id":"idem-1","references":[`+ref("audio_url", se.mediaURL("/voice.mp3"))+`]}`),
	} {
		decodeErr(t, se.post(se.key, changed), 409, "idempotency_error", "idempotency_conflict", "metadata.client_request_id")
	}
	if bal := se.balance(); bal != after {
		t.Errorf("conflict moved money: %+v → %+v", after, bal)
	}
	// The id is scoped to the key: another key with the same id gets its own speech.
	other, otherKey := se.newKey("acme", startCredit, false)
	mine := decodeSpeech(t, se.post(other, body))
	if mine.ID == first.ID {
		t.Fatal("client_request_id shared across keys")
	}
	if b, _ := se.store.Balance(t.Context(), otherKey.ID); b.Used <= 0 {
		t.Errorf("other key not charged: %+v", b)
	}

	// A retry while the original is still generating waits for it and returns its result;
	// so do concurrent duplicates. One record, one generation, one charge.
	calls := se.engine.calls.Load()
	before := se.balance()
	slow := spBody(`"input":"Wait for me. [sandbox:slow=2s]"`, `{"client_request_id":"idem-slow"}`)
	results := make([]speechBody, 4)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range results {
		if i == 1 { // the others arrive once the first is generating
			testkit.WaitFor(t, 10*time.Second, "the original never reached the engine", func() bool { return se.engine.calls.Load() > calls })
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = decodeSpeech(t, se.post(se.key, slow))
		}()
	}
	wg.Wait()
	if d := time.Since(start); d < 2*time.Second {
		t.Errorf("the slow marker did not slow the original (%v)", d)
	}
	for i, r := range results {
		if r.ID != results[0].ID || r.Duration != results[0].Duration {
			t.Errorf("result %d: %+v, want the original %+v", i, r, results[0])
		}
	}
	if n := se.engine.calls.Load() - calls; n != 1 {
		t.Errorf("engine calls %d for one request and its retries, want 1", n)
	}
	charge, _ := se.measuredCharge(t, results[0])
	if bal := se.balance(); bal.Used-before.Used != charge || bal.Reserved != 0 {
		t.Errorf("balance %+v after %+v: want one charge of %s", bal, before, charge)
	}
	storetest.CheckLedger(t, se.store)
}

// An engine failure and a timeout refund the reservation in full; a replay of a failed
// request returns the same error and generates nothing.
func TestSpeechFailuresRefundInFull(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t, func(s *speech.Service) { s.Wait = 2 * time.Second })
	cases := []struct {
		name, input         string
		status              int
		typ, code, param    string
		msgFragment, ledger string
	}{
		{"engine failure", "Fail now [sandbox:fail]", 502, "api_error", "speech_generation_failed", "", "refunded", "release"},
		{"engine failure with a code", "Fail now [sandbox:fail=Voice.Rejected]", 502, "api_error", "Voice.Rejected", "", "refunded", "release"},
		{"timeout", "Too slow [sandbox:slow=5s]", 504, "api_error", "speech_timeout", "", "2s", "release"},
		{"engine rejects the text", "Typo [sandbox:slow=soon]", 400, "invalid_request_error", "invalid_request_error", "input", "could not be spoken", "release"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := spBody(`"input":`+jstr(c.input), `{"client_request_id":"fail-`+string(rune('a'+i))+`"}`)
			calls := se.engine.calls.Load()
			start := time.Now()
			e1 := decodeErr(t, se.post(se.key, body), c.status, c.typ, c.code, c.param)
			if !strings.Contains(e1.Error.Message, c.msgFragment) {
				t.Errorf("message %q lacks %q", e1.Error.Message, c.msgFragment)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Errorf("answer took %v", d)
			}
			if bal := se.balance(); bal.Available != startCredit || bal.Reserved != 0 || bal.Used != 0 {
				t.Fatalf("balance after failure %+v", bal)
			}
			// The replay answers the same error without calling the engine again.
			e2 := decodeErr(t, se.post(se.key, body), c.status, c.typ, c.code, c.param)
			if e2 != e1 {
				t.Errorf("replay %+v, original %+v", e2, e1)
			}
			if n := se.engine.calls.Load() - calls; n != 1 {
				t.Errorf("engine calls %d, want 1", n)
			}
			rec, err := se.store.SpeechByRequestID(t.Context(), se.keyRec.ID, "fail-"+string(rune('a'+i)))
			if err != nil || rec.Status != store.SpeechFailed || rec.Charged != 0 || rec.Reserved <= 0 {
				t.Errorf("record %+v %v", rec, err)
			}
		})
	}
}

// Transient engine errors are retried within the wait; the speech then completes once. (Not
// under the 2 s wait above: two backoffs and a synthesis can take longer on a loaded machine.)
func TestSpeechTransientErrorsAreRetriedAndChargedOnce(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t)
	b := decodeSpeech(t, se.post(se.key, spBody(`"input":"Flaky [sandbox:transient=2]"`, "")))
	if n := se.engine.calls.Load(); n != 3 {
		t.Errorf("engine calls %d, want 3 (two transient errors, then the speech)", n)
	}
	charge, _ := se.measuredCharge(t, b)
	if bal := se.balance(); bal.Used != charge {
		t.Errorf("used %s, want %s", bal.Used, charge)
	}
	storetest.CheckLedger(t, se.store)
}

// Insufficient balance is a 402 with nothing recorded.
func TestSpeechInsufficientBalance(t *testing.T) {
	t.Parallel()
	se := newSpeechEnv(t)
	poor, poorKey := se.newKey("acme", money.Micros(100), false) // below one second at 0.0002
	r := se.post(poor, spBody(`"input":"Hello."`, `{"client_request_id":"poor-1"}`))
	decodeErr(t, r, 402, "insufficient_balance", "insufficient_balance", "")
	if _, err := se.store.SpeechByRequestID(t.Context(), poorKey.ID, "poor-1"); err == nil {
		t.Error("a record was written")
	}
	if n := se.engine.calls.Load(); n != 0 {
		t.Errorf("engine calls %d", n)
	}
}
