package speech

import (
	"context"
	"errors"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/billing"
	"mediagen/internal/jobs"
	"mediagen/internal/store"
	"mediagen/internal/store/storetest"
	"mediagen/internal/testkit"
)

// A process killed mid-generation stops renewing its job's lease: one lease later the
// engine runs the job again, and a retry is answered with the audio — long before the speech
// timeout plus grace that bounded the dead run.
func TestSpeechDeadRunIsRecoveredWithinALease(t *testing.T) {
	t.Parallel()
	e := newEnv(t, manualEngine) // Wait 10 s, Grace 5 s
	body := `{"model":"demo-speech","input":"Answered soon after a crash.","metadata":{"client_request_id":"lease-1"}}`
	retried := e.crashAfterAccept(body)
	e.start()
	e.clock.Advance(DefaultLease + time.Second)

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
		t.Fatal("the retry waited for a run whose lease had run out")
	}
	if res.ID != retried.ID || res.Duration <= 0 {
		t.Fatalf("recovered answer %+v", res)
	}
	want, _ := Charge(Quote{Rate: 200}, billing.SecondsToMicros(res.Duration))
	if b := e.balance(); b.Used != want || b.Reserved != 0 {
		t.Fatalf("balance %+v, want one charge of %s", b, want)
	}
	storetest.CheckLedger(t, e.db)
}

// A live run renews its job's lease while the engine works for much longer than one lease,
// so no other run starts; a retry waits for its answer.
func TestSpeechLiveRunKeepsItsJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(e *env) {
		e.svc.Now = time.Now // renewals must move the lease along with a real clock
		// A lease of 1 s, renewed every third of it: a shorter one was lost on a machine with a
		// load of 17 on 2 cores (CI warm-up beside five builds), where the renewal goroutine
		// waited past 300 ms and the second engine rightly took the job.
		e.svc.Lease = time.Second
	})
	// A second process runs the kind too: it must not take the live job.
	other := jobs.New(jobs.Config{Store: e.db})
	for _, k := range e.svc.Kinds() {
		if err := other.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := other.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(other.Stop)
	body := `{"model":"demo-speech","input":"Slow but alive [sandbox:slow=6s]","metadata":{"client_request_id":"alive-1"}}`
	first := make(chan error, 1)
	go func() {
		_, err := e.svc.Create(context.Background(), e.caller, []byte(body))
		first <- err
	}()
	testkit.WaitFor(t, 10*time.Second, "the request was never recorded", func() bool {
		_, err := e.db.SpeechByRequestID(context.Background(), e.caller.Key.ID, "alive-1")
		return err == nil
	})
	time.Sleep(4 * e.svc.Lease) // several leases pass while the engine works
	res, err := e.svc.Create(context.Background(), e.caller, []byte(body))
	if err != nil {
		t.Fatalf("retry while the original runs: %v", err)
	}
	if err := <-first; err != nil {
		t.Fatalf("original: %v", err)
	}
	if e.calls.Load() != 1 || res.Duration <= 0 {
		t.Fatalf("engine calls %d (want 1: no second run of a live job), answer %+v", e.calls.Load(), res)
	}
	storetest.CheckLedger(t, e.db)
}

// A run whose lease renewal finds the job taken (its process stalled past the lease and
// another took the job over) stops: its engine call is cancelled and it settles nothing;
// the request answers the outcome of the run that owns the job.
func TestSpeechSupersededRunStopsAndDoesNotSettle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(e *env) {
		e.svc.Now = time.Now
		e.svc.Lease = 300 * time.Millisecond
		e.svc.Wait = time.Minute
	})
	body := `{"model":"demo-speech","input":"Overtaken [sandbox:slow=30s]","metadata":{"client_request_id":"overtaken-1"}}`
	first := make(chan error, 1)
	go func() {
		_, err := e.svc.Create(context.Background(), e.caller, []byte(body))
		first <- err
	}()
	ctx := t.Context()
	testkit.WaitFor(t, 10*time.Second, "the generation never started", func() bool { return e.calls.Load() != 0 })
	// Another process takes the job over (as if this one had stalled past its lease) and
	// fails the record, refunding the reservation, with the job's end.
	taken, err := e.db.ClaimJobs(ctx, GenerateKind, "", time.Now().Add(time.Hour), time.Hour, 1, nil)
	if err != nil || len(taken) != 1 {
		t.Fatalf("take-over: %+v %v", taken, err)
	}
	rec, err := e.db.Speech(ctx, taken[0].Ref)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = e.db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.UpdateJob(ctx, store.JobUpdate{ID: taken[0].ID, Token: taken[0].Token, Done: true}); err != nil {
			return err
		}
		if err := tx.FinishSpeech(ctx, store.SpeechFinish{ID: rec.ID, Token: rec.AttemptToken, Status: store.SpeechFailed,
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
			t.Fatalf("the request answered %v, want the owner's failure", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the request kept waiting")
	}
	// The superseded run stops at its next renewal, well before its 30 s of engine time.
	e.engine.Stop()
	got, _ := e.db.Speech(ctx, rec.ID)
	if got.Status != store.SpeechFailed || got.Charged != 0 {
		t.Fatalf("record %+v", got)
	}
	if b := e.balance(); b.Used != 0 || b.Reserved != 0 {
		t.Fatalf("balance %+v: the superseded run moved money", b)
	}
	storetest.CheckLedger(t, e.db)
}
