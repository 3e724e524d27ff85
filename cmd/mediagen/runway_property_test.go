package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider/runway/runwayfake"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres/pgtest"
)

// The money property over the runway kind: random requests (5 s, 10 s or the model's
// default) through the fake Runway at 30% random faults, its results of random lengths, some
// billed (cost.credits) 20 s beyond the request. Whatever happens, every task ends; every
// charge is at most its reservation and, for a completed task, at least what its stored video
// implies; a failed task is charged nothing and records at most a lost_create excess; a longer
// result records its duration excess and an over-billed one usage_over; each task made at most
// one upstream job (one when completed); the ledger balances. On SQLite and PostgreSQL.
func TestRunwayMoneyPropertyHoldsUnderRandomRequestsAndFaults(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("random tasks through a faulty fake upstream")
	}
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); runwayProperty(t) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); runwayProperty(t, "--db", pgtest.URL(t)) })
}

func runwayProperty(t *testing.T, args ...string) {
	tools := requireTools(t)
	dir := t.TempDir()
	lengths := []float64{3, 5, 9.5, 14}
	clips := map[string]string{}
	for _, d := range lengths {
		p := filepath.Join(dir, fmt.Sprintf("clip-%v.mp4", d))
		if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 32, Height: 18, FPS: 24, Duration: d, Container: "mp4"}, p); err != nil {
			t.Fatal(err)
		}
		clips[fmt.Sprintf("len %v", d)] = p
	}
	clipFor := func(prompt string) string {
		_, l, _ := strings.Cut(prompt, "|")
		l, _, _ = strings.Cut(l, "|")
		return clips[l]
	}
	overBilled := func(prompt string) int {
		if strings.HasSuffix(prompt, "|over") {
			return 20
		}
		return 0
	}
	tasks := sizeFromEnv(t, "MEDIAGEN_PROPERTY_TASKS", 30)
	e, fake := runwayRig(t, runwayfake.Config{Clip: clips["len 3"], ClipFor: clipFor, ExtraSeconds: overBilled, FaultPercent: 30, Seed: 4},
		append([]string{"--workers", "6", "--task-retry-max", "1s", "--task-deadline", "90s"}, args...)...)
	rng := rand.New(rand.NewPCG(5, 7))
	type sent struct {
		id, prompt   string
		longer, over bool
	}
	var all []sent
	for i := range tasks {
		dur := []int{5, 10, -1}[rng.IntN(3)]
		l := lengths[rng.IntN(len(lengths))]
		over := dur > 0 && rng.IntN(3) == 0
		prompt := fmt.Sprintf("p%d|len %v", i, l)
		if over {
			prompt += "|over"
		}
		id := e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":%q,"metadata":{"duration":%d,"ratio":"16:9","resolution":"720p"}}`, prompt, dur))
		all = append(all, sent{id: id, prompt: prompt, longer: dur > 0 && l > float64(dur)+1, over: over}) // -1 is bounded by the family's longest
	}
	for _, s := range all {
		e.wait(s.id)
	}
	ex, err := e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "runway-main", Limit: 10 * tasks})
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]map[string]bool{}
	for _, r := range ex {
		if recorded[r.Ref] == nil {
			recorded[r.Ref] = map[string]bool{}
		}
		recorded[r.Ref][r.Kind] = true
	}
	outcomes := map[string]int{}
	overCompleted := 0
	for _, s := range all {
		run, err := e.m.db.TaskRun(context.Background(), s.id)
		if err != nil {
			t.Fatal(err)
		}
		outcomes[run.Status]++
		jobs := fake.JobsFor(s.prompt)
		if run.Charged > run.Reserved {
			t.Errorf("task %s charged %s against a reservation of %s", s.id, run.Charged, run.Reserved)
		}
		if jobs > 1 {
			t.Errorf("task %s made %d upstream jobs", s.id, jobs)
		}
		if run.Status != store.StatusCompleted {
			if run.Charged != 0 {
				t.Errorf("task %s ended %s charged %s", s.id, run.Status, run.Charged)
			}
			for k := range recorded[s.id] {
				if k != billing.ExcessLostCreate {
					t.Errorf("task %s ended %s with %s excess", s.id, run.Status, k)
				}
			}
			continue
		}
		if jobs != 1 {
			t.Errorf("completed task %s made %d jobs", s.id, jobs)
		}
		if floor := floorOf(t, e.m.URL(), []string{e.key}, run); run.Charged < floor {
			t.Errorf("task %s charged %s, below the %s its stored result implies", s.id, run.Charged, floor)
		}
		if s.longer && !recorded[s.id][billing.ExcessDuration] {
			t.Errorf("task %s: a result longer than asked left no duration excess (%v)", s.id, recorded[s.id])
		}
		if s.over {
			overCompleted++
		}
		if s.over && !recorded[s.id][billing.ExcessUsageOver] {
			t.Errorf("task %s: credits billed 20 s beyond the request left no usage_over excess (%v)", s.id, recorded[s.id])
		}
	}
	t.Logf("%d tasks: %v; %d excess records; the fake made %d jobs, lost %d create answers", tasks, outcomes, len(ex), fake.Jobs(), fake.LostAnswers())
	if overCompleted == 0 {
		t.Error("no over-billed task completed: the property did not meet usage_over")
	}
	if fake.LostAnswers() == 0 {
		t.Error("no create lost its answer: the property did not meet the fault it is about")
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
