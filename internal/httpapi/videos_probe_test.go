package httpapi

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/video"
)

// The production route measures its input videos itself: a real MP4 rendered by ffmpeg is
// served over HTTPS from 127.0.0.1, probed through safefetch with byte ranges, and the
// reservation uses the measured seconds.
func TestProductionMeasuresRealInputVideo(t *testing.T) {
	t.Parallel()
	tools := requireFFmpeg(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "in.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 24, Duration: 2.5, Container: "mp4", Text: "input"}, clip); err != nil {
		t.Fatal(err)
	}
	info, err := tools.Probe(context.Background(), clip)
	if err != nil {
		t.Fatal(err)
	}
	media := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/in.mp4" {
			http.NotFound(w, r)
			return
		}
		http.ServeFile(w, r, clip)
	}))
	t.Cleanup(media.Close)
	roots := media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	fetch := loopbackFetch(t, roots, mapResolver{})

	e := newTestEnvWith(t, testCatalog(t), &video.Service{Prober: video.URLProber{Client: fetch}}, DefaultMaxBodyBytes)
	secret, k := e.newKey("acme", startCredit, false)
	ve := &videoEnv{testEnv: e, key: secret, keyRec: k}
	body := `{"model":"acme-production-standard","prompt":"x","metadata":{"resolution":"1080p","duration":4,"content":[
		{"type":"video_url","role":"reference_video","video_url":{"url":"` + media.URL + `/in.mp4"}},
		{"type":"video_url","role":"reference_video","video_url":{"url":"` + media.URL + `/in.mp4"}}]}}`
	r := ve.post(secret, body)
	if r.status != 202 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	// (2 × measured + ceil(4.25) s) at the video-input rate 0.12, to the micro-unit.
	measured := billing.SecondsToMicros(info.Duration)
	if math.Abs(info.Duration-2.5) > 0.05 {
		t.Fatalf("rendered clip is %v s", info.Duration)
	}
	want, _ := money.MulDiv(120_000, 2*measured+5_000_000, 1_000_000)
	if b := ve.balance(k); b.Reserved != want {
		t.Fatalf("reserved %s, want %s (measured %v s each)", b.Reserved, want, info.Duration)
	}
	// A missing file is a 400 on the item, with no task.
	bad := `{"model":"acme-production-standard","prompt":"x","metadata":{"resolution":"1080p","content":[
		{"type":"video_url","role":"reference_video","video_url":{"url":"` + media.URL + `/missing.mp4"}}]}}`
	r = ve.post(secret, bad)
	if r.status != 400 {
		t.Fatalf("missing input: %d %s", r.status, r.body)
	}
}

// Probes are bounded per process: a request that finds every probe slot taken for its whole
// measuring window gets a 503 with Retry-After and nothing written, and goes through once one
// is free.
func TestCreateWaitsForAProbeSlotThenAnswers503(t *testing.T) {
	t.Parallel()
	tools := requireFFmpeg(t)
	clip := filepath.Join(t.TempDir(), "in.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 90, FPS: 24, Duration: 2, Container: "mp4"}, clip); err != nil {
		t.Fatal(err)
	}
	media := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, clip) }))
	t.Cleanup(media.Close)
	fetch := loopbackFetch(t, media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, mapResolver{})
	slots := video.NewProbeSlots(1)
	svc := &video.Service{Prober: video.URLProber{Client: fetch, Slots: slots}, MeasureTimeout: 200 * time.Millisecond}
	e := newTestEnvWith(t, testCatalog(t), svc, DefaultMaxBodyBytes)
	secret, k := e.newKey("acme", startCredit, false)
	ve := &videoEnv{testEnv: e, key: secret, keyRec: k}
	body := `{"model":"acme-production-standard","prompt":"x","metadata":{"resolution":"1080p","duration":4,"content":[
		{"type":"video_url","role":"reference_video","video_url":{"url":"` + media.URL + `/in.mp4"}}]}}`

	slots <- struct{}{} // another request's probe holds the only slot
	r := ve.post(secret, body)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "2" {
		t.Fatalf("every slot taken: %d %s (Retry-After %q), want 503 with Retry-After 2", r.status, r.body, r.header.Get("Retry-After"))
	}
	if got := ve.balance(k); got.Available != startCredit || got.Reserved != 0 {
		t.Fatalf("balance %+v after a refused create, want %v available and nothing reserved", got, startCredit)
	}
	<-slots
	if r := ve.post(secret, body); r.status != http.StatusAccepted {
		t.Fatalf("slot free again: %d %s, want 202", r.status, r.body)
	}
	if len(slots) != 0 {
		t.Fatalf("%d probe slots still held after the request", len(slots))
	}
}

// requireFFmpeg skips the test without the media tools, and fails it under CI=true.
func requireFFmpeg(t *testing.T) ffmpeg.Tools {
	t.Helper()
	tools := ffmpeg.Tools{}
	if err := tools.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ffmpeg required under CI=true: %v", err)
		}
		t.Skip(err)
	}
	return tools
}
