package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"mediagen/internal/money"
	"mediagen/internal/provider/mediakit/mediakitfake"
)

// TestMediaKitFaultsEndEveryTaskWithOneJobAndTheRightMoney runs 20 standalone enhancements
// (MEDIAGEN_FAULT_TASKS sets another number) through the fake AI MediaKit failing 30% of its
// answers: creates refused with 503 or 429 (Retry-After) before any job is made, creates that
// make the job and then lose the answer (a 502, a dropped connection, a cut body), reads
// answering 500, 429 or a cut body, result links answering 404. One task in ten is refused by
// the vendor's content check (its fps marks it). Every task ends with at most one paid job —
// exactly one for a completed task, although lost answers made the service create again with
// the same client_token — a completed task charged what its stored, measured result implies,
// every other refunded, and the ledger balances.
func TestMediaKitFaultsEndEveryTaskWithOneJobAndTheRightMoney(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through a faulty fake upstream")
	}
	tools := requireTools(t)
	dir := t.TempDir()
	cdn := mediakitSource(t, tools, t.TempDir())
	tasks := sizeFromEnv(t, "MEDIAGEN_FAULT_TASKS", 20)
	fake := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Tools: tools, Dir: t.TempDir(), FaultPercent: 30, Seed: 5,
		End: func(_ string, body map[string]any) string {
			if body["fps"] == 20.0 {
				return mediakitfake.EndRefuse
			}
			return mediakitfake.EndSucceed
		}})
	t.Cleanup(fake.Close)
	var logs syncBuffer
	m := NewMain(mediakitEnv(), io.Discard, &logs)
	m.FetchTLS = trustBoth(fake.Certificate(), cdn.Certificate())
	e := startRemote(t, m, dir, tools, 1000*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--workers", "8", "--task-retry-max", "2s",
		"--catalog", mediakitCatalog(t, t.TempDir(), fake.Base(), ""))
	var ids []string
	for i := 0; i < tasks; i++ {
		fps := 24
		if i%10 == 0 {
			fps = 20 // refused by the fake's content check
		}
		ids = append(ids, e.create(fmt.Sprintf(`{"model":"demo-enhance-lite","metadata":{"video_url":"%s/clip.mp4","duration":2,"resolution_limit":360,"fps":%d,"client_request_id":"fault-%d"}}`, cdn.URL, fps, i)))
	}
	deadline := time.Now().Add(4*time.Minute + time.Duration(tasks)*time.Second)
	completed, refused, gaveUp := 0, 0, 0
	var charged money.Micros
	done := make([]bool, len(ids))
	for i, id := range ids {
		task := e.wait(id)
		switch {
		case task.Status == "completed" && i%10 != 0:
			completed++
			done[i] = true
			charged += measuredCharge(t, e, id, task.Metadata.VideoURL)
		case task.Status == "failed" && i%10 == 0 && task.Error != nil && task.Error.Code == "InvalidParameter" &&
			!strings.Contains(task.Error.Message, "content cannot"):
			refused++
		case task.Status == "failed":
			gaveUp++
			t.Logf("task %s failed after its attempts: %+v; the service logged:\n%s", id, task.Error, linesWith(logs.String(), id))
		default:
			t.Errorf("task %d (%s) ended %s %+v", i, id, task.Status, task.Error)
		}
		if time.Now().After(deadline) {
			t.Fatal("the tasks did not finish in time")
		}
	}
	t.Logf("%d completed, %d refused by the upstream, %d gave up; the fake made %d jobs, lost %d create answers, rate-limited %d creates",
		completed, refused, gaveUp, fake.Jobs(), fake.LostAnswers(), fake.RateLimited())
	if completed < (tasks-tasks/10)*8/10 {
		t.Errorf("%d of %d tasks completed; 30%% faults retried with backoff should complete nearly all", completed, tasks)
	}
	if fake.LostAnswers() == 0 {
		t.Error("no create lost its answer: the fault was not exercised")
	}
	for i, id := range ids {
		if n := fake.JobsFor(id + ":enh"); n > 1 || (done[i] && n != 1) {
			t.Errorf("task %d made %d upstream jobs", i, n)
		}
	}
	if fake.Jobs() > tasks {
		t.Errorf("%d jobs for %d tasks", fake.Jobs(), tasks)
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	if got := e.used(); got != charged {
		t.Errorf("charged %s, want %s (%d completed tasks' measured charges; failed ones refunded)", got, charged, completed)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}

// A job AI MediaKit never ends runs out the task's deadline: a standalone enhancement ends
// failed (the contract names only completed and failed as its stop states), refunded, with
// its one job; a refused key makes no job and the task waits for the operator until then.
func TestMediaKitJobThatNeverEndsAndARefusedKeyEndRefunded(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	cdn := mediakitSource(t, tools, t.TempDir())
	never := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Tools: tools, Dir: t.TempDir(),
		End: func(string, map[string]any) string { return mediakitfake.EndNever }})
	t.Cleanup(never.Close)
	refused := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Tools: tools, Dir: t.TempDir(), Status: 403})
	t.Cleanup(refused.Close)
	for _, tc := range []struct {
		name string
		fake *mediakitfake.Server
		jobs int
	}{{"a job that never ends", never, 1}, {"a refused key", refused, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := NewMain(mediakitEnv(), io.Discard, io.Discard)
			m.FetchTLS = trustBoth(tc.fake.Certificate(), cdn.Certificate())
			e := startRemote(t, m, t.TempDir(), tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "error", "--task-deadline", "4s",
				"--catalog", mediakitCatalog(t, t.TempDir(), tc.fake.Base(), ""))
			id := e.create(`{"model":"demo-enhance-lite","metadata":{"video_url":"` + cdn.URL + `/clip.mp4","duration":2,"resolution_limit":360}}`)
			task := e.wait(id)
			if task.Status != "failed" || task.Error == nil {
				t.Fatalf("task ended %s %+v, want failed", task.Status, task.Error)
			}
			t.Logf("ended %s: %+v", task.Status, task.Error)
			if used := e.used(); used != 0 {
				t.Errorf("charged %s", used)
			}
			if n := tc.fake.JobsFor(id + ":enh"); n != tc.jobs || tc.fake.Jobs() != tc.jobs {
				t.Errorf("%d jobs, want %d", n, tc.jobs)
			}
		})
	}
}
