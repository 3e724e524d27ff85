package jobs_test

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"mediagen/internal/jobs"
	"mediagen/internal/logctx"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// lockedLog is a log destination safe for the engine's concurrent runs.
type lockedLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// The request id stored with a job comes back with its claim, and every run of the job has it:
// in the run's context (the handler's own lines carry it through logctx) and on the engine's
// lines about the run.
func TestRunsCarryTheRequestIDOfTheirJob(t *testing.T) {
	t.Parallel()
	db := openDB(t)
	var logs lockedLog
	log := slog.New(logctx.NewHandler(slog.NewTextHandler(&logs, nil)))
	var mu sync.Mutex
	seen := map[string]string{} // ref → the request id the run saw
	h := &handler{run: func(ctx context.Context, j jobs.Job, _ jobs.Checkpoint) (jobs.Outcome, error) {
		mu.Lock()
		_, again := seen[j.Ref]
		seen[j.Ref] = logctx.RequestID(ctx)
		mu.Unlock()
		log.InfoContext(ctx, "handler line", "ref", j.Ref)
		if !again {
			return jobs.Outcome{}, errors.New("first run fails") // the engine logs the retry
		}
		return jobs.Outcome{Done: true}, nil
	}}
	enqueue(t, db, store.Job{ID: jobs.ID("k", "with"), Kind: "k", Ref: "with", RequestID: "req-abc"})
	enqueue(t, db, store.Job{ID: jobs.ID("k", "without"), Kind: "k", Ref: "without"})
	e := jobs.New(jobs.Config{Store: db, Logger: log, Now: time.Now, Registry: prometheus.NewRegistry()})
	if err := e.Register(jobs.Kind{Name: "k", Handler: h, Poll: 5 * time.Millisecond, Backoff: func(int) time.Duration { return time.Millisecond }}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Stop)
	testkit.WaitFor(t, 10*time.Second, "still waiting for both jobs done", func() bool { return jobCount(t, db, "k") == 0 })

	mu.Lock()
	defer mu.Unlock()
	if seen["with"] != "req-abc" || seen["without"] != "" {
		t.Errorf("request ids seen by the runs: %v", seen)
	}
	var with, without int
	for _, line := range strings.Split(logs.String(), "\n") {
		switch { // "without" first: "with" is in it
		case strings.Contains(line, "ref=without") || strings.Contains(line, "job=k:without"):
			without++
			if strings.Contains(line, "request_id") {
				t.Errorf("line of a job no request made has a request id: %s", line)
			}
		case strings.Contains(line, "ref=with") || strings.Contains(line, "job=k:with"):
			with++
			if strings.Count(line, "request_id=req-abc") != 1 {
				t.Errorf("line of the job without its request id, or with it twice: %s", line)
			}
		}
	}
	if with < 3 || without < 3 { // two handler lines and the retry's line each
		t.Errorf("%d and %d lines of the jobs, want 3 each:\n%s", with, without, logs.String())
	}
}
