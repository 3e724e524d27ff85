package video

import (
	"context"
	"slices"
	"testing"
	"time"

	"mediagen/internal/jobs"
	"mediagen/internal/store"
)

// TestTaskHistoryRecordsRunsFailedAttemptsAndTheInternalReason: run by the job engine, a task
// whose step made progress and then kept failing has, in order, its acceptance, its step
// changes with their attempts, each failed attempt with its error, and its end with the reason
// behind the sanitized public error.
func TestTaskHistoryRecordsRunsFailedAttemptsAndTheInternalReason(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := &scripted{script: []string{"ok", "err", "err", "err"}, calls: map[string]int{}}
	r := e.runTasks(h, jobs.Kind{Poll: 5 * time.Millisecond, MaxAttempts: 3, Backoff: jobs.Exponential(time.Millisecond, 4*time.Millisecond)})
	defer r.Stop()
	id := e.task(1_000_000, time.Now())
	if got := e.waitTerminal(id); got.Status != store.StatusFailed || got.ErrorMessage != gaveUpMessage {
		t.Fatalf("task %+v", got)
	}
	events, err := e.db.TaskEvents(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		from, to, step string
		attempt        int
		detail         string
	}
	var got []row
	for _, ev := range events {
		got = append(got, row{ev.From, ev.To, ev.Step, ev.Attempt, ev.Detail})
	}
	want := []row{
		{"", "queued", "", 0, ""},
		{"queued", "in_progress", "save", 1, ""},
		{"in_progress", "in_progress", "s1", 1, ""},
		{"in_progress", "in_progress", "s1", 1, "attempt 1 failed: upstream 503"},
		{"in_progress", "in_progress", "s1", 2, "attempt 2 failed: upstream 503"},
		{"in_progress", "failed", "done", 3, "gave up after attempt 3: upstream 503"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("history:\n got %+v\nwant %+v", got, want)
	}
}
