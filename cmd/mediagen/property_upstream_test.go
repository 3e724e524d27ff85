package main

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/contract"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/provider"
)

// The random engine and the media fixtures of the billing property test
// (billing_property_test.go).

// fixtures holds small clips of a given length and frame rate, each rendered once per test
// binary (sharedClip) and copied into the test's own directory.
type fixtures struct {
	t     *testing.T
	tools ffmpeg.Tools
	dir   string
	mu    sync.Mutex
}

func (f *fixtures) name(d float64, fps int) string {
	return fmt.Sprintf("clip-%s-%d.mp4", strconv.FormatFloat(d, 'f', -1, 64), fps)
}

func (f *fixtures) clip(d float64, fps int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	p := filepath.Join(f.dir, f.name(d, fps))
	if _, err := os.Stat(p); err == nil {
		return p
	}
	src, err := sharedClip(f.tools, f.name(d, fps), ffmpeg.RenderSpec{Width: 32, Height: 18, FPS: fps, Duration: d, Container: "mp4"})
	if err == nil {
		err = copyFile(src, p)
	}
	if err != nil {
		f.t.Errorf("clip %s: %v", p, err)
	}
	return p
}

// fakeJob is what the random upstream decided for one job.
type fakeJob struct {
	out provider.Job
	// misbehaved is the excess kind the service must record for this job's misbehaviour
	// ("" for a job within its request).
	misbehaved string
}

// randomUpstream is an engine with random outcomes. Within-bounds successes stay inside what
// the request allows — the requested length (or the family's longest for -1) plus less than
// the slack, the request's 24 fps for generation, the declared fps or any if none for
// enhancement — and report the tokens of what they delivered. Misbehaving successes (15%) go beyond or below it: a
// result longer than asked (cut, upstream excess "duration"), a shorter one that reports the
// asked length's tokens ("usage_over"), usage inflated threefold ("usage_over") or deflated
// tenfold ("usage_under"), or a higher frame rate than the request's ("over_request").
type randomUpstream struct {
	t       *testing.T
	fx      *fixtures
	mu      sync.Mutex
	rng     *rand.Rand
	jobs    map[string]fakeJob
	sources map[string]float64         // enhancement source URL → its length
	bad     map[string]map[string]bool // task id → the excess kinds its misbehaving jobs must leave
	modes   map[string]int             // misbehaviour → jobs
}

// misbehaviourPercent is the share of successful jobs that misbehave.
const misbehaviourPercent = 15

func (u *randomUpstream) draw() (kind int, slack float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	slacks := []float64{0, 0.042, 0.2}
	return u.rng.IntN(100), slacks[u.rng.IntN(len(slacks))]
}

func (u *randomUpstream) intn(n int) int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.rng.IntN(n)
}

func (u *randomUpstream) record(key string, j fakeJob, mode string) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if j.misbehaved != "" {
		if u.bad == nil {
			u.bad, u.modes = map[string]map[string]bool{}, map[string]int{}
		}
		task, _, _ := strings.Cut(key, ":")
		if u.bad[task] == nil {
			u.bad[task] = map[string]bool{}
		}
		u.bad[task][j.misbehaved] = true
		u.modes[mode]++
	}
	u.jobs[key] = j
	return key
}

// expected is the excess kinds the task's misbehaving jobs must have left (nil: none).
func (u *randomUpstream) expected(task string) map[string]bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bad[task]
}

func (u *randomUpstream) misbehaviours() map[string]int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return maps.Clone(u.modes)
}

// terminal draws failure or expiry for 20% of jobs; ok is false then.
func terminal(kind int) (provider.Job, bool) {
	switch {
	case kind < 10:
		return provider.Job{Status: provider.StatusFailed, ErrorCode: "video_generation_failed"}, false
	case kind < 20:
		return provider.Job{Status: provider.StatusExpired}, false
	}
	return provider.Job{}, true
}

// tokensOf is what an honest upstream reports for a clip: its tokens as the service
// measures them.
func (u *randomUpstream) tokensOf(ctx context.Context, path string) int64 {
	info, err := probeBytes(ctx, u.fx.tools, path)
	if err != nil {
		u.t.Errorf("probe %s: %v", path, err)
		return 0
	}
	return billing.NativeTokens(info.Width, info.Height, info.FPS, info.Billable())
}

func (u *randomUpstream) SubmitGeneration(ctx context.Context, r provider.GenerateRequest) (string, error) {
	kind, slack := u.draw()
	if j, ok := terminal(kind); !ok {
		return u.record(r.IdempotencyKey, fakeJob{out: j}, ""), nil
	}
	secs, longest := r.Duration, r.Duration
	if secs <= 0 {
		longest = contract.NativeMaxSeconds(contract.FamilyFast20)
		if strings.Contains(r.Model, "2.5") {
			longest = contract.NativeMaxSeconds(contract.Family25)
		}
		if strings.Contains(r.Prompt, "production") {
			longest = contract.ProductionMaxSeconds
		}
		choices := []int{4, 5, 10, longest}
		secs = choices[u.intn(len(choices))]
	}
	d, fps := float64(secs)+slack, 24
	mode := ""
	production := strings.Contains(r.Prompt, "production")
	if kind >= 100-misbehaviourPercent {
		mode = []string{"longer", "shorter", "inflated", "deflated", "fps"}[u.intn(5)]
		if production {
			mode = "longer" // the generation half's video is all that is billed
		}
	}
	job := fakeJob{}
	switch mode {
	case "longer": // past the longest the request allows
		d = float64(longest) + 1 + float64(u.intn(15))
		job.misbehaved = billing.ExcessDuration
	case "shorter":
		d = max(1, float64(secs)/3)
		job.misbehaved = billing.ExcessUsageOver
	case "fps":
		fps = 60
		job.misbehaved = billing.ExcessOverRequest
	case "inflated":
		job.misbehaved = billing.ExcessUsageOver
	case "deflated":
		job.misbehaved = billing.ExcessUsageUnder
	}
	path := u.fx.clip(d, fps)
	// What an honest upstream reports: the tokens of the clip it delivered (the fixtures are
	// 32x18: rendering every frame size the requests name would cost minutes, and the frame
	// is not what this property is about; the reservations still price the requested frame).
	tokens := u.tokensOf(ctx, path)
	switch mode {
	case "shorter":
		tokens = billing.NativeTokens(32, 18, billing.NativeFPS, float64(secs)+slack) // the asked length's
	case "inflated":
		tokens *= 3
	case "deflated":
		tokens /= 10
	}
	if production {
		tokens = 0
	}
	job.out = provider.Job{Status: provider.StatusSucceeded, Progress: 100,
		Output: &provider.Output{Source: provider.Source{Path: path}, ContentType: "video/mp4", CompletionTokens: tokens}}
	return u.record(r.IdempotencyKey, job, mode), nil
}

func (u *randomUpstream) PollGeneration(_ context.Context, id string) (provider.Job, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	j, ok := u.jobs[id]
	if !ok {
		return provider.Job{}, provider.ErrUnknownJob
	}
	return j.out, nil
}

func (u *randomUpstream) SubmitEnhancement(ctx context.Context, r provider.EnhanceRequest) (string, error) {
	kind, _ := u.draw()
	if j, ok := terminal(kind); !ok {
		return u.record(r.IdempotencyKey, fakeJob{out: j}, ""), nil
	}
	// Enhancement keeps the length of its source: a standalone source's known length, or the
	// measured length of a production's generation output.
	d, ok := u.sources[r.Source.URL]
	if !ok {
		info, err := probeBytes(ctx, u.fx.tools, r.Source.Path)
		if err != nil {
			return "", fmt.Errorf("probe source: %w", err)
		}
		d = info.Length()
		d = float64(int64(d*1000+0.5)) / 1000
	}
	fps := []int{24, 30, 60}[u.intn(3)]
	if r.FPS != nil {
		fps = *r.FPS
	}
	job, mode := fakeJob{}, ""
	if kind >= 100-misbehaviourPercent {
		mode = "longer"
		// A frame rate above the request's band, when the request named one (a standalone
		// enhancement: a production's rate has no fps band).
		if r.FPS != nil && r.Prompt == "" && u.intn(2) == 0 {
			mode = "fps"
		}
	}
	switch mode {
	case "longer": // past the longest source the task was priced for
		d = max(d, r.MaxSourceSeconds) + 1 + float64(u.intn(15))
		job.misbehaved = billing.ExcessDuration
	case "fps":
		fps = min(2*fps, 120)
		job.misbehaved = billing.ExcessOverRequest
	}
	path := u.fx.clip(d, fps)
	job.out = provider.Job{Status: provider.StatusSucceeded, Progress: 100,
		Output: &provider.Output{Source: provider.Source{Path: path}, ContentType: "video/mp4"}}
	return u.record(r.IdempotencyKey, job, mode), nil
}

func (u *randomUpstream) PollEnhancement(ctx context.Context, id string) (provider.Job, error) {
	return u.PollGeneration(ctx, id)
}
