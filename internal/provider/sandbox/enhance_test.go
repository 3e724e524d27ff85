package sandbox

import (
	"context"
	"errors"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/probe/probetest"
	"mediagen/internal/provider"
)

// sourceVideo renders a 320x180, 24 fps, 1 s clip with audio to enhance.
func sourceVideo(t *testing.T) string {
	t.Helper()
	requireTools(t)
	out := filepath.Join(t.TempDir(), "source.mp4")
	spec := ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 1, Audio: true, Text: "source"}
	if err := testTools().Render(context.Background(), spec, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestEnhancementScalesAndResamples(t *testing.T) {
	t.Parallel()
	src := sourceVideo(t)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ms := &mediaServer{files: map[string][]byte{"/in/source.mp4": data}}
	srv := httptest.NewServer(ms) // plain http: enhancement sources may be http
	defer srv.Close()
	e := newEngine(t, "", withFetch(loopbackClient(t, srv)))

	tests := []struct {
		name   string
		req    provider.EnhanceRequest
		w, h   int
		fps    float64
		fetchQ string // query the server must see; "-" when not fetched
	}{
		{"short side and fps from a path", provider.EnhanceRequest{Source: provider.Source{Path: src}, ShortSide: 90, FPS: intp(12)},
			160, 90, 12, "-"},
		{"keeps source fps and aspect", provider.EnhanceRequest{Source: provider.Source{Path: src}, ShortSide: 120, BitrateLevel: "low"},
			214, 120, 24, "-"}, // 320*120/180 = 213.3 → nearest even
		{"over http with markers stripped", provider.EnhanceRequest{
			Source:    provider.Source{URL: srv.URL + "/in/source.mp4?token=abc&sandbox=slow:400ms"},
			ShortSide: 100, FPS: intp(30), Bitrate: intp(300)},
			178, 100, 30, "token=abc"},
	}
	start := time.Now()
	ids := make([]string, len(tests))
	for i, tc := range tests {
		tc.req.IdempotencyKey = "enh/" + tc.name
		if ids[i], err = e.SubmitEnhancement(context.Background(), tc.req); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := wait(t, e.PollEnhancement, ids[i], 30*time.Second)
			if j.Status != provider.StatusSucceeded {
				t.Fatalf("job = %+v", j)
			}
			if j.Output.ContentType != "video/mp4" || j.Output.CompletionTokens != 0 {
				t.Errorf("output = %+v", j.Output)
			}
			info := probe(t, j.Output.Source.Path)
			t.Logf("%dx%d %.3fs %.2ffps %s %s audio=%s", info.Width, info.Height, info.Duration, info.FPS, info.VideoCodec, info.Container, info.AudioCodec)
			if info.Width != tc.w || info.Height != tc.h || math.Abs(info.FPS-tc.fps) > 0.01 {
				t.Errorf("got %dx%d at %v fps, want %dx%d at %v", info.Width, info.Height, info.FPS, tc.w, tc.h, tc.fps)
			}
			if info.Container != "mp4" || !info.HasAudio || math.Abs(info.Duration-1) > 0.1 {
				t.Errorf("container %s, audio %v, duration %v", info.Container, info.HasAudio, info.Duration)
			}
			if tc.fetchQ != "-" {
				reqs := ms.requests("/in/source.mp4")
				if len(reqs) != 1 || reqs[0].URL.RawQuery != tc.fetchQ {
					t.Errorf("source requests %d, query %v; want one with %q", len(reqs), reqs, tc.fetchQ)
				}
				if time.Since(start) < 400*time.Millisecond {
					t.Errorf("slow marker ignored")
				}
			}
		})
	}
}

func TestEnhancementFailures(t *testing.T) {
	t.Parallel()
	ms := &mediaServer{files: map[string][]byte{"/not-video.mp4": []byte("hello, not a video")}}
	srv := httptest.NewServer(ms)
	defer srv.Close()
	e := newEngine(t, "", withFetch(loopbackClient(t, srv)))
	tests := []struct {
		name, url string
		code, msg string
		status    provider.Status
		wantFetch bool
	}{
		{"fail marker", "/v.mp4?sandbox=fail", CodeGenerationFailed, "failed", provider.StatusFailed, false},
		{"fail marker with code", "/v.mp4?sandbox=fail:VideoEnhance.SourceBroken", "VideoEnhance.SourceBroken", "VideoEnhance.SourceBroken", provider.StatusFailed, false},
		{"expire marker", "/v.mp4?sandbox=expire", CodeExpired, "expired", provider.StatusExpired, false},
		{"missing source", "/missing.mp4", CodeGenerationFailed, "source video could not be fetched", provider.StatusFailed, true},
		{"not a video", "/not-video.mp4", CodeGenerationFailed, "not a readable video", provider.StatusFailed, true},
	}
	ids := make([]string, len(tests))
	for i, tc := range tests {
		id, err := e.SubmitEnhancement(context.Background(), provider.EnhanceRequest{
			IdempotencyKey: tc.name, Source: provider.Source{URL: srv.URL + tc.url}, Resolution: "1080p"})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		ids[i] = id
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			j := wait(t, e.PollEnhancement, ids[i], 30*time.Second)
			if j.Status != tc.status || j.ErrorCode != tc.code || !strings.Contains(j.ErrorMessage, tc.msg) {
				t.Errorf("job = %+v, want %s %s with %q", j, tc.status, tc.code, tc.msg)
			}
		})
	}
	if n := len(ms.requests("/v.mp4")); n != 0 {
		t.Errorf("marker jobs fetched the source %d times", n)
	}
}

func TestEnhancementTransientMarker(t *testing.T) {
	t.Parallel()
	e := newEngine(t, "")
	req := provider.EnhanceRequest{IdempotencyKey: "flaky-enh", Source: provider.Source{URL: "https://cdn.example/v.mp4?sandbox=transient:2,fail"}, ShortSide: 480}
	for i := range 2 {
		if _, err := e.SubmitEnhancement(context.Background(), req); !errors.Is(err, provider.ErrTransient) {
			t.Fatalf("attempt %d: %v, want ErrTransient", i+1, err)
		}
	}
	id, err := e.SubmitEnhancement(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if j := wait(t, e.PollEnhancement, id, 10*time.Second); j.Status != provider.StatusFailed {
		t.Errorf("job = %+v", j)
	}
}

func TestEnhancementTargets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		res   string
		short int
		want  int
		ok    bool
	}{
		{"1080p", 0, 1080, true}, {"2k", 0, 1440, true}, {"4k", 0, 2160, true}, {"8k", 0, 4320, true},
		{"", 720, 720, true}, {"", 128, 128, true}, {"", 4320, 4320, true},
		{"720p", 0, 0, false}, {"lte_720p", 0, 0, false}, {"1080p", 720, 0, false}, {"", 0, 0, false}, {"", 9000, 0, false},
	} {
		got, err := enhanceShortSide(provider.EnhanceRequest{Resolution: tc.res, ShortSide: tc.short})
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("enhanceShortSide(%q, %d) = %d, %v; want %d ok=%v", tc.res, tc.short, got, err, tc.want, tc.ok)
		}
	}
	e := newEngine(t, "")
	for _, r := range []provider.EnhanceRequest{
		{IdempotencyKey: "a", ShortSide: 90},                                                         // no source
		{IdempotencyKey: "b", Source: provider.Source{Path: "/x"}, ShortSide: 90, FPS: intp(0)},      // fps
		{IdempotencyKey: "c", Source: provider.Source{Path: "/x"}, ShortSide: 90, BitDepth: intp(9)}, // depth
		{IdempotencyKey: "d", Source: provider.Source{Path: "/x"}, ShortSide: 90, BitrateLevel: "max"},
		{IdempotencyKey: "e", Source: provider.Source{URL: "https://x.example/v?sandbox=nope"}, ShortSide: 90},
	} {
		if _, err := e.SubmitEnhancement(context.Background(), r); !errors.Is(err, provider.ErrPermanent) {
			t.Errorf("SubmitEnhancement(%+v) = %v, want permanent", r, err)
		}
	}
}

// A source longer than the task was priced for — the URL served a short clip when it was
// measured at submission and a longer one now — is refused, not processed: the reservation
// was bounded by the measured length.
func TestEnhancementRefusesASourceLongerThanPricedFor(t *testing.T) {
	t.Parallel()
	src := sourceVideo(t) // 1 s
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	ms := &mediaServer{files: map[string][]byte{"/in.mp4": data}}
	srv := httptest.NewServer(ms)
	defer srv.Close()
	e := newEngine(t, "", withFetch(loopbackClient(t, srv)))
	for _, tc := range []struct {
		name       string
		maxSeconds float64
		status     provider.Status
	}{
		{"priced for 0.5 s: refused", 0.5, provider.StatusFailed},
		{"priced for 1.25 s: enhanced", 1.25, provider.StatusSucceeded},
		{"no limit: enhanced", 0, provider.StatusSucceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, err := e.SubmitEnhancement(context.Background(), provider.EnhanceRequest{IdempotencyKey: tc.name,
				Source: provider.Source{URL: srv.URL + "/in.mp4"}, ShortSide: 90, MaxSourceSeconds: tc.maxSeconds})
			if err != nil {
				t.Fatal(err)
			}
			j := wait(t, e.PollEnhancement, id, 30*time.Second)
			if j.Status != tc.status {
				t.Fatalf("job = %+v, want %s", j, tc.status)
			}
			if tc.status == provider.StatusFailed && (j.ErrorCode != CodeSourceChanged || !strings.Contains(j.ErrorMessage, "must not change")) {
				t.Errorf("error %s %q", j.ErrorCode, j.ErrorMessage)
			}
		})
	}
}

// The numbers through the engine: a source whose mvhd, tkhd and mdhd say 9.75 s over
// 10.2 s of samples is priced for 9.75 + 0.25 = 10 s (MaxSourceSeconds). ffprobe believes the
// headers, so the engine used to enhance all of it up to -t 10.000, and the output measured
// 10.02 s: charged 11 s against a 10 s reservation. Whatever the engine does with such a
// source, the output it hands back is never billed above the whole seconds it was priced for.
func TestEnhancementOfASourceWhoseHeadersUnderstateItsSamplesStaysWithinItsPrice(t *testing.T) {
	t.Parallel()
	requireTools(t)
	src := filepath.Join(t.TempDir(), "lying.mp4")
	spec := ffmpeg.RenderSpec{Width: 64, Height: 36, FPS: 24, Duration: 10.2, Audio: true}
	if err := testTools().Render(context.Background(), spec, src); err != nil {
		t.Fatal(err)
	}
	if err := probetest.RewriteDurations(src, 9.75); err != nil {
		t.Fatal(err)
	}
	e := newEngine(t, "")
	const priced = 10.0 // 9.75 s measured + 0.25 s slack, rounded up
	id, err := e.SubmitEnhancement(context.Background(), provider.EnhanceRequest{IdempotencyKey: "lying",
		Source: provider.Source{Path: src}, ShortSide: 36, FPS: intp(24), MaxSourceSeconds: 9.75 + 0.25})
	if err != nil {
		t.Fatal(err)
	}
	j := wait(t, e.PollEnhancement, id, 60*time.Second)
	switch j.Status {
	case provider.StatusFailed:
		// Refused as longer than priced: nothing is charged.
		if j.ErrorCode != CodeSourceChanged {
			t.Fatalf("job failed with %s %q, want %s", j.ErrorCode, j.ErrorMessage, CodeSourceChanged)
		}
	case provider.StatusSucceeded:
		info := probe(t, j.Output.Source.Path)
		if billed := math.Ceil(info.Duration); billed > priced {
			t.Fatalf("output measures %.3f s: billed %v s for a task priced for %v s", info.Duration, billed, priced)
		}
	default:
		t.Fatalf("job = %+v", j)
	}
}

// A source whose frames are over the video-frame budget (an 8200×4400 MJPEG MOV of 200 KB,
// 36 megapixels a frame) fails the job with InvalidParameter naming the size and the budget,
// before the encoder decodes it: its URL may serve something else than what was measured at
// submission.
func TestEnhancementRefusesASourceOverTheFrameBudget(t *testing.T) {
	t.Parallel()
	requireTools(t)
	big := filepath.Join(t.TempDir(), "big.mov")
	cmd := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", "color=c=black:s=8200x4400:r=1:d=1",
		"-c:v", "mjpeg", "-q:v", "31", "-f", "mov", big)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ffmpeg: %v %s", err, out)
	}
	data, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	ms := &mediaServer{files: map[string][]byte{"/big.mov": data}}
	srv := httptest.NewServer(ms)
	defer srv.Close()
	e := newEngine(t, "", withFetch(loopbackClient(t, srv)))
	id, err := e.SubmitEnhancement(context.Background(), provider.EnhanceRequest{IdempotencyKey: "big",
		Source: provider.Source{URL: srv.URL + "/big.mov"}, ShortSide: 90})
	if err != nil {
		t.Fatal(err)
	}
	j := wait(t, e.PollEnhancement, id, 60*time.Second)
	if j.Status != provider.StatusFailed || j.ErrorCode != CodeInvalidParameter ||
		!strings.Contains(j.ErrorMessage, "8200×4400") || !strings.Contains(j.ErrorMessage, "35,389,440 pixels") {
		t.Fatalf("job = %+v, want failed %s naming the size and the budget", j, CodeInvalidParameter)
	}
	if n := e.renders.Load(); n != 0 {
		t.Errorf("%d renders, want 0", n)
	}
}
