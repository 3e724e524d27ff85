package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/provider/dashscope/dashscopefake"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres/pgtest"
)

// The money property over the dashscope kind: random Wan requests (text and first-frame
// models, 480p and 720p, every ratio Wan takes, 5, 10, 15 s and the model's default) through
// the real server on the fake DashScope, which answers at random as an honest service does and
// as a misbehaving one: results of the asked length, longer ones, faster ones (60 fps), content
// refusals, cancellations, and 10% faults of every call (lost create answers among them). On
// SQLite and PostgreSQL: every task ends; no task makes more than one upstream job, a completed
// one exactly one; every charge is at most its reservation and at least what its stored result
// implies; a failed task is refunded; a longer or faster result is recorded as the account's
// upstream excess (and an honest one leaves none); nothing stays reserved; the ledger checks
// out. MEDIAGEN_PROPERTY_SEED replays a run; MEDIAGEN_PROPERTY_REQUESTS sets its size (30).
func TestPropertyDashScopeChargesAreBoundedAndEveryTaskMakesAtMostOneJob(t *testing.T) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); dashscopeProperty(t) })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); dashscopeProperty(t, "--db", pgtest.URL(t)) })
}

// wanJob is what the property drew for one request's upstream job.
type wanJob struct {
	clip, end, excess string // excess: the kind the service must record ("" for none)
}

func dashscopeProperty(t *testing.T, args ...string) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("MEDIAGEN_PROPERTY_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	n := sizeFromEnv(t, "MEDIAGEN_PROPERTY_REQUESTS", 30)
	t.Logf("seed %d (MEDIAGEN_PROPERTY_SEED=%d replays this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 43))
	media := t.TempDir()
	var clipsMu sync.Mutex
	clips := map[string]string{}
	clipOf := func(secs float64, fps int) string {
		clipsMu.Lock()
		defer clipsMu.Unlock()
		name := fmt.Sprintf("c-%v-%d.mp4", secs, fps)
		if p, ok := clips[name]; ok {
			return p
		}
		p := colorClip(t, media, name, 64, 36, fps, secs)
		clips[name] = p
		return p
	}
	var mu sync.Mutex
	jobs := map[string]wanJob{} // by prompt
	cfg := dashscopefake.Config{Clip: clipOf(5, 24), FaultPercent: 10, Seed: seed,
		ClipFor: func(p string) string { mu.Lock(); defer mu.Unlock(); return jobs[p].clip },
		End:     func(p string) string { mu.Lock(); defer mu.Unlock(); return jobs[p].end }}
	e, fake, _ := dashscopeRig(t, cfg, append([]string{"--workers", "6", "--task-retry-max", "1s", "--log-level", "error"}, args...)...)

	ratios := map[string][]string{"480p": {"16:9", "9:16", "1:1", "adaptive"}, "720p": {"16:9", "9:16", "1:1", "4:3", "3:4", "adaptive"}}
	var ids, prompts []string
	for i := 0; i < n; i++ {
		secs := []int{5, 10, 15, -1}[rng.IntN(4)]
		length := secs
		if secs == -1 {
			length = 5 // the Wan models' default
		}
		job := wanJob{clip: clipOf(float64(length), 24)}
		switch k := rng.IntN(100); {
		case k < 8:
			job.end = dashscopefake.EndRefuse
		case k < 12:
			job.end = dashscopefake.EndCancel
		case k < 22: // longer than asked (past the model's longest for the default)
			job.clip, job.excess = clipOf(float64(length)+3, 24), billing.ExcessDuration
			if secs == -1 {
				job.clip = clipOf(18, 24)
			}
		case k < 30: // faster than the request's 24 fps
			job.clip, job.excess = clipOf(float64(length), 60), billing.ExcessOverRequest
		}
		prompt := fmt.Sprintf("wan %d", i)
		mu.Lock()
		jobs[prompt] = job
		mu.Unlock()
		res := []string{"480p", "720p"}[rng.IntN(2)]
		body := fmt.Sprintf(`{"model":"demo-video-fast","prompt":%q,"metadata":{"duration":%d,"resolution":%q,"ratio":%q}}`,
			prompt, secs, res, ratios[res][rng.IntN(len(ratios[res]))])
		status, b := e.call("POST", "/v1/videos", body)
		if status != 202 {
			t.Fatalf("%s: %d %s", body, status, b)
		}
		ids = append(ids, idOf(t, b))
		prompts = append(prompts, prompt)
	}
	outcomes := map[string]int{}
	for i, id := range ids {
		task := e.wait(id)
		outcomes[task.Status]++
		jobsMade := fake.JobsFor(prompts[i])
		if jobsMade > 1 || (task.Status == "completed" && jobsMade != 1) {
			t.Errorf("task %d (%s) ended %s with %d upstream jobs", i, id, task.Status, jobsMade)
		}
	}
	ctx := context.Background()
	if err := e.m.db.CheckLedger(ctx); err != nil {
		t.Fatalf("ledger: %v", err)
	}
	records, err := e.m.db.UpstreamExcess(ctx, store.ExcessFilter{Limit: 100_000})
	if err != nil {
		t.Fatal(err)
	}
	recorded := map[string]map[string]bool{}
	for _, r := range records {
		if recorded[r.Ref] == nil {
			recorded[r.Ref] = map[string]bool{}
		}
		recorded[r.Ref][r.Kind] = true
		if r.Upstream != "wan-main" {
			t.Errorf("excess record %+v, want on wan-main", r)
		}
	}
	checked := 0
	var charged money.Micros
	for i, id := range ids {
		run, err := e.m.db.TaskRun(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		charged += run.Charged
		if run.Charged > run.Reserved {
			t.Errorf("task %s charged %s against a reservation of %s", id, run.Charged, run.Reserved)
		}
		if run.Status != store.StatusCompleted {
			if run.Charged != 0 {
				t.Errorf("task %s ended %s and was charged %s", id, run.Status, run.Charged)
			}
			continue
		}
		want := jobs[prompts[i]].excess
		if want != "" && !recorded[id][want] {
			t.Errorf("task %s: the upstream's %s was not recorded (recorded %v)", id, want, recorded[id])
		}
		if want == "" && len(recorded[id]) > 0 {
			t.Errorf("task %s: excess %v recorded for an upstream within the request", id, recorded[id])
		}
		if floor := floorOf(t, e.m.URL(), []string{e.key}, run); run.Charged < floor {
			t.Errorf("task %s charged %s, below the %s its stored result implies", id, run.Charged, floor)
		}
		checked++
	}
	// The key's balance moved by exactly the settled charges: nothing stays reserved.
	if used := e.used(); used != charged {
		t.Errorf("the key used %s, the tasks were charged %s", used, charged)
	}
	t.Logf("%d tasks: %v; %d charges checked against their floor; the fake made %d jobs, lost %d create answers; %d excess records",
		len(ids), outcomes, checked, fake.Jobs(), fake.LostAnswers(), len(records))
	if outcomes["completed"] == 0 {
		t.Error("no task completed")
	}
}

// idOf reads a create answer's task id.
func idOf(t *testing.T, b []byte) string {
	t.Helper()
	s := string(b)
	i := strings.Index(s, `"id":"`)
	if i < 0 {
		t.Fatalf("create answer %s", b)
	}
	s = s[i+len(`"id":"`):]
	return s[:strings.IndexByte(s, '"')]
}
