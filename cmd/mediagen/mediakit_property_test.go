package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/mediakit/mediakitfake"
	"mediagen/internal/store/postgres/pgtest"
)

// The money property over kind mediakit, through the whole service on both stores: random
// enhancements (Lite, Standard or Professional; resolution or resolution_limit; fps and
// bitrate_level or not; sources of several lengths) and production tasks whose enhancement
// half runs on a fake AI MediaKit that fails 20% of its answers (lost create answers among
// them) and whose jobs end at random — completed, refused by vendor code, or never. Whatever
// happens, every charge is at most its reservation, a completed task is charged exactly what
// its stored, measured result implies, every other task is refunded, each task made at most
// one paid job (exactly one when it completed) and the ledger checks out.
// MEDIAGEN_PROPERTY_SEED replays a run; MEDIAGEN_PROPERTY_REQUESTS sets its size (16 per store
// by default).
func TestPropertyMediaKitChargesAreBoundedWithOnePaidJobEach(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("random tasks through a faulty fake upstream")
	}
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); mediakitPropertyRun(t, "") })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); mediakitPropertyRun(t, pgtest.URL(t)) })
}

func mediakitPropertyRun(t *testing.T, pgURL string) {
	tools := requireTools(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("MEDIAGEN_PROPERTY_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	n := sizeFromEnv(t, "MEDIAGEN_PROPERTY_REQUESTS", 16)
	t.Logf("seed %d (MEDIAGEN_PROPERTY_SEED=%d replays this run)", seed, seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	media := t.TempDir()
	lengths := []float64{1.5, 2, 3}
	for _, d := range lengths {
		if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 640, Height: 360, FPS: 12, Duration: d, Container: "mp4", Text: "p"},
			filepath.Join(media, fmt.Sprintf("clip-%g.mp4", d))); err != nil {
			t.Fatal(err)
		}
	}
	cdn := mediakitSource(t, tools, media)
	ends := map[float64]string{17: mediakitfake.EndRefuse, 19: mediakitfake.EndNever} // by the fps asked
	fake := mediakitfake.Start(mediakitfake.Config{Key: mediakitTestKey, Tools: tools, Dir: t.TempDir(), FaultPercent: 20, Seed: seed,
		End: func(_ string, body map[string]any) string {
			fps, _ := body["fps"].(float64)
			return ends[fps]
		}})
	t.Cleanup(fake.Close)
	m := NewMain(mediakitEnv(), &syncBuffer{}, &syncBuffer{})
	m.FetchTLS = trustBoth(fake.Certificate(), cdn.Certificate())
	args := []string{"--fetch-allow", "loopback", "--log-level", "error", "--workers", "8", "--task-retry-max", "1s", "--task-deadline", "40s",
		"--catalog", mediakitCatalog(t, t.TempDir(), fake.Base(), "")}
	if pgURL != "" {
		args = append(args, "--db", pgURL)
	}
	e := startRemote(t, m, t.TempDir(), tools, 1000*money.Scale, args...)

	var ids []string
	for i := 0; i < n; i++ {
		fps := []int{0, 24, 30, 60, 17, 19}[rng.IntN(6)] // 17: refused, 19: never ends
		opt := ""
		if fps != 0 {
			opt += fmt.Sprintf(`,"fps":%d`, fps)
		}
		if rng.IntN(2) == 0 {
			opt += `,"bitrate_level":"` + []string{"low", "medium", "high"}[rng.IntN(3)] + `"`
		}
		var body string
		switch rng.IntN(5) {
		case 0:
			body = fmt.Sprintf(`{"model":"demo-production-standard","prompt":"p%d","metadata":{"duration":4,"resolution":"1080p"%s}}`, i, opt)
		default:
			d := lengths[rng.IntN(len(lengths))]
			sel := []string{`"resolution":"1080p"`, `"resolution_limit":360`, `"resolution_limit":480`}[rng.IntN(3)]
			model, tier := "demo-enhance-lite", ""
			switch rng.IntN(3) {
			case 1:
				model, tier = "demo-enhance", `,"tool_version":"standard","scene":"aigc"`
			case 2:
				model, tier = "demo-enhance", `,"tool_version":"professional","bit_depth":10`
			}
			body = fmt.Sprintf(`{"model":%q,"metadata":{"video_url":"%s/clip-%g.mp4","duration":%g,%s%s%s,"client_request_id":"prop-%d"}}`,
				model, cdn.URL, d, d, sel, tier, opt, i)
		}
		ids = append(ids, e.create(body))
	}
	var total money.Micros
	outcomes := map[string]int{}
	for _, id := range ids {
		task := e.wait(id)
		rec := e.task(id)
		outcomes[task.Status]++
		total += rec.Charged
		if rec.Charged > rec.Reserved {
			t.Errorf("task %s charged %s against a reservation of %s", id, rec.Charged, rec.Reserved)
		}
		jobs := fake.JobsFor(id + ":enh")
		if jobs > 1 || (task.Status == "completed" && jobs != 1) {
			t.Errorf("task %s (%s) made %d paid jobs", id, task.Status, jobs)
		}
		if task.Status != "completed" {
			if rec.Charged != 0 {
				t.Errorf("task %s ended %s and was charged %s", id, task.Status, rec.Charged)
			}
			continue
		}
		url := task.Metadata.VideoURL
		if url == "" {
			url = task.Metadata.URL
		}
		measuredCharge(t, e, id, url)
	}
	t.Logf("outcomes %v; the fake made %d jobs, lost %d create answers", outcomes, fake.Jobs(), fake.LostAnswers())
	if got := e.used(); got != total {
		t.Errorf("the key's usage %s, the tasks' charges %s", got, total)
	}
	for _, v := range fake.Violations() {
		t.Errorf("wire format: %s", v)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
