package speech

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/billing"
	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/contract"
	"mediagen/internal/jobs"
	"mediagen/internal/keys"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/store"
	"mediagen/internal/store/storetest"
	"mediagen/internal/testkit"
)

func TestSpeechEstimateSecondsFollowsTheBound(t *testing.T) {
	t.Parallel()
	b := EspeakBound
	for _, c := range []struct {
		name, text string
		want       int64
	}{
		// (0.6 + 2 × 0.5 + 0.05) × 1.1 = 1.815 → 2 s.
		{"two letters and a space", "ab ", 2},
		// (0.6 + 4 × 0.75) × 1.1 = 3.96 → 4 s.
		{"digits", "1234", 4},
		// (0.6 + 2.35) × 1.1 = 3.245 → 4 s: other scripts are read by name.
		{"one kanji", "漢", 4},
		// (0.6 + 0.4 + 0.5) × 1.1 = 1.65 → 2 s.
		{"a letter on its own line", "\nw", 2},
	} {
		if q, err := Estimate("USD", 200, b, c.text); err != nil || q.EstimatedSeconds != c.want {
			t.Errorf("%s: Estimate = %+v, %v; want %d estimated seconds", c.name, q, err, c.want)
		}
	}
	// Characters are code points: 13 × "漢" counts 13.
	q, err := Estimate("USD", 200, b, strings.Repeat("漢", 13))
	// (0.6 + 13 × 2.35) × 1.1 = 34.265 → 35 s.
	if err != nil || q.Characters != 13 || q.EstimatedSeconds != 35 || q.Amount != 7000 || q.Rate != 200 || q.Currency != "USD" {
		t.Fatalf("Estimate = %+v, %v", q, err)
	}
}

func TestSpeechChargeKeepsFractionsToTheMicroUnit(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		rate money.Micros
		us   int64
		want money.Micros
	}{
		{200, 2_345_678, 469},                     // 469.1356 → 469
		{200, 2_347_500, 470},                     // 469.5 → 470 (half away from zero)
		{1_000_000, 1_500_001, 1_500_001},         // 1.00 per second: every microsecond counts
		{250_000, 4_000_000, 1_000_000},           // whole seconds
		{123_456, 10_123_456, 1_249_801},          // 1249801.38…
		{0, 5_000_000, 0},                         // free tenant
		{1_000_000, 3_600_000_000, 3_600_000_000}, // an hour at 1.00/s
	} {
		got, err := Charge(Quote{Rate: c.rate}, c.us)
		if err != nil || got != c.want {
			t.Errorf("Charge(%s/s, %d µs) = %s, %v; want %s", c.rate, c.us, got, err, c.want)
		}
	}
}

func TestSpeechReferenceMediaFamily(t *testing.T) {
	t.Parallel()
	id3 := []byte("ID3\x04\x00\x00\x00\x00\x00\x00")
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00")
	for _, c := range []struct {
		ct   string
		head []byte
		want string
	}{
		{"audio/mpeg", nil, "audio"},
		{"audio/wav; codecs=1", nil, "audio"},
		{"AUDIO/MP4", nil, "audio"},
		{"application/ogg", nil, "audio"},
		{"image/png", nil, "image"},
		{"image/jpeg; charset=binary", nil, "image"},
		{"video/mp4", id3, "video"}, // a declared type wins over the bytes
		{"text/html", id3, "text"},
		{"application/octet-stream", id3, "audio"},
		{"binary/octet-stream", png, "image"},
		{"", id3, "audio"},
		{"", png, "image"},
		{"not a type", png, "image"},
		{"application/octet-stream", []byte("hello world"), "text"},
		{"", []byte{0, 1, 2, 3}, "application"},
	} {
		if got := mediaFamily(c.ct, c.head); got != c.want {
			t.Errorf("mediaFamily(%q, %q) = %q, want %q", c.ct, c.head, got, c.want)
		}
	}
}

// ---- service tests on the real sandbox engine ----

type env struct {
	t      *testing.T
	svc    *Service
	db     store.Store
	caller keys.Caller
	calls  *atomic.Int64
	clock  *testkit.Clock // still: the test moves it
	// manual leaves the job engine to the test (start); otherwise newEnv starts it.
	manual bool
	engine *jobs.Engine
}

// manualEngine is an option of newEnv: the test starts the job engine itself (after
// simulating a crash, for example).
func manualEngine(e *env) { e.manual = true }

// start runs the service's job kinds on an engine on the service's clock, as a process
// serving the API does.
func (e *env) start() {
	e.t.Helper()
	eng := jobs.New(jobs.Config{Store: e.db, Now: e.svc.now, Logger: e.svc.Logger})
	for _, k := range e.svc.Kinds() {
		if err := eng.Register(k); err != nil {
			e.t.Fatal(err)
		}
	}
	if err := eng.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.svc.Notify = eng.Notify
	e.engine = eng
	e.t.Cleanup(eng.Stop)
}

type counting struct {
	next  provider.Synthesizer
	calls *atomic.Int64
}

func (c counting) Synthesize(ctx context.Context, r provider.SpeechRequest) (provider.Speech, error) {
	c.calls.Add(1)
	return c.next.Synthesize(ctx, r)
}

// newEnv is the service on SQLite and the real sandbox engine, its options applied, with
// its job engine running unless an option says manualEngine.
func newEnv(t *testing.T, opts ...func(*env)) *env {
	t.Helper()
	return newEnvOn(t, nil, opts...)
}

// newEnvOn is newEnv on db (nil: a fresh SQLite store).
func newEnvOn(t *testing.T, db store.Store, opts ...func(*env)) *env {
	t.Helper()
	tools := ffmpeg.Tools{}
	if err := tools.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ffmpeg, ffprobe and espeak-ng required under CI=true: %v", err)
		}
		t.Skip(err)
	}
	if db == nil {
		db = testkit.SQLite(t)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	eng, err := sandbox.New(sandbox.Config{Dir: t.TempDir(), Tools: tools, Pace: -1, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	blobs, err := blob.NewFS(t.TempDir(), []byte(strings.Repeat("s", 32)), "http://files.test")
	if err != nil {
		t.Fatal(err)
	}
	calls := &atomic.Int64{}
	clk := testkit.NewClock(time.Now())
	svc := &Service{Store: db, Engines: map[string]provider.Synthesizer{"sandbox": counting{eng, calls}}, Blobs: blobs,
		Probe: tools, Logger: quiet, Wait: 10 * time.Second, Grace: 5 * time.Second, Poll: 20 * time.Millisecond, Now: clk.Now}
	tenant, _ := catalog.Demo().Tenant("demo")
	_, key := testkit.Key(t, db, "demo", 10*money.Scale, false)
	e := &env{t: t, svc: svc, db: db, caller: keys.Caller{Key: key, Tenant: tenant}, calls: calls, clock: clk}
	for _, o := range opts {
		o(e)
	}
	if !e.manual {
		e.start()
	}
	return e
}

// acceptOnly records a request, its reservation and its job exactly as Create does, and
// does not wait for it.
func (e *env) acceptOnly(body string) store.Speech {
	e.t.Helper()
	req, derr := contract.DecodeSpeech([]byte(body))
	if derr != nil {
		e.t.Fatal(derr)
	}
	alias, _ := e.caller.Tenant.Alias(req.Model)
	rate, _ := e.caller.Tenant.Rates.SpeechRate()
	q, err := Estimate("USD", rate, EspeakBound, req.Text)
	if err != nil {
		e.t.Fatal(err)
	}
	sum := sha256.Sum256(req.CanonicalForIdempotency())
	rec, _, err := e.svc.accept(context.Background(), e.caller, req, alias, []string{string(alias.Upstream)}, q, sum[:])
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// crashAfterAccept records a request as Create does, and its job's run starts in a process
// that dies at once: the job stays leased, for one lease, by nobody alive. The engine of the
// env must not be running yet (manualEngine).
func (e *env) crashAfterAccept(body string) store.Speech {
	e.t.Helper()
	rec := e.acceptOnly(body)
	claimed, err := e.db.ClaimJobs(context.Background(), GenerateKind, "", e.clock.Now(), e.svc.lease(), 1, nil)
	if err != nil || len(claimed) != 1 || claimed[0].Ref != rec.ID {
		e.t.Fatalf("the dead process's claim: %+v %v", claimed, err)
	}
	return rec
}

// waitStatus waits (bounded) until the record is no longer pending and returns it.
func (e *env) waitStatus(id string) store.Speech {
	e.t.Helper()
	var rec store.Speech
	testkit.WaitFor(e.t, 20*time.Second, fmt.Sprintf("record %s still pending", id), func() bool {
		var err error
		if rec, err = e.db.Speech(context.Background(), id); err != nil {
			e.t.Fatal(err)
		}
		return rec.Status != store.SpeechPending
	})
	return rec
}

func (e *env) balance() store.Balance {
	e.t.Helper()
	b, err := e.db.Balance(context.Background(), e.caller.Key.ID)
	if err != nil {
		e.t.Fatal(err)
	}
	return b
}

// A retry of a request whose process died waits for the record; once the dead run's lease
// has passed, the engine runs the job again (a fresh wait: the request has a
// client_request_id, so a replay collects the audio) under the same id, and settles it once.
func TestSpeechRetryGetsTheRunTheEngineRecovered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, manualEngine)
	body := `{"model":"demo-speech","input":"Recovered after a crash.","metadata":{"client_request_id":"crash-1"}}`
	rec := e.crashAfterAccept(body)
	reg := prometheus.NewRegistry()
	e.svc.Metrics = NewMetrics(reg)
	q, _ := Estimate("USD", 200, EspeakBound, "Recovered after a crash.")
	if b := e.balance(); b.Reserved != rec.Reserved || rec.Reserved != q.Amount {
		t.Fatalf("after accept: %+v (reserved %s)", b, rec.Reserved)
	}
	// While no process runs the job, a retry waits for it and, its own wait over, answers
	// that the request is still in progress.
	e.svc.Wait = 300 * time.Millisecond
	start := time.Now()
	_, err := e.svc.Create(context.Background(), e.caller, []byte(body))
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Kind != apierr.KindIdempotency || ae.Code != "request_in_progress" {
		t.Fatalf("retry before the deadline: %v", err)
	}
	if d := time.Since(start); d < 250*time.Millisecond {
		t.Errorf("did not wait: %v", d)
	}
	if e.calls.Load() != 0 {
		t.Fatal("the engine was called by a waiting retry")
	}
	// A process runs the kind; the dead run's lease passes; the engine runs the job again.
	e.svc.Wait = 10 * time.Second
	e.start()
	e.clock.Advance(DefaultLease + time.Second)
	res, err := e.svc.Create(context.Background(), e.caller, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if res.ID != rec.ID || res.Duration <= 0 || res.Metadata == nil || res.Metadata.ClientRequestID != "crash-1" {
		t.Fatalf("recovered answer %+v", res)
	}
	got, _ := e.db.Speech(context.Background(), rec.ID)
	want, _ := Charge(Quote{Rate: 200}, billing.SecondsToMicros(res.Duration))
	if b := e.balance(); got.Status != store.SpeechCompleted || b.Used != want || b.Reserved != 0 || got.Charged != want {
		t.Fatalf("record %+v, balance %+v, want one charge of %s", got, b, want)
	}
	// A late finish (a run that lost its job) is fenced out: it ends nothing and moves no money.
	late := e.svc.failed(t.Context(), rec, nil, kindTimeout, CodeTimeout, "", "late", nil)
	if err := e.db.Transact(context.Background(), func(tx store.Tx) error { return late.Apply(context.Background(), tx) }); err != nil {
		t.Fatal(err)
	}
	late.After()
	if got, _ := e.db.Speech(context.Background(), rec.ID); got.Status != store.SpeechCompleted || e.balance().Used != want {
		t.Fatalf("after a late failure: %+v, %+v", got, e.balance())
	}
	if e.calls.Load() != 1 {
		t.Errorf("engine calls %d", e.calls.Load())
	}
	m := e.svc.Metrics
	if got := counterValue(t, m.recovered); got != 1 {
		t.Errorf("recovered %v, want 1", got)
	}
	if got := waitCounter(t, m.finished.WithLabelValues("completed", ""), 1); got != 1 {
		t.Errorf("completed %v, want 1 (the fenced-out late failure must not count)", got)
	}
	if got := counterValue(t, m.audioSeconds); got != res.Duration {
		t.Errorf("audio seconds %v, want %v", got, res.Duration)
	}
	storetest.CheckLedger(t, e.db)
}

// A job the engine cannot deliver to anyone is failed and refunded with speech_timeout: a
// first run that starts after the request's wait ended, a run after a crash of a request
// without a client_request_id (nobody can collect its audio), and one after a crash that
// starts past the request's wait and grace. A replay answers the failure.
func TestSpeechRunNobodyCanCollectIsRefunded(t *testing.T) {
	t.Parallel()
	e := newEnv(t, manualEngine)
	e.svc.Metrics = NewMetrics(prometheus.NewRegistry())
	dead := e.crashAfterAccept(`{"model":"demo-speech","input":"Died and nobody waits."}`)
	stale := e.crashAfterAccept(`{"model":"demo-speech","input":"Died long ago.","metadata":{"client_request_id":"stale-1"}}`)
	late := e.acceptOnly(`{"model":"demo-speech","input":"Never started.","metadata":{"client_request_id":"late-1"}}`)
	if b := e.balance(); b.Reserved != late.Reserved+dead.Reserved+stale.Reserved {
		t.Fatalf("balance %+v", b)
	}
	e.clock.Advance(time.Minute) // past the wait and grace, and the dead runs' leases
	e.start()
	for _, rec := range []store.Speech{late, dead, stale} {
		got := e.waitStatus(rec.ID)
		if got.Status != store.SpeechFailed || got.ErrorCode != CodeTimeout || got.Charged != 0 {
			t.Fatalf("record %+v", got)
		}
	}
	if b := e.balance(); b.Reserved != 0 || b.Used != 0 || b.Available != 10*money.Scale {
		t.Fatalf("balance %+v", b)
	}
	_, err := e.svc.Create(context.Background(), e.caller, []byte(`{"model":"demo-speech","input":"Never started.","metadata":{"client_request_id":"late-1"}}`))
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Kind != apierr.KindTimeout || ae.Code != CodeTimeout || ae.Status() != 504 {
		t.Fatalf("replay of a request that never started: %v", err)
	}
	if e.calls.Load() != 0 {
		t.Errorf("engine calls %d", e.calls.Load())
	}
	// A run counts its outcome after its transaction commits, so the record can be seen
	// failed a moment before the counter moves.
	if got := waitCounter(t, e.svc.Metrics.finished.WithLabelValues("failed", CodeTimeout), 3); got != 3 {
		t.Errorf("failed with %s: %v, want 3", CodeTimeout, got)
	}
	storetest.CheckLedger(t, e.db)
}

// A request whose client hangs up is still completed and recorded: the work is detached from
// the request's context, so the retry gets the finished result.
func TestSpeechClientHangUpDoesNotAbandonTheWork(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := `{"model":"demo-speech","input":"Keep going [sandbox:slow=500ms]","metadata":{"client_request_id":"hangup-1"}}`
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := e.svc.Create(ctx, e.caller, []byte(body))
		done <- err
	}()
	testkit.WaitFor(t, 10*time.Second, "the generation never started", func() bool { return e.calls.Load() > 0 })
	cancel() // the client hangs up mid-generation
	if err := <-done; err != nil {
		t.Fatalf("the detached work failed: %v", err)
	}
	rec, err := e.db.SpeechByRequestID(context.Background(), e.caller.Key.ID, "hangup-1")
	if err != nil || rec.Status != store.SpeechCompleted {
		t.Fatalf("record %+v %v", rec, err)
	}
	res, err := e.svc.Create(context.Background(), e.caller, []byte(body))
	if err != nil || res.ID != rec.ID || e.calls.Load() != 1 {
		t.Fatalf("retry %+v %v, calls %d", res, err, e.calls.Load())
	}
}

// counterValue reads a counter's current value.
// waitCounter waits (bounded) until c reaches want and returns its last value: runs count
// their outcome after the commit that a test's waitStatus sees.
func waitCounter(t *testing.T, c prometheus.Counter, want float64) float64 {
	t.Helper()
	testkit.Poll(10*time.Second, func() bool { return counterValue(t, c) >= want })
	return counterValue(t, c)
}

func counterValue(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}
