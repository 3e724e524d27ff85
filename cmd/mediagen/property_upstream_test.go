package main

import (
	"context"
	"fmt"
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

// fixtures renders small clips of a given length and frame rate once each.
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
	err := f.tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 32, Height: 18, FPS: fps, Duration: d, Container: "mp4"}, p)
	if err != nil {
		f.t.Errorf("render %s: %v", p, err)
	}
	return p
}

// fakeJob is what the random upstream decided for one job.
type fakeJob struct {
	out        provider.Job
	misbehaved bool
}

// randomUpstream is an engine with random outcomes. Within-bounds successes stay inside what
// the request allows — the requested length (or the family's longest for -1) plus less than
// the slack, any frame size the ratio allows, the declared fps or any if none — and a
// misbehaving success reports more (twice the tokens, or three seconds more video).
type randomUpstream struct {
	t       *testing.T
	fx      *fixtures
	mu      sync.Mutex
	rng     *rand.Rand
	jobs    map[string]fakeJob
	sources map[string]float64 // enhancement source URL → its length
	bad     map[string]bool    // task ids whose upstream misbehaved
}

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

func (u *randomUpstream) record(key string, j fakeJob) string {
	u.mu.Lock()
	defer u.mu.Unlock()
	if j.misbehaved {
		if u.bad == nil {
			u.bad = map[string]bool{}
		}
		task, _, _ := strings.Cut(key, ":")
		u.bad[task] = true
	}
	u.jobs[key] = j
	return key
}

func (u *randomUpstream) misbehaved(task string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.bad[task]
}

func (u *randomUpstream) misbehaviours() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.bad)
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

func (u *randomUpstream) SubmitGeneration(_ context.Context, r provider.GenerateRequest) (string, error) {
	kind, slack := u.draw()
	if j, ok := terminal(kind); !ok {
		return u.record(r.IdempotencyKey, fakeJob{out: j}), nil
	}
	secs := r.Duration
	if secs <= 0 {
		maxSecs := contract.NativeMaxSeconds(contract.FamilyFast20)
		if strings.Contains(r.Model, "2.5") {
			maxSecs = contract.NativeMaxSeconds(contract.Family25)
		}
		choices := []int{4, 5, 10, maxSecs}
		secs = choices[u.intn(len(choices))]
	}
	w, h := r.Width, r.Height
	if r.Ratio == "adaptive" {
		ratios := []string{"16:9", "4:3", "1:1", "3:4", "9:16", "21:9"}
		w, h = contract.Dimensions(r.Resolution, ratios[u.intn(len(ratios))])
	}
	d := float64(secs) + slack
	misbehaved := kind >= 90
	tokens := billing.NativeTokens(w, h, billing.NativeFPS, d)
	if misbehaved {
		tokens *= 2
		d += 3
	}
	path := u.fx.clip(d, 24)
	return u.record(r.IdempotencyKey, fakeJob{misbehaved: misbehaved, out: provider.Job{Status: provider.StatusSucceeded, Progress: 100,
		Output: &provider.Output{Source: provider.Source{Path: path}, ContentType: "video/mp4", CompletionTokens: tokens}}}), nil
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
		return u.record(r.IdempotencyKey, fakeJob{out: j}), nil
	}
	// Enhancement keeps the length of its source: a standalone source's known length, or the
	// measured length of a production's generation output.
	d, ok := u.sources[r.Source.URL]
	if !ok {
		info, err := u.fx.tools.Probe(ctx, r.Source.Path)
		if err != nil {
			return "", fmt.Errorf("probe source: %w", err)
		}
		d = info.Duration
		d = float64(int64(d*1000+0.5)) / 1000
	}
	fps := []int{24, 30, 60}[u.intn(3)]
	if r.FPS != nil {
		fps = *r.FPS
	}
	misbehaved := kind >= 90
	if misbehaved {
		d += 3
	}
	path := u.fx.clip(d, fps)
	return u.record(r.IdempotencyKey, fakeJob{misbehaved: misbehaved, out: provider.Job{Status: provider.StatusSucceeded, Progress: 100,
		Output: &provider.Output{Source: provider.Source{Path: path}, ContentType: "video/mp4"}}}), nil
}

func (u *randomUpstream) PollEnhancement(ctx context.Context, id string) (provider.Job, error) {
	return u.PollGeneration(ctx, id)
}
