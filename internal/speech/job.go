package speech

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/billing"
	"mediagen/internal/jobs"
	"mediagen/internal/media/budget"
	"mediagen/internal/provider"
	"mediagen/internal/store"
)

// GenerateKind is the job kind of a speech generation: one job per record, enqueued in the
// transaction that records the request. The request waits for it within its bounded wait;
// the engine (internal/jobs) owns its lease, heartbeat and the recovery of a run whose
// process died.
const GenerateKind = "speech.generate"

// DefaultWorkers is how many generations one process runs at once: speech is synchronous,
// so this bounds the requests a process answers concurrently (the in-flight limits bound
// them per key and tenant before that).
const DefaultWorkers = 32

// generateAttempts is how many runs a generation gets: a run that died (its process was
// killed) or failed on the database is run again, then the record fails, refunded.
const generateAttempts = 3

// GenerateJob is the job that generates a record, enqueued with it.
func GenerateJob(rec store.Speech) store.Job {
	return store.Job{ID: jobs.ID(GenerateKind, rec.ID), Kind: GenerateKind, Ref: rec.ID, TenantID: rec.TenantID,
		KeyID: rec.KeyID, RunAt: rec.CreatedAt, CreatedAt: rec.CreatedAt}
}

// Kinds are the speech service's job kinds, to register with the engine in every process
// that serves the API (the one that accepted a request has its engine and runs it at once).
func (s *Service) Kinds() []jobs.Kind {
	return []jobs.Kind{{
		Name: GenerateKind, Handler: generator{s}, Workers: orDefaultInt(s.Workers, DefaultWorkers),
		// A short lease: a killed process's generation is run again within seconds, while
		// its client (or the client's retry) is still waiting.
		Lease: s.lease(),
		// A run is bounded by the wait and the grace already; the timeout only backs them.
		Timeout: s.wait() + s.grace() + s.lease(),
		// Shutdown lets a generation finish: its client is waiting for it.
		Grace:       s.wait() + s.grace(),
		MaxAttempts: generateAttempts,
		Backoff:     jobs.Exponential(100*time.Millisecond, time.Second),
	}}
}

func orDefaultInt(n, def int) int {
	if n > 0 {
		return n
	}
	return def
}

// notify wakes this process's producer of the kind: the job just enqueued starts at once
// here instead of at the next poll.
func (s *Service) notify() {
	if s.Notify != nil {
		s.Notify(GenerateKind)
	}
}

// generator is the job handler of speech generation.
type generator struct{ s *Service }

// Run generates the record once and records its end (completed and settled, or failed and
// refunded) with the job's. The first run generates within the request's bounded wait
// (rec.AttemptUntil); a run after an interrupted one (its process died) gets a fresh wait
// when a replay can still collect the audio (the request has a client_request_id, and the
// run starts within its wait and grace), else the record fails, refunded: nobody is waiting
// for it any more.
func (g generator) Run(ctx context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
	s := g.s
	// A client holds its request open for this generation: its media processes go before
	// background work (renders) waiting in the media budget.
	ctx = budget.WaitedFor(ctx)
	rec, err := s.Store.Speech(ctx, j.Ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return jobs.Outcome{Done: true}, nil
	case err != nil:
		return jobs.Outcome{}, err
	case rec.Status != store.SpeechPending:
		return jobs.Outcome{Done: true, After: func() { s.finished(rec.ID) }}, nil
	}
	now := s.now()
	deadline := rec.AttemptUntil
	recovered := j.Attempt > 1
	if recovered {
		s.Metrics.recoveredOne()
		s.log().Warn("speech generation interrupted; running it again", "speech_id", rec.ID, "attempt", j.Attempt)
		// A replay can collect the audio only with the id, and only while a client still
		// plausibly retries: within the request's wait and grace.
		if rec.ClientRequestID != "" && now.Before(rec.AttemptUntil.Add(s.grace())) {
			deadline = now.Add(s.wait())
		}
	}
	if !now.Before(deadline) {
		msg := fmt.Sprintf("Speech generation did not start within %s; no audio was produced and the pre-charge was refunded.", s.wait())
		if recovered {
			msg = interruptedMessage
		}
		return s.failed(ctx, rec, nil, kindTimeout, CodeTimeout, "", msg, errors.New("not started before the end of its wait")), nil
	}
	var st Stored
	if err := json.Unmarshal(rec.Request, &st); err != nil {
		return s.failed(ctx, rec, nil, kindInternal, CodeGenerationFailed, "", "The request could not be read back; nothing was charged.",
			fmt.Errorf("speech %s: stored request: %w", rec.ID, err)), nil
	}
	if recovered {
		if blind := s.blindAccount(st); blind != "" {
			// The dead run may have called the account, which may have billed a synthesis
			// that nothing can read back: not sent again (docs/upstreams.md, "Never a
			// second paid job").
			var q Quote
			_ = json.Unmarshal(rec.Pricing, &q)
			return s.failedWith(ctx, rec, nil, kindUpstream, CodeGenerationFailed, "", blindMessage,
				fmt.Errorf("speech %s: run again after an interrupted run on %s, whose syntheses cannot be repeated safely", rec.ID, blind),
				q.Currency, []billing.Excess{lostSynthesis(rec, blind)}), nil
		}
	}
	return s.generate(ctx, rec, st, deadline)
}

// blindMessage is the failure of a record whose interrupted run may have paid a synthesis.
const blindMessage = "Speech generation was interrupted while the upstream may have been producing the audio; it was not sent again so as not to pay for it twice, and the pre-charge was refunded. Retry with a new client_request_id."

// blindAccount is the first of the record's accounts whose engine is a
// provider.BlindSynthesizer ("" : none).
func (s *Service) blindAccount(st Stored) string {
	for _, a := range st.accounts() {
		if _, ok := s.engine(a).(provider.BlindSynthesizer); ok {
			return a
		}
	}
	return ""
}

// interruptedMessage is the failure of a record whose generation was interrupted (its process
// stopped) and that nobody can collect any more.
const interruptedMessage = "Speech generation did not finish: the request was interrupted before audio was produced, and the pre-charge was refunded."

// GiveUp fails and refunds a record whose runs kept failing or dying.
func (g generator) GiveUp(ctx context.Context, j jobs.Job, cause error) jobs.Outcome {
	s := g.s
	rec, err := s.Store.Speech(ctx, j.Ref)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return jobs.Outcome{Done: true}
	case err != nil:
		// Not given up this time: the job runs again when its lease ends.
		return jobs.Outcome{Done: true, Apply: func(context.Context, store.Tx) error { return err }}
	case rec.Status != store.SpeechPending:
		return jobs.Outcome{Done: true, After: func() { s.finished(rec.ID) }}
	}
	return s.failed(ctx, rec, nil, kindTimeout, CodeTimeout, "", interruptedMessage, fmt.Errorf("given up: %w", cause))
}

// waiters wake the requests of this process waiting for a record when its job ends here.
type waiters struct {
	mu sync.Mutex
	m  map[string][]chan struct{}
}

// watch returns a channel closed when the record's job ends in this process, and the func
// that stops watching.
func (s *Service) watch(id string) (<-chan struct{}, func()) {
	w := &s.waiting
	ch := make(chan struct{})
	w.mu.Lock()
	if w.m == nil {
		w.m = map[string][]chan struct{}{}
	}
	w.m[id] = append(w.m[id], ch)
	w.mu.Unlock()
	return ch, func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		list := w.m[id]
		for i, c := range list {
			if c == ch {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(w.m, id)
		} else {
			w.m[id] = list
		}
	}
}

// finished wakes every request of this process waiting for the record.
func (s *Service) finished(id string) {
	w := &s.waiting
	w.mu.Lock()
	list := w.m[id]
	delete(w.m, id)
	w.mu.Unlock()
	for _, c := range list {
		close(c)
	}
}
