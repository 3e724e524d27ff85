package sandbox

import (
	"bytes"
	"context"
	"errors"
	"image/color"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/media/pixels/pixelstest"
	"mediagen/internal/provider"
	"mediagen/internal/testkit"
)

func TestGenerationRendersRequestedStreams(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "")
	tests := []struct {
		name      string
		req       provider.GenerateRequest
		w, h      int
		seconds   float64
		audio     bool
		container string
		ctype     string
		ext       string
	}{
		{"mp4 with audio", provider.GenerateRequest{Width: 160, Height: 90, Duration: 2, GenerateAudio: boolp(true), OutputFormat: "mp4"},
			160, 90, 2, true, "mp4", "video/mp4", ".mp4"},
		{"mp4 without audio by default", provider.GenerateRequest{Width: 160, Height: 90, Duration: 1},
			160, 90, 1, false, "mp4", "video/mp4", ".mp4"},
		{"mp4 audio false, portrait", provider.GenerateRequest{Width: 90, Height: 160, Duration: 1, GenerateAudio: boolp(false)},
			90, 160, 1, false, "mp4", "video/mp4", ".mp4"},
		{"mov with audio", provider.GenerateRequest{Width: 160, Height: 120, Duration: 1, GenerateAudio: boolp(true), OutputFormat: "mov"},
			160, 120, 1, true, "mov", "video/quicktime", ".mov"},
		{"default duration is 5 s", provider.GenerateRequest{Width: 96, Height: 96, Duration: -1},
			96, 96, DefaultDuration, false, "mp4", "video/mp4", ".mp4"},
	}
	ids := make([]string, len(tests))
	for i, tc := range tests {
		tc.req.IdempotencyKey = "streams/" + tc.name
		tc.req.Prompt = "a test clip: " + tc.name
		id, err := e.SubmitGeneration(context.Background(), tc.req)
		if err != nil {
			t.Fatalf("%s: submit: %v", tc.name, err)
		}
		ids[i] = id
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := wait(t, e.PollGeneration, ids[i], 30*time.Second)
			if j.Status != provider.StatusSucceeded {
				t.Fatalf("status %s: %s %s", j.Status, j.ErrorCode, j.ErrorMessage)
			}
			out := j.Output
			if out.ContentType != tc.ctype || filepath.Ext(out.Source.Path) != tc.ext || out.Source.URL != "" {
				t.Errorf("output = %+v, want %s %s file", out, tc.ctype, tc.ext)
			}
			info := probe(t, out.Source.Path)
			t.Logf("%dx%d %.3fs %.2ffps %s/%s %s tokens=%d", info.Width, info.Height, info.Duration, info.FPS,
				info.VideoCodec, info.AudioCodec, info.Container, out.CompletionTokens)
			if info.Width != tc.w || info.Height != tc.h {
				t.Errorf("size %dx%d, want %dx%d", info.Width, info.Height, tc.w, tc.h)
			}
			if math.Abs(info.Duration-tc.seconds) > 0.05 {
				t.Errorf("duration %.3f, want %v", info.Duration, tc.seconds)
			}
			if info.FPS != FPS {
				t.Errorf("fps %v, want %d", info.FPS, FPS)
			}
			if info.VideoCodec != "h264" || info.Container != tc.container {
				t.Errorf("video %s in %s, want h264 in %s", info.VideoCodec, info.Container, tc.container)
			}
			if info.HasAudio != tc.audio || (tc.audio && info.AudioCodec != "aac") {
				t.Errorf("audio = %v %q, want %v aac", info.HasAudio, info.AudioCodec, tc.audio)
			}
			// The documented formula on the probed output, and on the nominal numbers.
			want := int64(math.Round(float64(info.Width*info.Height) * info.FPS * info.Duration / 1024))
			nominal := int64(math.Round(float64(tc.w*tc.h) * FPS * tc.seconds / 1024))
			if out.CompletionTokens != want || out.CompletionTokens != nominal {
				t.Errorf("tokens %d, want %d from probe (nominal %d)", out.CompletionTokens, want, nominal)
			}
		})
	}
	if n := e.renders.Load(); n != int64(len(tests)) {
		t.Errorf("%d renders, want %d", n, len(tests))
	}
}

func TestTokensFormula(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		w, h   int
		fps, s float64
		want   int64
	}{
		{1280, 720, 24, 5, 108000},
		{854, 480, 24, 5, 48038}, // 48037.5 rounds half away from zero
		{1920, 1080, 24, 10, 486000},
		{160, 90, 24, 1, 338}, // 337.5
	} {
		if got := Tokens(tc.w, tc.h, tc.fps, tc.s); got != tc.want {
			t.Errorf("Tokens(%d, %d, %v, %v) = %d, want %d", tc.w, tc.h, tc.fps, tc.s, got, tc.want)
		}
	}
}

func TestGenerationUsesFrameAndReferenceImagesOverHTTPS(t *testing.T) {
	t.Parallel()
	ms := &mediaServer{files: map[string][]byte{
		"/red.png":  pngBytes(t, color.RGBA{255, 0, 0, 255}, 64, 36),
		"/blue.png": pngBytes(t, color.RGBA{0, 0, 255, 255}, 40, 40),
		"/ref.mp4":  []byte("not really a video, only checked for reachability"),
	}}
	srv := httptest.NewTLSServer(ms)
	defer srv.Close()
	e := newEngine(t, "", withFetch(loopbackClient(t, srv)))
	green := writeFile(t, t.TempDir(), "green.png", pngBytes(t, color.RGBA{0, 255, 0, 255}, 32, 32))

	id, err := e.SubmitGeneration(context.Background(), provider.GenerateRequest{
		IdempotencyKey: "frames", Prompt: "from red to blue", Width: 160, Height: 90, Duration: 3,
		Inputs: []provider.Input{
			{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: srv.URL + "/red.png"}},
			{Type: "image_url", Role: "last_frame", Source: provider.Source{URL: srv.URL + "/blue.png"}},
			{Type: "image_url", Role: "reference_image", Source: provider.Source{URL: "https://unused.example/x.png", Path: green}},
			// The local copy is gone (as after a restart): the URL is fetched instead.
			{Type: "image_url", Role: "reference_image", Source: provider.Source{URL: srv.URL + "/blue.png", Path: filepath.Join(t.TempDir(), "gone.png")}},
			{Type: "video_url", Role: "reference_video", Source: provider.Source{URL: srv.URL + "/ref.mp4"}},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	j := wait(t, e.PollGeneration, id, 30*time.Second)
	if j.Status != provider.StatusSucceeded {
		t.Fatalf("status %s: %s %s", j.Status, j.ErrorCode, j.ErrorMessage)
	}
	frames := frameRGB(t, j.Output.Source.Path)
	if len(frames) != 72 {
		t.Fatalf("%d frames, want 72", len(frames))
	}
	if got := dominant(frames[0]); got != "red" {
		t.Errorf("first frame colour %v (%s), want red", frames[0], got)
	}
	if got := dominant(frames[len(frames)-1]); got != "blue" {
		t.Errorf("last frame colour %v (%s), want blue", frames[len(frames)-1], got)
	}
	if got := dominant(frames[36]); got != "" {
		t.Errorf("middle frame colour %v is %s, want the test pattern", frames[36], got)
	}
	for p, want := range map[string]int{"/red.png": 1, "/blue.png": 2, "/ref.mp4": 1} {
		if n := len(ms.requests(p)); n != want {
			t.Errorf("%s fetched %d times, want %d", p, n, want)
		}
	}
	if rs := ms.requests("/ref.mp4"); len(rs) == 1 && rs[0].Header.Get("Range") == "" {
		t.Errorf("reference video check asked for the whole file")
	}
	if _, err := os.Stat(filepath.Join(e.jobDir(id), inputsDir)); !os.IsNotExist(err) {
		t.Errorf("inputs directory left behind: %v", err)
	}
}

func TestGenerationFailsWhenAnInputCannotBeFetched(t *testing.T) {
	t.Parallel()
	ms := &mediaServer{files: map[string][]byte{"/red.png": pngBytes(t, color.RGBA{255, 0, 0, 255}, 16, 16)}}
	srv := httptest.NewTLSServer(ms)
	defer srv.Close()
	e := newEngine(t, "", withFetch(loopbackClient(t, srv)))
	for _, tc := range []struct {
		name, want string
		in         provider.Input
	}{
		{"missing first frame", "first frame image could not be fetched",
			provider.Input{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: srv.URL + "/missing.png"}}},
		{"missing reference video", "reference video could not be fetched",
			provider.Input{Type: "video_url", Role: "reference_video", Source: provider.Source{URL: srv.URL + "/missing.mp4"}}},
		{"plain http image", "could not be fetched",
			provider.Input{Type: "image_url", Role: "reference_image", Source: provider.Source{URL: strings.Replace(srv.URL, "https", "http", 1) + "/red.png"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := e.SubmitGeneration(context.Background(), provider.GenerateRequest{
				IdempotencyKey: tc.name, Prompt: "x", Width: 160, Height: 90, Duration: 1, Inputs: []provider.Input{tc.in}})
			if err != nil {
				t.Fatal(err)
			}
			j := wait(t, e.PollGeneration, id, 30*time.Second)
			if j.Status != provider.StatusFailed || j.ErrorCode != CodeGenerationFailed || !strings.Contains(j.ErrorMessage, tc.want) {
				t.Fatalf("job = %+v, want failed %s containing %q", j, CodeGenerationFailed, tc.want)
			}
			if strings.Contains(j.ErrorMessage, "127.0.0.1") {
				t.Errorf("message leaks the address: %q", j.ErrorMessage)
			}
		})
	}
	if n := e.renders.Load(); n != 0 {
		t.Errorf("%d renders, want 0", n)
	}
}

func TestSubmitIsIdempotent(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "")
	req := provider.GenerateRequest{IdempotencyKey: "task-1/generate", Prompt: "once", Width: 160, Height: 90, Duration: 1}
	ids := make([]string, 8)
	var wg sync.WaitGroup
	for i := range ids {
		wg.Go(func() {
			id, err := e.SubmitGeneration(context.Background(), req)
			if err != nil {
				t.Error(err)
			}
			ids[i] = id
		})
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] || !validID.MatchString(id) {
			t.Fatalf("ids = %v, want one valid id", ids)
		}
	}
	if want := jobID(kindGeneration, req.IdempotencyKey); ids[0] != want {
		t.Errorf("id %s, want %s", ids[0], want)
	}
	j := wait(t, e.PollGeneration, ids[0], 30*time.Second)
	if j.Status != provider.StatusSucceeded {
		t.Fatalf("job = %+v", j)
	}
	st, err := os.Stat(j.Output.Source.Path)
	if err != nil {
		t.Fatal(err)
	}

	// A replay after completion, even with a changed payload, is the same finished job.
	req.Prompt = "changed"
	id, err := e.SubmitGeneration(context.Background(), req)
	if err != nil || id != ids[0] {
		t.Fatalf("replay = %s, %v; want %s", id, err, ids[0])
	}
	j2, err := e.PollGeneration(context.Background(), id)
	if err != nil || j2.Status != provider.StatusSucceeded || j2.Output.Source.Path != j.Output.Source.Path {
		t.Fatalf("replayed poll = %+v, %v", j2, err)
	}
	st2, _ := os.Stat(j.Output.Source.Path)
	if n := e.renders.Load(); n != 1 || !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("%d renders (mtime %v → %v), want exactly 1", n, st.ModTime(), st2.ModTime())
	}

	// The same key on another route is another job.
	if other := jobID(kindEnhancement, req.IdempotencyKey); other == id {
		t.Errorf("generation and enhancement share id %s", id)
	}
}

func TestRestartResumesInterruptedRender(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e1 := newEngine(t, dir)
	started := make(chan string, 1)
	e1.beforeRender = func(ctx context.Context, id string) {
		started <- id
		<-ctx.Done() // the process "dies" before ffmpeg finishes
	}
	id, err := e1.SubmitGeneration(context.Background(), provider.GenerateRequest{
		IdempotencyKey: "crash", Prompt: "survives a restart", Width: 160, Height: 90, Duration: 1, GenerateAudio: boolp(true)})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	j, err := e1.PollGeneration(context.Background(), id)
	if err != nil || j.Status != provider.StatusRunning {
		t.Fatalf("before restart: %+v, %v", j, err)
	}
	e1.Close()
	if _, err := e1.PollGeneration(context.Background(), id); !errors.Is(err, provider.ErrTransient) {
		t.Errorf("poll after Close = %v, want ErrTransient", err)
	}
	if _, err := os.Stat(e1.jobFile(id, "out.mp4")); !os.IsNotExist(err) {
		t.Fatalf("interrupted render left an output: %v", err)
	}

	e2 := newEngine(t, dir)
	if _, err := os.Stat(e2.jobFile(id, specFile)); err != nil {
		t.Fatal(err)
	}
	// A replayed submit in the new process is the same job.
	if id2, err := e2.SubmitGeneration(context.Background(), provider.GenerateRequest{
		IdempotencyKey: "crash", Prompt: "survives a restart", Width: 160, Height: 90, Duration: 1}); err != nil || id2 != id {
		t.Fatalf("replay after restart = %s, %v", id2, err)
	}
	j = wait(t, e2.PollGeneration, id, 30*time.Second)
	if j.Status != provider.StatusSucceeded {
		t.Fatalf("after restart: %+v", j)
	}
	if info := probe(t, j.Output.Source.Path); !info.HasAudio || info.Width != 160 {
		t.Errorf("resumed render lost its spec: %+v", info)
	}
	if n := e2.renders.Load(); n != 1 {
		t.Errorf("%d renders after restart, want 1", n)
	}
}

func TestRestartWithSpecOnly(t *testing.T) {
	t.Parallel()
	// A process that died right after writing the spec: no started mark, no output.
	dir := t.TempDir()
	e1 := newEngine(t, dir)
	hold, err := e1.slots.Acquire(context.Background(), "", "") // the only slot: the job stays queued
	if err != nil {
		t.Fatal(err)
	}
	id, err := e1.SubmitGeneration(context.Background(), provider.GenerateRequest{
		IdempotencyKey: "queued", Width: 160, Height: 90, Duration: 1})
	if err != nil {
		t.Fatal(err)
	}
	if j, _ := e1.PollGeneration(context.Background(), id); j.Status != provider.StatusQueued || j.Progress != 0 {
		t.Fatalf("job = %+v, want queued 0", j)
	}
	e1.Close()
	hold()

	e2 := newEngine(t, dir)
	j := wait(t, e2.PollGeneration, id, 30*time.Second)
	if j.Status != provider.StatusSucceeded {
		t.Fatalf("job = %+v", j)
	}
	if j.Output.CompletionTokens != Tokens(160, 90, FPS, 1) {
		t.Errorf("tokens %d", j.Output.CompletionTokens)
	}
}

func TestProgressRisesWithTimeAndNeverDecreases(t *testing.T) {
	t.Parallel()
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := testkit.NewClock(start)
	const pace = 10 * time.Second
	e := newEngine(t, "", withPace(pace), withClock(clock.Now))
	id, err := e.SubmitGeneration(context.Background(), provider.GenerateRequest{
		IdempotencyKey: "progress", Width: 160, Height: 90, Duration: 1})
	if err != nil {
		t.Fatal(err)
	}
	// The render finishes in real time; the job still waits for the pace.
	testkit.WaitFor(t, 30*time.Second, "the render did not finish", func() bool { return fileExists(e.jobFile(id, resultFile)) })
	poll := func() provider.Job {
		t.Helper()
		j, err := e.PollGeneration(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	for _, step := range []struct {
		at     time.Duration
		status provider.Status
		pct    int
	}{
		{0, provider.StatusRunning, 1},
		{2500 * time.Millisecond, provider.StatusRunning, 25},
		{5 * time.Second, provider.StatusRunning, 50},
		{1 * time.Second, provider.StatusRunning, 50}, // the clock went back: progress does not
		{9990 * time.Millisecond, provider.StatusRunning, 99},
		{pace, provider.StatusSucceeded, 100},
	} {
		clock.Set(start.Add(step.at))
		if j := poll(); j.Status != step.status || j.Progress != step.pct {
			t.Fatalf("at %v: %s %d%%, want %s %d%%", step.at, j.Status, j.Progress, step.status, step.pct)
		}
	}
}

func TestPollUnknownJob(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "")
	enh, err := e.SubmitEnhancement(context.Background(), provider.EnhanceRequest{
		IdempotencyKey: "enh", Source: provider.Source{URL: "https://example.com/v.mp4?sandbox=fail"}, ShortSide: 90})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", "sbx_000000000000000000000000", "sbx_../../../etc/passwd", "../jobs", jobID(kindSpeech, "x")} {
		if _, err := e.PollGeneration(context.Background(), id); !errors.Is(err, provider.ErrUnknownJob) {
			t.Errorf("PollGeneration(%q) = %v, want ErrUnknownJob", id, err)
		}
	}
	if _, err := e.PollGeneration(context.Background(), enh); !errors.Is(err, provider.ErrUnknownJob) {
		t.Errorf("enhancement job polled as generation: %v, want ErrUnknownJob", err)
	}
	if _, err := e.PollEnhancement(context.Background(), enh); err != nil {
		t.Errorf("PollEnhancement: %v", err)
	}
}

func TestSubmitGenerationRejectsInvalidRequests(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "")
	ok := provider.GenerateRequest{IdempotencyKey: "k", Width: 160, Height: 90, Duration: 1}
	for _, tc := range []struct {
		name string
		edit func(*provider.GenerateRequest)
	}{
		{"no key", func(r *provider.GenerateRequest) { r.IdempotencyKey = "" }},
		{"no size", func(r *provider.GenerateRequest) { r.Width, r.Height = 0, 0 }},
		{"odd size", func(r *provider.GenerateRequest) { r.Width = 161 }},
		{"zero duration", func(r *provider.GenerateRequest) { r.Duration = 0 }},
		{"long duration", func(r *provider.GenerateRequest) { r.Duration = MaxDuration + 1 }},
		{"format", func(r *provider.GenerateRequest) { r.OutputFormat = "avi" }},
		{"unknown marker", func(r *provider.GenerateRequest) { r.Prompt = "x [sandbox:explode]" }},
		{"bad slow", func(r *provider.GenerateRequest) { r.Prompt = "[sandbox:slow=soon]" }},
		{"bad code", func(r *provider.GenerateRequest) { r.Prompt = "[sandbox:fail=a b]" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := ok
			r.IdempotencyKey = "invalid/" + tc.name
			tc.edit(&r)
			_, err := e.SubmitGeneration(context.Background(), r)
			var pe *provider.Error
			if !errors.As(err, &pe) || !errors.Is(err, provider.ErrPermanent) || pe.Code != CodeInvalidParameter {
				t.Fatalf("err = %v, want permanent %s", err, CodeInvalidParameter)
			}
			t.Log(pe.Message)
		})
	}
	entries, _ := os.ReadDir(e.jobsDir)
	if len(entries) != 0 {
		t.Errorf("rejected submits left %d job directories", len(entries))
	}
}

func TestCloseStopsSubmits(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "")
	e.Close()
	e.Close() // idempotent
	_, err := e.SubmitGeneration(context.Background(), provider.GenerateRequest{IdempotencyKey: "k", Width: 160, Height: 90, Duration: 1})
	if !errors.Is(err, provider.ErrTransient) {
		t.Errorf("submit after Close = %v, want ErrTransient", err)
	}
	if _, err := e.Synthesize(context.Background(), provider.SpeechRequest{IdempotencyKey: "k", Text: "hi"}); !errors.Is(err, provider.ErrTransient) {
		t.Errorf("synthesize after Close = %v, want ErrTransient", err)
	}
}

// An image over the pixel budget fails the job before anything decodes it, whether it is
// fetched by URL or read from a local copy, and whatever the file weighs: the message names
// the image and the budget, and no render starts.
func TestGenerationFailsOnImagesOverThePixelBudgetWithoutRendering(t *testing.T) {
	t.Parallel()
	var over bytes.Buffer // a complete, valid PNG one step over the budget: 4100×4100
	if err := pixelstest.WritePNG(&over, 4100, 4100, 8, pixelstest.RGB); err != nil {
		t.Fatal(err)
	}
	ms := &mediaServer{files: map[string][]byte{
		"/over.png":  over.Bytes(),
		"/bomb.png":  pixelstest.PNGHeader(16000, 16000, 8, pixelstest.RGB),
		"/notes.txt": []byte("not an image"),
	}}
	srv := httptest.NewTLSServer(ms)
	defer srv.Close()
	e := newEngine(t, "", withFetch(loopbackClient(t, srv)))
	bomb16 := writeFile(t, t.TempDir(), "bomb16.png", pixelstest.PNGHeader(16000, 16000, 16, pixelstest.RGBA))
	for _, tc := range []struct {
		name, want string
		in         provider.Input
	}{
		{"first frame by url", "first frame image cannot be used: the image is 4100×4100 pixels",
			provider.Input{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: srv.URL + "/over.png"}}},
		{"last frame by url", "last frame image cannot be used: the image is 16000×16000 pixels",
			provider.Input{Type: "image_url", Role: "last_frame", Source: provider.Source{URL: srv.URL + "/bomb.png"}}},
		{"reference image local copy", "reference image cannot be used: the image is 16000×16000 pixels",
			provider.Input{Type: "image_url", Role: "reference_image", Source: provider.Source{Path: bomb16}}},
		{"no readable size", "its size is not in a PNG, JPEG, WebP, GIF or BMP header",
			provider.Input{Type: "image_url", Role: "first_frame", Source: provider.Source{URL: srv.URL + "/notes.txt"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := e.SubmitGeneration(context.Background(), provider.GenerateRequest{
				IdempotencyKey: tc.name, Prompt: "x", Width: 160, Height: 90, Duration: 1, Inputs: []provider.Input{tc.in}})
			if err != nil {
				t.Fatal(err)
			}
			j := wait(t, e.PollGeneration, id, 30*time.Second)
			if j.Status != provider.StatusFailed || j.ErrorCode != CodeInvalidParameter || !strings.Contains(j.ErrorMessage, tc.want) {
				t.Fatalf("job = %+v, want failed %s containing %q", j, CodeInvalidParameter, tc.want)
			}
			if tc.name != "no readable size" && !strings.Contains(j.ErrorMessage, "16,777,216 pixels") {
				t.Errorf("message %q does not state the budget", j.ErrorMessage)
			}
		})
	}
	if n := e.renders.Load(); n != 0 {
		t.Errorf("%d renders, want 0", n)
	}
}
