package sandbox

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/testkit"
)

func TestParseTextMarkers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, text string
		want     markers
	}{
		{"a cat", "a cat", markers{}},
		{"a cat [sandbox:fail] on a mat", "a cat on a mat", markers{Fail: true}},
		{"[sandbox:fail=InvalidParameter.TaskTypeMismatch]edit @Video1", "edit @Video1",
			markers{Fail: true, FailCode: "InvalidParameter.TaskTypeMismatch"}},
		{"x [sandbox:expire]", "x", markers{Expire: true}},
		{"x [sandbox:slow=10s] [sandbox:transient=2]\nline two [sandbox: slow = 1m ]", "x\nline two",
			markers{Slow: time.Minute, Transient: 2}},
		{"[sandbox:transient=0]", "", markers{}},
		{"not a marker [sandbox] [other:fail]", "not a marker [sandbox] [other:fail]", markers{}},
	} {
		m, text, err := parseTextMarkers(tc.in)
		if err != nil || m != tc.want || text != tc.text {
			t.Errorf("parseTextMarkers(%q) = %+v, %q, %v; want %+v, %q", tc.in, m, text, err, tc.want, tc.text)
		}
	}
	for _, bad := range []string{"[sandbox:]", "[sandbox:boom]", "[sandbox:fail=]", "[sandbox:fail=1x]",
		"[sandbox:slow]", "[sandbox:slow=-1s]", "[sandbox:slow=11m]", "[sandbox:transient=x]",
		"[sandbox:transient=101]", "[sandbox:expire=now]"} {
		if _, _, err := parseTextMarkers(bad); err == nil {
			t.Errorf("parseTextMarkers(%q) accepted", bad)
		}
	}
}

func TestParseURLMarkers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, fetch string
		want      markers
	}{
		{"https://cdn.example/v.mp4", "https://cdn.example/v.mp4", markers{}},
		{"https://cdn.example/v.mp4?sig=a%2Fb&sandbox=fail", "https://cdn.example/v.mp4?sig=a%2Fb", markers{Fail: true}},
		{"https://cdn.example/v.mp4?sandbox=fail:VideoEnhance.Broken&x=1", "https://cdn.example/v.mp4?x=1",
			markers{Fail: true, FailCode: "VideoEnhance.Broken"}},
		{"http://cdn.example/v.mp4?sandbox=slow:10s,transient:2", "http://cdn.example/v.mp4", markers{Slow: 10 * time.Second, Transient: 2}},
		{"https://cdn.example/v.mp4?sandbox=expire&b=2&sandbox=slow%3A1s", "https://cdn.example/v.mp4?b=2", markers{Expire: true, Slow: time.Second}},
		{"https://cdn.example/v.mp4?z=1&a=2", "https://cdn.example/v.mp4?z=1&a=2", markers{}},
	} {
		m, fetch, err := parseURLMarkers(tc.in)
		if err != nil || m != tc.want || fetch != tc.fetch {
			t.Errorf("parseURLMarkers(%q) = %+v, %q, %v; want %+v, %q", tc.in, m, fetch, err, tc.want, tc.fetch)
		}
	}
	for _, bad := range []string{"https://x.example/v?sandbox=boom", "https://x.example/v?sandbox=slow:forever", "https://x.example/v?sandbox=fail:"} {
		if _, _, err := parseURLMarkers(bad); err == nil {
			t.Errorf("parseURLMarkers(%q) accepted", bad)
		}
	}
}

func TestCaptionStripsMarkersAndNotesReferences(t *testing.T) {
	t.Parallel()
	_, prompt, err := parseTextMarkers("@Image1 dances [sandbox:slow=1s] to @Audio1 [sandbox:fail]")
	if err != nil {
		t.Fatal(err)
	}
	got := caption(prompt, provider.GenerateRequest{TaskType: "edit", Inputs: []provider.Input{
		{Type: "image_url", Role: "reference_image"},
		{Type: "video_url", Role: "reference_video"},
		{Type: "audio_url", Role: "reference_audio"},
		{Type: "video_url", Role: "reference_video"},
	}})
	want := "@Image1 dances to @Audio1\ntask edit · ref video 1 · ref audio 1 · ref video 2"
	if got != want {
		t.Errorf("caption = %q, want %q", got, want)
	}
	if got := caption("", provider.GenerateRequest{}); got != "mediagen sandbox" {
		t.Errorf("empty caption = %q", got)
	}
	if strings.Contains(got, "sandbox:") {
		t.Errorf("marker drawn: %q", got)
	}
}

// submitMarked submits a generation whose prompt holds markers.
func submitMarked(t *testing.T, e *Engine, key, prompt, taskType string) string {
	t.Helper()
	id, err := e.SubmitGeneration(context.Background(), provider.GenerateRequest{
		IdempotencyKey: key, Prompt: prompt, TaskType: taskType, Width: 160, Height: 90, Duration: 1})
	if err != nil {
		t.Fatalf("submit %q: %v", prompt, err)
	}
	return id
}

func TestGenerationFailureMarkers(t *testing.T) {
	t.Parallel()
	const pace = 800 * time.Millisecond
	e := newEngine(t, "", withPace(pace))
	tests := []struct {
		name, prompt, taskType string
		status                 provider.Status
		code, msg              string
	}{
		{"fail", "a cat [sandbox:fail]", "", provider.StatusFailed, CodeGenerationFailed, "failed"},
		{"fail with code", "a cat [sandbox:fail=OutputVideoSensitiveContentDetected]", "", provider.StatusFailed,
			"OutputVideoSensitiveContentDetected", "OutputVideoSensitiveContentDetected"},
		{"task type mismatch", "extend it [sandbox:fail=InvalidParameter.TaskTypeMismatch]", "edit", provider.StatusFailed,
			CodeTaskTypeMismatch, `task type does not match the specified value`},
		{"expire", "a cat [sandbox:expire]", "", provider.StatusExpired, CodeExpired, "expired"},
		{"fail wins over expire", "[sandbox:expire] [sandbox:fail]", "", provider.StatusFailed, CodeGenerationFailed, "failed"},
	}
	ids := map[string]string{}
	submitted := time.Now()
	for _, tc := range tests {
		ids[tc.name] = submitMarked(t, e, "marker/"+tc.name, tc.prompt, tc.taskType)
	}
	// Not at submit: the job looks normal until the pace has passed.
	for _, tc := range tests {
		j, err := e.PollGeneration(context.Background(), ids[tc.name])
		if err != nil || (j.Status != provider.StatusQueued && j.Status != provider.StatusRunning) {
			t.Fatalf("%s right after submit: %+v, %v", tc.name, j, err)
		}
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := wait(t, e.PollGeneration, ids[tc.name], 10*time.Second)
			if time.Since(submitted) < pace {
				t.Errorf("terminal before the pace")
			}
			if j.Status != tc.status || j.ErrorCode != tc.code || !strings.Contains(j.ErrorMessage, tc.msg) || j.Output != nil {
				t.Errorf("job = %+v, want %s %s with %q", j, tc.status, tc.code, tc.msg)
			}
			t.Logf("%s %s: %s", j.Status, j.ErrorCode, j.ErrorMessage)
		})
	}
	if tc := tests[2]; !strings.Contains(mustPoll(t, e, ids[tc.name]).ErrorMessage, `"edit"`) {
		t.Errorf("mismatch message does not name the task type")
	}
	if n := e.renders.Load(); n != 0 {
		t.Errorf("%d renders for marker failures, want 0", n)
	}
}

func mustPoll(t *testing.T, e *Engine, id string) provider.Job {
	t.Helper()
	j, err := e.PollGeneration(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func TestGenerationSlowMarker(t *testing.T) {
	t.Parallel()
	clock := testkit.NewClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	e := newEngine(t, "", withPace(50*time.Millisecond), withClock(clock.Now))
	id := submitMarked(t, e, "slow", "slowly [sandbox:slow=1500ms]", "")
	// The render finishes in real time; the job waits for the marker's 1.5 s on the clock.
	testkit.WaitFor(t, 30*time.Second, "the render did not finish", func() bool { return fileExists(e.jobFile(id, resultFile)) })
	clock.Advance(700 * time.Millisecond)
	if j := mustPoll(t, e, id); j.Status != provider.StatusRunning || j.Progress < 20 || j.Progress > 95 {
		t.Errorf("at 0.7 s of 1.5 s: %+v, want running about 47%%", j)
	}
	clock.Advance(799 * time.Millisecond)
	if j := mustPoll(t, e, id); j.Status != provider.StatusRunning {
		t.Errorf("at 1.499 s of 1.5 s: %+v, want running", j)
	}
	clock.Advance(time.Millisecond)
	if j := wait(t, e.PollGeneration, id, 10*time.Second); j.Status != provider.StatusSucceeded {
		t.Fatalf("at 1.5 s: %+v, want succeeded", j)
	}
}

func TestGenerationTransientMarker(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "")
	req := provider.GenerateRequest{IdempotencyKey: "flaky", Prompt: "[sandbox:transient=2] retry me", Width: 160, Height: 90, Duration: 1}
	for i := range 2 {
		id, err := e.SubmitGeneration(context.Background(), req)
		if !errors.Is(err, provider.ErrTransient) || errors.Is(err, provider.ErrPermanent) || id != "" {
			t.Fatalf("attempt %d = %q, %v; want ErrTransient", i+1, id, err)
		}
	}
	// The count survives a restart of the engine.
	e2 := newEngine(t, e.cfg.Dir)
	id, err := e2.SubmitGeneration(context.Background(), req)
	if err != nil {
		t.Fatalf("third attempt: %v", err)
	}
	again, err := e2.SubmitGeneration(context.Background(), req)
	if err != nil || again != id {
		t.Fatalf("replay = %q, %v; want %s", again, err, id)
	}
	if j := wait(t, e2.PollGeneration, id, 30*time.Second); j.Status != provider.StatusSucceeded {
		t.Fatalf("job = %+v", j)
	}
	if n := e.renders.Load() + e2.renders.Load(); n != 1 {
		t.Errorf("%d renders, want 1", n)
	}
}
