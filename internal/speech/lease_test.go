package speech

import (
	"context"
	"errors"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/billing"
	"mediagen/internal/store"
	"mediagen/internal/store/storetest"
)

// A process killed mid-generation stops renewing its attempt's lease: a retry one lease later
// takes the record over and answers with the audio, and the sweep would refund one nobody
// retried — both long before the speech timeout plus grace that bounded the dead attempt
// before the heartbeat.
func TestSpeechDeadAttemptIsRecognisedWithinALease(t *testing.T) {
	t.Parallel()
	e := newEnv(t) // Wait 10 s, Grace 5 s: the old deadline was 15 s after acceptance
	body := `{"model":"demo-speech","input":"Answered soon after a crash.","metadata":{"client_request_id":"lease-1"}}`
	retried := e.crashAfterAccept(body)
	abandoned := e.crashAfterAccept(`{"model":"demo-speech","input":"Nobody comes back for this one."}`)
	e.clock.advance(DefaultLease + time.Second)

	done := make(chan error, 1)
	var res *Response
	go func() {
		var err error
		res, err = e.svc.Create(context.Background(), e.caller, []byte(body))
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("retry one lease after the crash: %v", err)
		}
	case <-time.After(e.svc.Wait - time.Second):
		t.Fatal("the retry waited for an attempt whose lease had run out")
	}
	if res.ID != retried.ID || res.Duration <= 0 {
		t.Fatalf("take-over answer %+v", res)
	}
	n, err := e.svc.SweepAbandoned(context.Background(), e.clock.now(), 10)
	if err != nil || n != 1 {
		t.Fatalf("swept %d, %v; want the abandoned record", n, err)
	}
	if got, _ := e.db.Speech(context.Background(), abandoned.ID); got.Status != store.SpeechFailed {
		t.Fatalf("abandoned record %+v", got)
	}
	want, _ := Charge(Quote{Rate: 200}, billing.SecondsToMicros(res.Duration))
	if b := e.balance(); b.Used != want || b.Reserved != 0 {
		t.Fatalf("balance %+v, want one charge of %s", b, want)
	}
	storetest.CheckLedger(t, e.db)
}

// A live attempt renews its lease while the engine works for much longer than one lease, so
// neither a retry nor the sweep mistakes it for a dead one; the retry waits for its answer.
func TestSpeechLiveAttemptKeepsItsRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.svc.Now = time.Now // renewals must move the deadline along with a real clock
	e.svc.Lease = 300 * time.Millisecond
	body := `{"model":"demo-speech","input":"Slow but alive [sandbox:slow=1500ms]","metadata":{"client_request_id":"alive-1"}}`
	first := make(chan error, 1)
	go func() {
		_, err := e.svc.Create(context.Background(), e.caller, []byte(body))
		first <- err
	}()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := e.db.SpeechByRequestID(context.Background(), e.caller.Key.ID, "alive-1"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request was never recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Several leases pass while the engine works; the sweep finds nothing to recover.
	for range 4 {
		time.Sleep(e.svc.Lease)
		if n, err := e.svc.SweepAbandoned(context.Background(), time.Now(), 10); err != nil || n != 0 {
			t.Fatalf("the sweep took a live attempt: %d, %v", n, err)
		}
	}
	res, err := e.svc.Create(context.Background(), e.caller, []byte(body))
	if err != nil {
		t.Fatalf("retry while the original runs: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("original: %v", err)
	}
	if e.calls.Load() != 1 || res.Duration <= 0 {
		t.Fatalf("engine calls %d (want 1: no take-over of a live attempt), answer %+v", e.calls.Load(), res)
	}
	storetest.CheckLedger(t, e.db)
}

// An attempt whose renewal finds the record taken over stops: its engine call is cancelled
// and it settles nothing; it answers with the outcome of the attempt that owns the record.
func TestSpeechSupersededAttemptStopsAndDoesNotSettle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.svc.Lease = 300 * time.Millisecond
	e.svc.Wait = time.Minute
	body := `{"model":"demo-speech","input":"Overtaken [sandbox:slow=30s]","metadata":{"client_request_id":"overtaken-1"}}`
	first := make(chan error, 1)
	go func() {
		_, err := e.svc.Create(context.Background(), e.caller, []byte(body))
		first <- err
	}()
	var rec store.Speech
	deadline := time.Now().Add(10 * time.Second)
	for {
		var err error
		if rec, err = e.db.SpeechByRequestID(context.Background(), e.caller.Key.ID, "overtaken-1"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the request was never recorded")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Another process takes the record over (as if this one had stalled past its lease) and
	// fails it, refunding the reservation.
	ctx := t.Context()
	now := e.clock.now()
	err := e.db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.TakeOverSpeech(ctx, rec.ID, rec.AttemptToken, "attempt_other", now.Add(time.Minute)); err != nil {
			return err
		}
		if err := tx.FinishSpeech(ctx, store.SpeechFinish{ID: rec.ID, Token: "attempt_other", Status: store.SpeechFailed,
			ErrorKind: kindUpstream, ErrorCode: CodeGenerationFailed, ErrorMessage: "Failed elsewhere.", FinishedAt: now}); err != nil {
			return err
		}
		_, err := billing.Settle(ctx, tx, rec.KeyID, rec.ID, rec.Reserved, 0, now)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-first:
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Message != "Failed elsewhere." {
			t.Fatalf("superseded attempt answered %v, want the owner's failure", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the superseded attempt kept generating")
	}
	got, _ := e.db.Speech(ctx, rec.ID)
	if got.Status != store.SpeechFailed || got.AttemptToken != "attempt_other" || got.Charged != 0 {
		t.Fatalf("record %+v", got)
	}
	if b := e.balance(); b.Used != 0 || b.Reserved != 0 {
		t.Fatalf("balance %+v: the superseded attempt moved money", b)
	}
	storetest.CheckLedger(t, e.db)
}
