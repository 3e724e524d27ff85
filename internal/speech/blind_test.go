package speech

import (
	"context"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/provider"
	"mediagen/internal/store"
	"mediagen/internal/store/storetest"
)

// blindSynth is an engine whose syntheses cannot be repeated safely (seedspeech's kind).
type blindSynth struct{ provider.Synthesizer }

func (blindSynth) BlindSyntheses() {}

// A generation run again after its process died, on an account whose syntheses can be neither
// read back nor repeated safely, is not sent again: the dead run may have paid for one. It
// fails refunded, and the possible synthesis is recorded as lost_create upstream excess. (An
// engine that can repeat safely is run again: TestSpeechDeadRunIsRecoveredWithinALease.)
func TestSpeechRerunOnABlindSynthesizerIsNotSentAgain(t *testing.T) {
	t.Parallel()
	e := newEnv(t, manualEngine)
	e.svc.Engines["sandbox"] = blindSynth{e.svc.Engines["sandbox"]}
	rec := e.crashAfterAccept(`{"model":"demo-speech","input":"Interrupted mid-call.","metadata":{"client_request_id":"blind-1"}}`)
	e.start()
	e.clock.Advance(DefaultLease + time.Second)
	got := e.waitStatus(rec.ID)
	if got.Status != store.SpeechFailed || got.ErrorCode != CodeGenerationFailed {
		t.Fatalf("record %+v, want failed %s", got, CodeGenerationFailed)
	}
	if n := e.calls.Load(); n != 0 {
		t.Errorf("the engine was called %d times after the crash", n)
	}
	if b := e.balance(); b.Used != 0 || b.Reserved != 0 {
		t.Errorf("balance %+v, want all refunded", b)
	}
	ex, err := e.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "sandbox"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 1 || ex[0].Kind != billing.ExcessLostCreate || ex[0].Amount != rec.Reserved || ex[0].Ref != rec.ID {
		t.Errorf("excess %+v, want one lost_create at the reservation", ex)
	}
	storetest.CheckLedger(t, e.db)
}
