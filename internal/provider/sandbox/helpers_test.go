package sandbox

import (
	"bytes"
	"context"
	"crypto/x509"
	"image"
	"image/color"
	"image/png"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/provider"
	"mediagen/internal/testkit"
)

// requireTools skips when ffmpeg, ffprobe or espeak-ng is missing, except under
// CI=true, where a missing tool must fail rather than hide the tests.
func requireTools(t testing.TB, bins ...string) {
	t.Helper()
	if len(bins) == 0 {
		bins = []string{"ffmpeg", "ffprobe"}
	}
	for _, bin := range bins {
		if _, err := exec.LookPath(bin); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is required when CI=true: %v", bin, err)
			}
			t.Skipf("%s not installed: %v", bin, err)
		}
	}
}

// testTools keeps renders cheap on a shared 2-core machine.
func testTools() ffmpeg.Tools {
	return ffmpeg.Tools{Preset: "ultrafast", Threads: 1, Timeout: 60 * time.Second}
}

type engineOpt func(*Config)

func withPace(d time.Duration) engineOpt { return func(c *Config) { c.Pace = d } }
func withFetch(f *safefetch.Client) engineOpt {
	return func(c *Config) { c.Fetch = f }
}
func withClock(now func() time.Time) engineOpt { return func(c *Config) { c.Now = now } }

// newEngine starts an engine on dir (a fresh temporary directory when "") and closes it
// at the end of the test.
func newEngine(t *testing.T, dir string, opts ...engineOpt) *Engine {
	t.Helper()
	requireTools(t)
	if dir == "" {
		dir = t.TempDir()
	}
	cfg := Config{
		Dir:           dir,
		Tools:         testTools(),
		Pace:          150 * time.Millisecond,
		MaxConcurrent: 1,
		Logger:        slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	for _, o := range opts {
		o(&cfg)
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// loopbackClient fetches from httptest servers on 127.0.0.1 only, trusting srv's
// certificate when srv is a TLS server.
func loopbackClient(t *testing.T, srv *httptest.Server) *safefetch.Client {
	t.Helper()
	var roots *x509.CertPool
	if srv != nil && srv.TLS != nil {
		roots = x509.NewCertPool()
		roots.AddCert(srv.Certificate())
	}
	return testkit.LoopbackFetch(t, roots, nil)
}

// mediaServer serves fixed bodies by path and records every request.
type mediaServer struct {
	mu    sync.Mutex
	files map[string][]byte
	hits  []*http.Request
}

func (m *mediaServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	m.hits = append(m.hits, r.Clone(context.Background()))
	body, ok := m.files[r.URL.Path]
	m.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, filepath.Base(r.URL.Path), time.Time{}, bytes.NewReader(body))
}

func (m *mediaServer) requests(path string) []*http.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []*http.Request
	for _, r := range m.hits {
		if r.URL.Path == path {
			out = append(out, r)
		}
	}
	return out
}

// pngBytes is a w x h PNG of one colour.
func pngBytes(t *testing.T, c color.Color, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := range h {
		for x := range w {
			img.Set(x, y, c)
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// pollFunc is PollGeneration or PollEnhancement.
type pollFunc func(context.Context, string) (provider.Job, error)

// wait polls until the job ends, checking on the way that the status only moves
// forward, that progress never decreases, stays within 0..99 before the end and is 100
// at the end. It returns the final job.
func wait(t *testing.T, poll pollFunc, id string, timeout time.Duration) provider.Job {
	t.Helper()
	rank := map[provider.Status]int{provider.StatusQueued: 0, provider.StatusRunning: 1,
		provider.StatusSucceeded: 2, provider.StatusFailed: 2, provider.StatusExpired: 2}
	var last provider.Job
	looked := false
	if !testkit.PollEvery(20*time.Millisecond, timeout, func() bool {
		j, err := poll(context.Background(), id)
		if err != nil {
			t.Fatalf("poll %s: %v", id, err)
		}
		if looked {
			if rank[j.Status] < rank[last.Status] {
				t.Fatalf("status went back from %s to %s", last.Status, j.Status)
			}
			if j.Progress < last.Progress {
				t.Fatalf("progress went back from %d to %d", last.Progress, j.Progress)
			}
		}
		looked = true
		switch j.Status {
		case provider.StatusQueued:
			if j.Progress != 0 {
				t.Fatalf("queued with progress %d", j.Progress)
			}
		case provider.StatusRunning:
			if j.Progress < 1 || j.Progress > 99 {
				t.Fatalf("running with progress %d", j.Progress)
			}
		default:
			if j.Progress != 100 {
				t.Fatalf("%s with progress %d", j.Status, j.Progress)
			}
			if j.Status == provider.StatusSucceeded && (j.Output == nil || j.Output.Source.Path == "") {
				t.Fatalf("succeeded without output: %+v", j)
			}
			if j.Status != provider.StatusSucceeded && (j.ErrorCode == "" || j.ErrorMessage == "") {
				t.Fatalf("%s without error code or message: %+v", j.Status, j)
			}
			last = j
			return true
		}
		last = j
		return false
	}) {
		t.Fatalf("job %s still %s (%d%%) after %v", id, last.Status, last.Progress, timeout)
	}
	return last
}

func probe(t *testing.T, path string) ffmpeg.Info {
	t.Helper()
	info, err := testTools().Probe(context.Background(), path)
	if err != nil {
		t.Fatalf("probe %s: %v", path, err)
	}
	return info
}

func boolp(b bool) *bool { return &b }
func intp(n int) *int    { return &n }

// frameRGB decodes every frame of a video shrunk to 1x1 and returns the colours.
func frameRGB(t *testing.T, path string) [][3]float64 {
	t.Helper()
	cmd := exec.Command("ffmpeg", "-hide_banner", "-nostdin", "-loglevel", "error", "-i", "file:"+path,
		"-map", "0:v:0", "-vf", "scale=1:1:flags=area", "-fps_mode", "passthrough", "-f", "rawvideo", "-pix_fmt", "rgb24", "-")
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("decode frames: %v: %s", err, stderr.String())
	}
	raw := out.Bytes()
	var frames [][3]float64
	for i := 0; i+3 <= len(raw); i += 3 {
		frames = append(frames, [3]float64{float64(raw[i]), float64(raw[i+1]), float64(raw[i+2])})
	}
	return frames
}

// dominant names the channel that clearly outweighs the other two, or "".
func dominant(c [3]float64) string {
	names := []string{"red", "green", "blue"}
	for i := range 3 {
		if c[i] > 90 && c[i] > 2*(c[(i+1)%3]+c[(i+2)%3]) {
			return names[i]
		}
	}
	return ""
}
