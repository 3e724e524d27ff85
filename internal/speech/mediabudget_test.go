package speech

import (
	"context"
	"errors"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/media/budget"
	"mediagen/internal/store"
	"mediagen/internal/tenantctx"
	"mediagen/internal/testkit"
)

// Speech is synchronous: when the media budget already has a full round of work waiting,
// a request is refused before anything is recorded, reserved or generated — 503 server_busy
// with Retry-After — and the same request succeeds once the budget has room.
func TestSpeechIsRefusedBeforeAcceptanceWhenTheMediaBudgetIsFull(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	media := budget.New(budget.Config{Size: 1})
	e.svc.Media = media
	other := tenantctx.With(context.Background(), "bolt", "key_b")
	hold, err := media.Acquire(other, "ffmpeg")
	if err != nil {
		t.Fatal(err)
	}
	waiting, stop := context.WithCancel(other)
	defer stop()
	// Another client's speech waits (request-path work): background renders waiting would
	// not refuse it (TestRequestPathWorkGoesBeforeWaitingBackgroundWork).
	go func() { _, _ = media.Acquire(budget.WaitedFor(waiting), "espeak-ng") }()
	testkit.WaitFor(t, 10*time.Second, "bolt's second process not waiting", func() bool { return media.Usage().Waiting == 1 })
	before := e.balance()

	body := `{"model":"demo-speech","input":"Hello there","metadata":{"client_request_id":"busy-1"}}`
	_, err = e.svc.Create(context.Background(), e.caller, []byte(body))
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Status() != 503 || ae.CodeOrDefault() != budget.CodeBusy || ae.RetryAfter < 1 {
		t.Fatalf("speech with the media budget full: %v, want 503 %s with Retry-After", err, budget.CodeBusy)
	}
	if _, err := e.db.SpeechByRequestID(context.Background(), e.caller.Key.ID, "busy-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused request was recorded: %v", err)
	}
	if after := e.balance(); after != before || e.calls.Load() != 0 {
		t.Errorf("a refused request moved money or ran: balance %+v → %+v, %d syntheses", before, after, e.calls.Load())
	}

	stop()
	hold()
	testkit.WaitFor(t, 10*time.Second, "the budget not idle", func() bool { return media.Usage() == budget.Usage{Size: 1} })
	if res, err := e.svc.Create(context.Background(), e.caller, []byte(body)); err != nil || res.URL == "" {
		t.Fatalf("the same request with room in the budget: %+v, %v", res, err)
	}
}
