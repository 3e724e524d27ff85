package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/provider/openai/openaifake"
	"mediagen/internal/speech"
	"mediagen/internal/store"
)

// The table of misbehaving upstreams, each through the real server on a fake upstream
// (arkfake, openaifake) whose result links the test lets the service fetch from loopback.
// Whatever an upstream returns, the charge stays within what the request could produce (the
// reservation) and at or above what the stored result implies; what the upstream did beyond
// the request is the operator's, recorded as upstream excess.

// colorClip writes a plain-colour H.264 clip with ffmpeg: cheap to encode at any size and
// length, so a test can afford a 60 s 720p or a 15 s 1080p60 result. A clip of whole seconds
// is one encoded second repeated by stream copy (-stream_loop): ffprobe measures it exactly as
// the same clip encoded whole (size, rate, frames, length), for a tenth of the CPU.
func colorClip(t *testing.T, dir, name string, w, h, fps int, secs float64) string {
	t.Helper()
	out := filepath.Join(dir, name)
	ffmpeg := func(args ...string) {
		t.Helper()
		args = append([]string{"-hide_banner", "-nostdin", "-loglevel", "error", "-y"}, args...)
		if b, err := exec.Command("ffmpeg", args...).CombinedOutput(); err != nil {
			t.Fatalf("ffmpeg: %v: %s", err, b)
		}
	}
	encode := func(secs float64, out string) {
		t.Helper()
		ffmpeg("-f", "lavfi", "-i", "color=c=teal:s="+strconv.Itoa(w)+"x"+strconv.Itoa(h)+":r="+strconv.Itoa(fps)+":d="+strconv.FormatFloat(secs, 'f', -1, 64),
			"-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-movflags", "+faststart", out)
	}
	whole := int(secs)
	if secs < 2 || float64(whole) != secs {
		encode(secs, out)
		return out
	}
	second := filepath.Join(dir, "second-"+name)
	encode(1, second)
	ffmpeg("-stream_loop", strconv.Itoa(whole-1), "-i", second, "-c", "copy", "-movflags", "+faststart", out)
	if err := os.Remove(second); err != nil {
		t.Fatal(err)
	}
	return out
}

// arkRig serves the demo catalog with demo-video-fast, demo-video-standard and
// demo-production-standard generated on a fake Ark whose every job returns clip and reports
// tokens of usage, the production's enhancement on the local ffmpeg engine.
func arkRig(t *testing.T, clip string, tokens int64) (*e2e, string) {
	t.Helper()
	tools := requireTools(t)
	fake := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: tokens})
	t.Cleanup(fake.Close)
	account := "  - name: ark-main\n    kind: ark\n    base_url: " + fake.Base() + "\n    api_key_env: ARK_TEST_KEY\n" +
		"  - name: local-enhance\n    kind: ffmpeg\n"
	cat := demoCatalogWith(t, t.TempDir(), account, map[string]string{
		"demo-video-fast":          "ark-main",
		"demo-video-standard":      "ark-main",
		"demo-production-standard": "ark-main\n        enhance_upstream: local-enhance",
	})
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey}), &syncBuffer{}, &syncBuffer{})
	m.FetchTLS = fake.TLS()
	dir := t.TempDir()
	return startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--catalog", cat), filepath.Join(dir, "data")
}

// task reads a finished task's reservation and charge from the store.
func (e *e2e) task(id string) store.Task {
	e.t.Helper()
	rec, err := e.m.db.Task(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return rec
}

// expectExcess checks the upstream excess recorded for ref: exactly the kinds of want, each on
// its account, with a positive amount (a cut may be worth nothing when it does not cross a
// whole second: then 0), and the metric counting them by account and kind.
func (e *e2e) expectExcess(ref string, want map[string]string) []store.UpstreamExcess {
	e.t.Helper()
	recs, err := e.m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Ref: ref})
	if err != nil {
		e.t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range recs {
		got[r.Kind] = r.Upstream
		e.t.Logf("excess %s on %s: claimed %s, charged %s, amount %s (%s)", r.Kind, r.Upstream, r.Claimed, r.Charged, r.Amount, r.Detail)
		if r.Amount < 0 || r.Claimed < 0 || r.Currency != "USD" || r.Detail == "" {
			e.t.Errorf("record %+v", r)
		}
	}
	if len(got) != len(want) || len(recs) != len(want) {
		e.t.Errorf("excess kinds %v, want %v", got, want)
	}
	metrics := e.metrics()
	for kind, upstream := range want {
		if got[kind] != upstream {
			e.t.Errorf("excess %s on %q, want on %q", kind, got[kind], upstream)
		}
		if n := sumSeries(metrics, "mediagen_upstream_excess_total", `kind="`+kind+`"`); n < 1 {
			e.t.Errorf("mediagen_upstream_excess_total{kind=%q} = %v", kind, n)
		}
	}
	return recs
}

// Native 480p 5 s; the upstream returns a 60 s 720p video and reports its 1,296,000 tokens.
// Before: charged 1.5552 against a 0.060527 reservation (25.7×). Now the stored result is cut
// to the request's bound (5 s + 0.25 s slack) and the charge stays within the reservation.
func TestUpstreamVideoLongerThanTheRequestIsTrimmedAndChargedWithinTheReservation(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "long.mp4", 1280, 720, 24, 60)
	e, data := arkRig(t, clip, billing.NativeTokens(1280, 720, 24, 60))
	id := e.create(`{"model":"demo-video-fast","prompt":"a kite","metadata":{"duration":5,"resolution":"480p","ratio":"16:9"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task = %+v %+v", task, task.Error)
	}
	rec := e.task(id)
	t.Logf("reserved %s, charged %s", rec.Reserved, rec.Charged)
	if rec.Charged > rec.Reserved {
		t.Errorf("charged %s against a reservation of %s", rec.Charged, rec.Reserved)
	}
	_, info := e.download(task.Metadata.URL, "result.mp4")
	if info.Length() > 5.25 {
		t.Errorf("the stored result measures %v s, want it cut to at most 5.25 s", info.Length())
	}
	// Cut from 60 s, a 720p frame for a 480p request, and usage reported for all 60 s.
	e.expectExcess(id, map[string]string{billing.ExcessDuration: "ark-main", billing.ExcessOverRequest: "ark-main", billing.ExcessUsageOver: "ark-main"})
	// The operator sees it, per account and per task.
	out := admin(t, data, "upstream", "excess", "--upstream", "ark-main", "--catalog", e.m.Config.Catalog)
	for _, want := range []string{"ark-main", "usage_over", "duration", "over_request", id, "1.421272 USD"} {
		if !strings.Contains(out, want) {
			t.Errorf("admin upstream excess does not show %q:\n%s", want, out)
		}
	}
}

// Production standard 1080p 5 s; the generation upstream returns 60 s. Before: the
// intermediate had no MaxSourceSeconds, the enhancement processed all 60 s and the task was
// charged 6.0 against 0.6. Now the intermediate is cut to the request's bound before the
// enhancement half sees it.
func TestProductionGenerationLongerThanTheRequestIsTrimmedBeforeEnhancement(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "long.mp4", 1280, 720, 24, 60)
	e, _ := arkRig(t, clip, 0)
	id := e.create(`{"model":"demo-production-standard","prompt":"a city","metadata":{"duration":5,"resolution":"1080p","ratio":"16:9"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task = %+v %+v", task, task.Error)
	}
	rec := e.task(id)
	t.Logf("reserved %s, charged %s", rec.Reserved, rec.Charged)
	if rec.Charged > rec.Reserved {
		t.Errorf("charged %s against a reservation of %s", rec.Charged, rec.Reserved)
	}
	_, info := e.download(task.Metadata.URL, "result.mp4")
	if info.Length() > 5.25 {
		t.Errorf("the final video measures %v s, want at most 5.25 s", info.Length())
	}
	// The generation account's excess; the local enhancement stayed within its source.
	e.expectExcess(id, map[string]string{billing.ExcessDuration: "ark-main"})
}

// Native 1080p 15 s; the upstream returns a 15 s 1080p video at 60 fps and reports 5 tokens.
// Before: billed the 5 tokens. Now the floor is what the stored video implies at the
// request's 24 fps (the 60 fps above the request is the upstream's), and the charge never
// exceeds the reservation.
func TestUpstreamUsageBelowTheMeasuredVideoIsBilledTheMeasuredTokens(t *testing.T) {
	t.Parallel()
	clip := colorClip(t, t.TempDir(), "hd60.mp4", 1920, 1080, 60, 15)
	e, _ := arkRig(t, clip, 5)
	id := e.create(`{"model":"demo-video-standard","prompt":"a field","metadata":{"duration":15,"resolution":"1080p","ratio":"16:9"}}`)
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task = %+v %+v", task, task.Error)
	}
	rec := e.task(id)
	_, info := e.download(task.Metadata.URL, "result.mp4")
	floorTokens := billing.NativeTokens(info.Width, info.Height, min(info.FPS, billing.NativeFPS), info.Billable())
	tenant, _ := e.m.cat().Tenant("demo")
	floor, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-standard")), floorTokens)
	t.Logf("reserved %s, charged %s, the stored video implies %d tokens (%s)", rec.Reserved, rec.Charged, floorTokens, floor)
	if rec.Charged < floor {
		t.Errorf("charged %s, below the %s the stored video implies", rec.Charged, floor)
	}
	if rec.Charged > rec.Reserved {
		t.Errorf("charged %s against a reservation of %s", rec.Charged, rec.Reserved)
	}
	// 5 tokens for a video that implies 729,000; and 60 fps for a request priced at 24.
	e.expectExcess(id, map[string]string{billing.ExcessUsageUnder: "ark-main", billing.ExcessOverRequest: "ark-main"})
}

// Speech "Hi." on an OpenAI-compatible upstream that answers with a 600 s MP3. Before:
// charged 0.120038 against a 0.0006 reservation (200×). Now the audio is cut to the speech
// bound of the text on an openai account (speech.OpenAIBound: 3.542 s) and billed within the
// reservation.
func TestSpeechLongerThanItsBoundIsTrimmedAndChargedWithinTheReservation(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	mp3 := filepath.Join(dir, "long.mp3")
	if b, err := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "sine=d=600:r=24000",
		"-c:a", "libmp3lame", "-b:a", "32k", mp3).CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v: %s", err, b)
	}
	clip := colorClip(t, dir, "clip.mp4", 320, 180, 24, 2)
	fake := openaifake.Start(openaifake.Config{Key: openaiTestKey, Clip: clip, Speech: mp3})
	t.Cleanup(fake.Close)
	logs := &syncBuffer{}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("logs:\n%s", logs.String())
		}
	})
	m := NewMain(env(map[string]string{"OPENAI_TEST_KEY": openaiTestKey}), &syncBuffer{}, logs)
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--catalog", openaiCatalog(t, t.TempDir(), fake.Base()))
	s := e.speech(`{"model":"demo-speech","input":"Hi."}`)
	rec, err := e.m.db.Speech(context.Background(), s.ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("reserved %s, charged %s, duration %v s", rec.Reserved, rec.Charged, s.Duration)
	if rec.Charged > rec.Reserved {
		t.Errorf("charged %s against a reservation of %s", rec.Charged, rec.Reserved)
	}
	bound := float64(speech.OpenAIBound.Micros("Hi.")) / 1e6 // (1 + 2 × 0.6 + 1.02) × 1.1 = 3.542 s
	if s.Duration > bound {
		t.Errorf("the audio measures %v s, past the text's bound of %v s", s.Duration, bound)
	}
	_, info := e.download(s.URL, "speech.mp3")
	if info.Length() > bound {
		t.Errorf("the stored audio measures %v s", info.Length())
	}
	e.expectExcess(s.ID, map[string]string{billing.ExcessDuration: "openai-main"})
}
