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
	"mediagen/internal/money"
	"mediagen/internal/provider/vertex/vertexfake"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres/pgtest"
)

// The money property over the vertex kind, through the whole service on both stores: random
// requests (Veo 3's 8 s or the model's default, with or without sound) through the fake Vertex AI at 30% random faults of creates
// and operation reads, a revoked token now and then, its results of random lengths — some
// within the request, some longer than it allows. Whatever happens, every task ends; every
// charge is at most its reservation and, for a completed task, at least what its stored video
// implies; a failed task is charged nothing and records at most a lost_create excess; a
// longer result records its duration excess; each task made at most one upstream job (one
// when completed); the ledger balances.
func TestVertexMoneyPropertyHoldsUnderRandomRequestsAndFaults(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("random tasks through a faulty fake upstream")
	}
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); vertexPropertyRun(t) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); vertexPropertyRun(t, "--db", pgtest.URL(t)) })
}

func vertexPropertyRun(t *testing.T, storeArgs ...string) {
	tools := requireTools(t)
	dir := t.TempDir()
	lengths := []float64{3, 8, 11.5, 14}
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
		return clips[l]
	}
	tasks := sizeFromEnv(t, "MEDIAGEN_PROPERTY_TASKS", 30)
	e, fake, _ := startVertex(t, vertexfake.Config{Clip: clips["len 3"], ClipFor: clipFor, FaultPercent: 30, Seed: 4}, false,
		1000*money.Scale, append([]string{"--workers", "6", "--task-retry-max", "1s", "--task-deadline", "90s"}, storeArgs...)...)
	rng := rand.New(rand.NewPCG(5, 5))
	type sent struct {
		id, prompt string
		longer     bool
	}
	var all []sent
	for i := range tasks {
		dur := []int{8, -1}[rng.IntN(2)]
		audio := []bool{true, false}[rng.IntN(2)]
		l := lengths[rng.IntN(len(lengths))]
		prompt := fmt.Sprintf("p%d|len %v", i, l)
		id := e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":%q,"metadata":{"duration":%d,"ratio":"16:9","generate_audio":%v}}`, prompt, dur, audio))
		if i%10 == 9 {
			fake.ExpireTokens() // revoked mid-run: the next call of the account fetches a new one
		}
		all = append(all, sent{id: id, prompt: prompt, longer: dur > 0 && l > float64(dur)+1}) // -1 is bounded by the family's longest
	}
	ex, err := func() ([]store.UpstreamExcess, error) {
		for _, s := range all {
			e.wait(s.id)
		}
		return e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "veo-vertex", Limit: 10 * tasks})
	}()
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
	}
	t.Logf("%d tasks: %v; %d excess records; the fake made %d jobs, lost %d create answers, issued %d tokens", tasks, outcomes, len(ex), fake.Jobs(), fake.LostAnswers(), fake.TokensIssued())
	if fake.LostAnswers() == 0 {
		t.Error("no create lost its answer: the property did not meet the fault it is about")
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
