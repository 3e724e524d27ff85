package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/provider/minimax/minimaxfake"
	"mediagen/internal/store"
)

// TestMiniMaxFaultsEndEveryTaskWithAtMostOneJobAndTheRightMoney runs 40 tasks
// (MEDIAGEN_FAULT_TASKS sets another number) through the fake MiniMax failing 30% of its
// answers: creates refused before any job (503, 1002 on HTTP 200), creates that make the job
// and then lose the answer (a 500, a dropped connection, a cut body), queries answering 500,
// 429, a transient code on HTTP 200 or cut JSON, file retrievals failing or handing out an
// expired link, downloads answering 404. One task in ten is refused by the output check.
// MiniMax can neither find a lost create nor dedup a repeated one, so every task must end
// with at most one upstream job — a lost answer ends its task, refunded, as lost_create
// excess — a completed task charged the tokens of its stored video, every other task
// refunded, and the ledger must balance.
func TestMiniMaxFaultsEndEveryTaskWithAtMostOneJobAndTheRightMoney(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("tasks through a faulty fake upstream")
	}
	tasks := sizeFromEnv(t, "MEDIAGEN_FAULT_TASKS", 40)
	e, fake, _ := startMiniMax(t, minimaxfake.Config{FaultPercent: 30, Seed: 3,
		End: func(prompt string) string {
			if strings.HasSuffix(prompt, "0") {
				return minimaxfake.EndRefuse
			}
			return minimaxfake.EndSucceed
		}}, 1000*money.Scale, "--workers", "8", "--task-retry-max", "1s", "--account-extra", "    max_in_flight: 10\n    timeout_seconds: 2\n")
	var ids []string
	for i := 0; i < tasks; i++ {
		ids = append(ids, e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":"task %d","metadata":{"duration":6,"ratio":"16:9"}}`, i)))
	}
	deadline := time.Now().Add(4*time.Minute + time.Duration(tasks)*time.Second)
	completed, failed := 0, 0
	var tokens int64
	for i, id := range ids {
		task := e.wait(id)
		switch task.Status {
		case "completed":
			completed++
			if task.Usage == nil || (tokens != 0 && task.Usage.CompletionTokens != tokens) {
				t.Errorf("task %d usage %+v", i, task.Usage)
			} else {
				tokens = task.Usage.CompletionTokens
			}
			if i%10 == 0 {
				t.Errorf("task %d completed; its output was refused", i)
			}
		case "failed":
			failed++
			if task.Error == nil || task.Error.Code != "video_generation_failed" || strings.Contains(task.Error.Message, "sensitive") {
				t.Errorf("task %d failed with %+v", i, task.Error)
			}
		default:
			t.Errorf("task %d (%s) ended %s %+v", i, id, task.Status, task.Error)
		}
		if n := fake.JobsFor(fmt.Sprintf("task %d", i)); n > 1 || (task.Status == "completed" && n != 1) {
			t.Errorf("task %d (%s) made %d upstream jobs", i, task.Status, n)
		}
		if time.Now().After(deadline) {
			t.Fatal("the tasks did not finish in time")
		}
	}
	ex, err := e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "minimax-main", Limit: tasks})
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, r := range ex {
		if r.Kind == billing.ExcessLostCreate {
			lost++
		}
	}
	t.Logf("%d completed, %d failed (%d as lost creates); the fake made %d jobs and lost %d create answers",
		completed, failed, lost, fake.Jobs(), fake.LostAnswers())
	if fake.LostAnswers() == 0 || lost == 0 {
		t.Errorf("%d creates lost their answer, %d tasks ended as lost creates: the faults were not exercised", fake.LostAnswers(), lost)
	}
	if lost < fake.LostAnswers() {
		t.Errorf("%d lost answers but %d lost_create records: a lost answer went unrecorded", fake.LostAnswers(), lost)
	}
	if completed < tasks/3 {
		t.Errorf("%d of %d tasks completed", completed, tasks)
	}
	tenant, _ := e.m.cat().Tenant("demo")
	one, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-fast")), tokens)
	if got, want := e.used(), one*money.Micros(completed); got != want {
		t.Errorf("charged %s, want %s (%d completed × %s)", got, want, completed, one)
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
