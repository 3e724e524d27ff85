package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
)

// A source that serves a 2 s clip when it is measured at submission and a 20 s clip when the
// engine fetches it cannot make the task charge for 20 s: the reservation was bounded by the
// measured 2 s, so the engine refuses the longer source, the task fails with
// InvalidParameter.SourceChanged, and the whole reservation comes back.
func TestEnhancementSourceSwappedAfterSubmissionIsRefused(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short.mp4"), filepath.Join(dir, "long.mp4")
	for p, d := range map[string]float64{short: 2, long: 20} {
		if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 64, Height: 36, FPS: 12, Duration: d, Container: "mp4"}, p); err != nil {
			t.Fatal(err)
		}
	}
	var swapped atomic.Bool
	media := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f := short
		if swapped.Load() {
			f = long
		}
		http.ServeFile(w, r, f)
	}))
	t.Cleanup(media.Close)
	e := serveFetchingFrom(t, dir, media)
	before, _ := e.balance()
	// The service is fast to claim; the swap must happen between measuring and fetching, so
	// the sandbox's slow marker holds the job a moment first.
	id := e.create(`{"model":"demo-enhance-lite","metadata":{"video_url":"` + media.URL + `/clip.mp4?sandbox=slow:1s","duration":2,"resolution":"1080p"}}`)
	swapped.Store(true)
	task := e.wait(id)
	if task.Status != "failed" || task.Error == nil || task.Error.Code != "InvalidParameter.SourceChanged" {
		t.Fatalf("task = %+v, want failed with InvalidParameter.SourceChanged", task)
	}
	if after, used := e.balance(); after != before || used != "0" {
		t.Fatalf("balance %s (used %s), want %s with nothing used", after, used, before)
	}
}

// A source whose movie header was rewritten to claim 1 s while its streams play 10 s is
// measured, reserved and billed as 10 s: the reservation made at acceptance covers the final
// charge (no overage), so a key cannot be overdrawn by lying in the file's header. Before the
// probe read the samples, this reserved 2 s and charged 10 s past the key's balance.
func TestEnhancementSourceWithRewrittenHeaderIsReservedForItsStreams(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 64, Height: 36, FPS: 12, Duration: 10, Container: "mp4"}, src); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	i := bytes.Index(b, []byte("mvhd"))
	if i < 0 || b[i+4] != 0 {
		t.Fatal("no version 0 mvhd")
	}
	binary.BigEndian.PutUint32(b[i+20:], binary.BigEndian.Uint32(b[i+16:])) // duration: 1 s
	if err := os.WriteFile(src, b, 0o644); err != nil {
		t.Fatal(err)
	}
	media := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, src) }))
	t.Cleanup(media.Close)
	e := serveFetchingFrom(t, dir, media)
	// The slow marker holds the job so the balance can be read while the reservation stands.
	id := e.create(`{"model":"demo-enhance-lite","metadata":{"video_url":"` + media.URL + `/clip.mp4?sandbox=slow:1s","duration":1,"fps":24,"resolution":"1080p"}}`)
	reserved, _ := e.balance()
	task := e.wait(id)
	if task.Status != "completed" {
		t.Fatalf("task = %+v, want completed", task)
	}
	settled, used := e.balance()
	if parseMicros(t, settled) < parseMicros(t, reserved) {
		t.Fatalf("available %s after settlement, below the %s left by the reservation: the charge ran past what was reserved (used %s)", settled, reserved, used)
	}
	if d := task.Metadata.Duration; d == nil || *d < 9.9 {
		t.Fatalf("output %v s, want the source's 10 s", d)
	}
}

func parseMicros(t *testing.T, s string) money.Micros {
	t.Helper()
	m, err := money.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// serveFetchingFrom starts serve (sandbox, no pace) allowed to fetch from the TLS test server
// media on loopback, and returns a client of it with the demo key.
func serveFetchingFrom(t *testing.T, dir string, media *httptest.Server) *e2e {
	t.Helper()
	var out bytes.Buffer
	m := NewMain(env(nil), &out, io.Discard)
	m.FetchTLS = &tls.Config{RootCAs: media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--sandbox-pace", "0",
		"--fetch-allow", "loopback", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	return &e2e{t: t, m: m, key: m.DemoKey}
}
