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
	"mediagen/internal/store"
	"mediagen/internal/store/postgres/pgtest"
)

// blindFake is what the money property reads of a fake whose kind can neither find nor safely
// repeat a lost create (provider.BlindCreator: minimax, gemini, vertex).
type blindFake interface {
	JobsFor(prompt string) int
	Jobs() int
	LostAnswers() int
}

// blindProperty is one kind's money property run: random native requests of its durations
// through its fake at 30% random faults, the results of random lengths (lengths, some longer
// than the request allows), on the store of storeArgs.
type blindProperty struct {
	upstream  string    // the account's name in the fake's catalog
	durations []int     // the request durations drawn (-1: the model's default)
	lengths   []float64 // the result lengths drawn
	// meta, when set, draws more metadata for a request (e.g. `,"generate_audio":true`).
	meta func(rng *rand.Rand) string
	// start starts the service on the fake serving firstClip, or clipFor(prompt) when it is
	// set, at 30% faults, losing the answer of every create of a prompt loseFor is true for
	// (so each run meets the fault it is about, whatever the random faults draw), with args;
	// afterCreate (may be nil) runs after the i-th create; report adds to the run's log line.
	start func(t *testing.T, firstClip string, clipFor func(string) string, loseFor func(string) bool, args ...string) (e *e2e, fake blindFake, afterCreate func(i int), report func() string)
}

// runOnBothStores runs p on SQLite and on PostgreSQL, in parallel.
func (p blindProperty) runOnBothStores(t *testing.T) {
	t.Helper()
	t.Parallel()
	if testing.Short() {
		t.Skip("random tasks through a faulty fake upstream")
	}
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); p.run(t) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); p.run(t, "--db", pgtest.URL(t)) })
}

// run: whatever happens, every task ends; every charge is at most its reservation and, for a
// completed task, at least what its stored video implies; a failed task is charged nothing
// and records at most a lost_create excess; a longer result records its duration excess; each
// task made at most one upstream job (one when completed); the ledger balances.
func (p blindProperty) run(t *testing.T, storeArgs ...string) {
	tools := requireTools(t)
	dir := t.TempDir()
	clips := map[string]string{}
	for _, d := range p.lengths {
		path := filepath.Join(dir, fmt.Sprintf("clip-%v.mp4", d))
		if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 32, Height: 18, FPS: 24, Duration: d, Container: "mp4"}, path); err != nil {
			t.Fatal(err)
		}
		clips[fmt.Sprintf("len %v", d)] = path
	}
	clipFor := func(prompt string) string {
		_, l, _ := strings.Cut(prompt, "|")
		return clips[l]
	}
	tasks := sizeFromEnv(t, "MEDIAGEN_PROPERTY_TASKS", 30)
	args := append([]string{"--workers", "6", "--task-retry-max", "1s", "--task-deadline", "90s"}, storeArgs...)
	// The first task's create always loses its answer (after making its job).
	loseFor := func(prompt string) bool { return strings.HasPrefix(prompt, "p0|") }
	e, fake, afterCreate, report := p.start(t, clips[fmt.Sprintf("len %v", p.lengths[0])], clipFor, loseFor, args...)
	rng := rand.New(rand.NewPCG(5, 5))
	type sent struct {
		id, prompt string
		longer     bool
	}
	var all []sent
	for i := range tasks {
		dur := p.durations[rng.IntN(len(p.durations))]
		var meta string
		if p.meta != nil {
			meta = p.meta(rng)
		}
		l := p.lengths[rng.IntN(len(p.lengths))]
		prompt := fmt.Sprintf("p%d|len %v", i, l)
		id := e.create(fmt.Sprintf(`{"model":"demo-video-fast","prompt":%q,"metadata":{"duration":%d,"ratio":"16:9"%s}}`, prompt, dur, meta))
		if afterCreate != nil {
			afterCreate(i)
		}
		all = append(all, sent{id: id, prompt: prompt, longer: dur > 0 && l > float64(dur)+1}) // -1 is bounded by the family's longest
	}
	for _, s := range all {
		e.wait(s.id)
	}
	ex, err := e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: p.upstream, Limit: 10 * tasks})
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
	more := ""
	if report != nil {
		more = report()
	}
	t.Logf("%d tasks: %v; %d excess records; the fake made %d jobs, lost %d create answers%s", tasks, outcomes, len(ex), fake.Jobs(), fake.LostAnswers(), more)
	if fake.LostAnswers() == 0 {
		t.Error("no create lost its answer: the property did not meet the fault it is about")
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
