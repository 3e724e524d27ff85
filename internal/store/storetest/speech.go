package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/store"
)

func newSpeech(k store.Key, crid string, until time.Time) store.Speech {
	now := time.Now().UTC()
	return store.Speech{
		ID: fmt.Sprintf("speech_%d", seq.Add(1)), KeyID: k.ID, TenantID: k.TenantID, Model: "alias-speech",
		Status: store.SpeechPending, ClientRequestID: crid, PayloadHash: []byte{9, 8, 7},
		Request: []byte(`{"text":"hi"}`), Pricing: []byte(`{"rate":200}`), Reserved: 600,
		AttemptToken: fmt.Sprintf("att_%d", seq.Add(1)), AttemptUntil: until,
		CreatedAt: now, UpdatedAt: now,
	}
}

func createSpeech(t *testing.T, s store.Store, sp store.Speech) {
	t.Helper()
	ctx := t.Context()
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateSpeech(ctx, sp) }); err != nil {
		t.Fatal(err)
	}
}

func testSpeechCreateAndRead(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	until := time.Now().Add(time.Minute)
	sp := newSpeech(k, "sp-1", until)
	createSpeech(t, s, sp)
	got, err := s.Speech(ctx, sp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != sp.ID || got.KeyID != k.ID || got.TenantID != "acme" || got.Model != "alias-speech" ||
		got.Status != store.SpeechPending || got.ClientRequestID != "sp-1" || !bytes.Equal(got.PayloadHash, sp.PayloadHash) ||
		!bytes.Equal(got.Request, sp.Request) || !bytes.Equal(got.Pricing, sp.Pricing) || got.Reserved != 600 ||
		got.Charged != 0 || got.Result != nil || got.ErrorCode != "" || got.AttemptToken != sp.AttemptToken ||
		got.AttemptUntil.UnixMicro() != until.UnixMicro() || got.CreatedAt.UnixMicro() != sp.CreatedAt.UnixMicro() ||
		!got.FinishedAt.IsZero() {
		t.Fatalf("read back %+v", got)
	}
	byReq, err := s.SpeechByRequestID(ctx, k.ID, "sp-1")
	if err != nil || byReq.ID != sp.ID {
		t.Fatalf("by request id: %+v %v", byReq, err)
	}
	if _, err := s.Speech(ctx, "speech_missing"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("missing speech: %v", err)
	}
	other := newKey(t, s, "acme", false)
	if _, err := s.SpeechByRequestID(ctx, other.ID, "sp-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("request id leaked across keys: %v", err)
	}
	// Records without a client_request_id never collide, and "" finds none of them.
	for i := 0; i < 2; i++ {
		createSpeech(t, s, newSpeech(k, "", until))
	}
	if _, err := s.SpeechByRequestID(ctx, k.ID, ""); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("empty request id found a record: %v", err)
	}
	// The same id twice is a conflict too.
	dup := newSpeech(k, "", until)
	dup.ID = sp.ID
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.CreateSpeech(ctx, dup) }); !errors.Is(err, store.ErrConflict) {
		t.Errorf("duplicate id: %v", err)
	}
}

func testSpeechRequestIDUnique(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	other := newKey(t, s, "acme", false)
	createSpeech(t, s, newSpeech(other, "same", time.Now()))
	if err := credit(ctx, s, k, 100_000); err != nil {
		t.Fatal(err)
	}
	const n = 16
	var created, conflicts atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Transact(ctx, func(tx store.Tx) error {
				// The record and its reservation commit together, or neither does.
				sp := newSpeech(k, "same", time.Now().Add(time.Minute))
				if err := tx.CreateSpeech(ctx, sp); err != nil {
					return err
				}
				return tx.Post(ctx, store.Txn{ID: "txn_" + sp.ID, Kind: "reserve", Ref: sp.ID, Entries: []store.Entry{
					{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -sp.Reserved},
					{Account: store.AccountID(k.ID, store.AccountReserved), Amount: sp.Reserved}}})
			})
			switch {
			case err == nil:
				created.Add(1)
			case errors.Is(err, store.ErrConflict):
				conflicts.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if created.Load() != 1 || conflicts.Load() != n-1 {
		t.Fatalf("created %d, conflicts %d; want 1 and %d", created.Load(), conflicts.Load(), n-1)
	}
	if b := balance(t, s, k); b.Reserved != 600 {
		t.Fatalf("reserved %s, want one reservation of 600", b.Reserved)
	}
}

func testSpeechFinishFencedOnce(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	if err := credit(ctx, s, k, 10_000); err != nil {
		t.Fatal(err)
	}
	sp := newSpeech(k, "fin-1", time.Now().Add(time.Minute))
	err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateSpeech(ctx, sp); err != nil {
			return err
		}
		return tx.Post(ctx, store.Txn{ID: "txn_r_" + sp.ID, Kind: "reserve", Ref: sp.ID, Entries: []store.Entry{
			{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: -sp.Reserved},
			{Account: store.AccountID(k.ID, store.AccountReserved), Amount: sp.Reserved}}})
	})
	if err != nil {
		t.Fatal(err)
	}
	settle := func(tx store.Tx, charge money.Micros) error {
		return tx.Post(ctx, store.Txn{ID: fmt.Sprintf("txn_s_%d", seq.Add(1)), Kind: "settle", Ref: sp.ID, AllowOverdraft: true,
			Entries: []store.Entry{
				{Account: store.AccountID(k.ID, store.AccountReserved), Amount: -sp.Reserved},
				{Account: store.AccountID(k.ID, store.AccountSpent), Amount: charge},
				{Account: store.AccountID(k.ID, store.AccountAvailable), Amount: sp.Reserved - charge}}})
	}
	finish := store.SpeechFinish{ID: sp.ID, Token: sp.AttemptToken, Status: store.SpeechCompleted, Charged: 469,
		Result: []byte(`{"audio_key":"speech/a.mp3"}`), FinishedAt: time.Now()}

	// A stale attempt cannot finish.
	stale := finish
	stale.Token = "att_stale"
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.FinishSpeech(ctx, stale) }); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("stale token: %v", err)
	}
	// A finish whose settlement fails rolls back with it.
	boom := errors.New("boom")
	if err := s.Transact(ctx, func(tx store.Tx) error {
		if err := tx.FinishSpeech(ctx, finish); err != nil {
			return err
		}
		return boom
	}); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if got, _ := s.Speech(ctx, sp.ID); got.Status != store.SpeechPending {
		t.Fatalf("rolled-back finish left status %q", got.Status)
	}
	// Concurrent finishers with the right token: exactly one settles.
	const n = 8
	var won, lost atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.Transact(ctx, func(tx store.Tx) error {
				if err := tx.FinishSpeech(ctx, finish); err != nil {
					return err
				}
				return settle(tx, finish.Charged)
			})
			switch {
			case err == nil:
				won.Add(1)
			case errors.Is(err, store.ErrLeaseLost):
				lost.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if won.Load() != 1 || lost.Load() != n-1 {
		t.Fatalf("won %d lost %d", won.Load(), lost.Load())
	}
	got, err := s.Speech(ctx, sp.ID)
	if err != nil || got.Status != store.SpeechCompleted || got.Charged != 469 || string(got.Result) != `{"audio_key":"speech/a.mp3"}` ||
		got.FinishedAt.IsZero() {
		t.Fatalf("after finish %+v %v", got, err)
	}
	if b := balance(t, s, k); b.Used != 469 || b.Reserved != 0 || b.Available != 10_000-469 {
		t.Fatalf("balance %+v", b)
	}
	// Terminal is terminal: no second finish.
	failed := finish
	failed.Status, failed.Charged, failed.Result, failed.ErrorCode = store.SpeechFailed, 0, nil, "speech_timeout"
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.FinishSpeech(ctx, failed) }); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("second finish: %v", err)
	}
	bad := finish
	bad.Status = store.SpeechPending
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.FinishSpeech(ctx, bad) }); err == nil {
		t.Fatal("finish to a non-terminal status accepted")
	}
}

// A finish under another token changes nothing; the record's own finishes it failed, with
// the client's error and the operators' reason, and its history says so.
func testSpeechFailureKeepsItsReason(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	sp := newSpeech(k, "fail-1", time.Now().Add(-time.Second))
	createSpeech(t, s, sp)
	f := store.SpeechFinish{ID: sp.ID, Token: "att_stranger", Status: store.SpeechFailed, ErrorKind: "timeout",
		ErrorCode: "speech_timeout", ErrorMessage: "Too slow.", ErrorParam: "input", ErrorDetail: "espeak-ng: exit status 1",
		FinishedAt: time.Now()}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.FinishSpeech(ctx, f) }); !errors.Is(err, store.ErrLeaseLost) {
		t.Fatalf("finish under another token: %v", err)
	}
	f.Token = sp.AttemptToken
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.FinishSpeech(ctx, f) }); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Speech(ctx, sp.ID)
	if got.Status != store.SpeechFailed || got.ErrorKind != "timeout" || got.ErrorCode != "speech_timeout" ||
		got.ErrorMessage != "Too slow." || got.ErrorParam != "input" || got.Result != nil || got.Charged != 0 {
		t.Fatalf("failed record %+v", got)
	}
	// Its history: the acceptance and the end with its reason (the fenced-out finish wrote
	// nothing).
	events, err := s.SpeechEvents(ctx, sp.ID)
	if err != nil {
		t.Fatal(err)
	}
	var story []string
	for _, e := range events {
		story = append(story, fmt.Sprintf("%d %s>%s %s #%d %s", e.Seq, e.From, e.To, e.Step, e.Attempt, e.Detail))
	}
	want := []string{
		"0 >pending  #0 ",
		"1 pending>failed  #1 espeak-ng: exit status 1",
	}
	if fmt.Sprint(story) != fmt.Sprint(want) {
		t.Errorf("speech history\n%q\nwant\n%q", story, want)
	}
	if events[0].At.UnixMicro() != sp.CreatedAt.UnixMicro() {
		t.Errorf("acceptance at %v, want the record's %v", events[0].At, sp.CreatedAt)
	}
}

// A routed record's finish keeps the account it ran on — its request rebound there, its end
// event naming it — after one event per account it tried before, in order.
func testSpeechRoutedFinish(t *testing.T, s store.Store) {
	ctx := t.Context()
	k := newKey(t, s, "acme", false)
	sp := newSpeech(k, "routed-1", time.Now().Add(time.Minute))
	createSpeech(t, s, sp)
	rebound := []byte(`{"text":"hi","upstream":"second"}`)
	f := store.SpeechFinish{ID: sp.ID, Token: sp.AttemptToken, Status: store.SpeechCompleted, Charged: 400,
		Result: []byte(`{"duration_us":2000000}`), FinishedAt: time.Now(), Upstream: "second", Request: rebound,
		Route: []store.SpeechRoute{{Upstream: "first", Detail: "key refused (401/403)"}, {Upstream: "third", Detail: "skipped: breaker open"}}}
	if err := s.Transact(ctx, func(tx store.Tx) error { return tx.FinishSpeech(ctx, f) }); err != nil {
		t.Fatal(err)
	}
	got, err := s.Speech(ctx, sp.ID)
	if err != nil || string(got.Request) != string(rebound) || got.Status != store.SpeechCompleted {
		t.Fatalf("routed record %+v, %v", got, err)
	}
	events, err := s.SpeechEvents(ctx, sp.ID)
	if err != nil {
		t.Fatal(err)
	}
	var story []string
	for _, e := range events {
		story = append(story, fmt.Sprintf("%d %s>%s %s %s %s", e.Seq, e.From, e.To, e.Step, e.Upstream, e.Detail))
	}
	want := []string{
		"0 >pending   ",
		"1 pending>pending route first key refused (401/403)",
		"2 pending>pending route third skipped: breaker open",
		"3 pending>completed  second ",
	}
	if fmt.Sprint(story) != fmt.Sprint(want) {
		t.Errorf("routed speech history\n%q\nwant\n%q", story, want)
	}
}
