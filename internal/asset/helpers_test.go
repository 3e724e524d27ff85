package asset

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/jobs"
	"mediagen/internal/keys"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// env is a Service on a fresh SQLite store and blob root, with a loopback HTTPS media server.
type env struct {
	t     *testing.T
	svc   *Service
	db    store.Store
	blobs *blob.FS
	media *httptest.Server
	dir   string         // files the media server serves
	clock *testkit.Clock // runs with the wall clock; the test moves it ahead
	jobs  *jobs.Engine   // runs the service's job kinds on the env's clock
}

type envOpts struct {
	fetch  *safefetch.Options // nil: loopback allowed, trusting the media server
	mutate func(*Config)
	noRun  bool        // do not start the job engine (e.start does)
	db     store.Store // nil: a fresh SQLite store
}

func newEnv(t *testing.T, o envOpts) *env {
	t.Helper()
	root := t.TempDir()
	db := o.db
	if db == nil {
		db = testkit.SQLite(t)
	}
	blobs, err := blob.NewFS(filepath.Join(root, "assets"), bytes.Repeat([]byte("k"), 32), "http://127.0.0.1:9")
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "media")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	media := httptest.NewTLSServer(mediaHandler(dir))
	t.Cleanup(media.Close)
	// Names resolve to nothing and only loopback may be dialled: a test that names a host
	// (media.example.com) never sends a DNS query or a packet off the machine.
	fo := safefetch.Options{AllowLoopback: true, TLSConfig: &tls.Config{RootCAs: media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs},
		Resolver: fixedResolver{}, DialContext: testkit.LoopbackDialer(t)}
	if o.fetch != nil {
		fo = *o.fetch
	}
	cl := testkit.RunningClock()
	cat, err := catalog.Parse("test", []byte(testCatalog))
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Store: db, Catalog: cat, Blobs: blobs, Fetch: safefetch.New(fo), PublicURL: "http://127.0.0.1:9",
		PollInterval: 50 * time.Millisecond, MinCheck: 300 * time.Millisecond, Lease: time.Minute, RetryBackoff: 20 * time.Millisecond,
		CallbackBackoff: []time.Duration{50 * time.Millisecond}, CallbackTimeout: 2 * time.Second, Now: cl.Now}
	eng := jobs.New(jobs.Config{Store: db, Now: cl.Now})
	cfg.Notify = eng.Notify
	if o.mutate != nil {
		o.mutate(&cfg)
	}
	svc := New(cfg)
	for _, k := range svc.Kinds() {
		if err := eng.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	e := &env{t: t, svc: svc, db: db, blobs: blobs, media: media, dir: dir, clock: cl, jobs: eng}
	if !o.noRun {
		e.start()
	}
	return e
}

// start starts the job engine that runs the service's background work.
func (e *env) start() {
	e.t.Helper()
	if err := e.jobs.Start(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(e.jobs.Stop)
}

// mediaHandler serves dir, plus /slow (never answers until the client goes away) and
// /status/NNN.
func mediaHandler(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/slow":
			w.Header().Set("Content-Type", "image/png")
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		case len(r.URL.Path) > 8 && r.URL.Path[:8] == "/status/":
			var code int
			fmt.Sscan(r.URL.Path[8:], &code)
			w.WriteHeader(code)
		default:
			files.ServeHTTP(w, r)
		}
	})
}

func (e *env) url(name string) string { return e.media.URL + "/" + name }

func (e *env) write(name string, b []byte) string {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, name), b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.url(name)
}

// testCatalog's tenants are those of the callers below. Their asset ingestions are unlimited,
// so tests that create many assets at once behave as they did before the limit existed; the
// limit's own tests make callers with limits (caller).
const testCatalog = `limits:
  key: {asset_ingests_in_flight: unlimited}
  tenant: {asset_ingests_in_flight: unlimited}
tenants:
  - id: acme
    name: Acme Films
    currency: USD
  - id: rival
    name: Rival
    currency: USD
`

var acme = caller(testCatalog, "acme", "key_acme")
var rival = caller(testCatalog, "rival", "key_rival")

// caller is the key keyID of tenant as the catalog text describes the tenant (its limits).
func caller(catalogText, tenant, keyID string) keys.Caller {
	cat, err := catalog.Parse("test", []byte(catalogText))
	if err != nil {
		panic(err)
	}
	t, ok := cat.Tenant(tenant)
	if !ok {
		panic("no tenant " + tenant)
	}
	return keys.Caller{Tenant: t, Key: store.Key{ID: keyID, TenantID: tenant}}
}

// op runs the operation at path for c with body; it returns the JSON answer or the error.
func (e *env) op(c keys.Caller, path, body string) (map[string]any, error) {
	e.t.Helper()
	for _, op := range e.svc.Operations() {
		if op.Path == path {
			out, err := op.Run(context.Background(), c, []byte(body))
			if err != nil {
				return nil, err
			}
			b, merr := json.Marshal(out)
			if merr != nil {
				e.t.Fatal(merr)
			}
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				e.t.Fatal(err)
			}
			return m, nil
		}
	}
	e.t.Fatalf("no operation %s", path)
	return nil, nil
}

func (e *env) must(c keys.Caller, path, body string) map[string]any {
	e.t.Helper()
	m, err := e.op(c, path, body)
	if err != nil {
		e.t.Fatalf("%s %s: %v", path, body, err)
	}
	return m
}

func (e *env) virtualGroup(c keys.Caller) string {
	e.t.Helper()
	return e.must(c, VirtualPrefix+"/asset-groups/create", `{"Name":"g"}`)["Id"].(string)
}

func (e *env) createAsset(c keys.Caller, group, url, typ string) string {
	e.t.Helper()
	m := e.must(c, VirtualPrefix+"/assets/create", fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":%q}`, group, url, typ))
	if m["Status"] != "Processing" {
		e.t.Fatalf("create answered %v", m)
	}
	return m["Id"].(string)
}

// wait polls assets/get until the asset leaves Processing.
func (e *env) wait(c keys.Caller, id string) map[string]any {
	e.t.Helper()
	return e.waitIn(c, VirtualPrefix, id)
}

func pngBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			img.Set(x, y, color.RGBA{uint8(x*7 ^ y*13), uint8(y*4 + x*x), uint8(x * y), 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func jpegBytes(t testing.TB, w, h int) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := jpeg.Encode(&b, image.NewGray(image.Rect(0, 0, w, h)), nil); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// tools returns ffmpeg, skipping the test when it is missing (failing under CI=true).
func tools(t testing.TB) ffmpeg.Tools {
	t.Helper()
	tl := ffmpeg.Tools{}
	if err := tl.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("media tools required under CI=true: %v", err)
		}
		t.Skip(err)
	}
	return tl
}

var (
	clipOnce sync.Once
	clipMP4  []byte
	clipM4A  []byte
	clipErr  error
)

// clips renders a 1.5 s 160x96 MP4 with audio and a 1 s audio-only M4A, once per test binary.
func clips(t testing.TB) (mp4, m4a []byte) {
	t.Helper()
	tl := tools(t)
	clipOnce.Do(func() {
		dir, err := os.MkdirTemp("", "asset-clips-")
		if err != nil {
			clipErr = err
			return
		}
		defer os.RemoveAll(dir)
		v := filepath.Join(dir, "clip.mp4")
		if clipErr = tl.Render(context.Background(), ffmpeg.RenderSpec{Width: 160, Height: 96, FPS: 24, Duration: 1.5, Audio: true, Text: "asset"}, v); clipErr != nil {
			return
		}
		a := filepath.Join(dir, "tone.m4a")
		out, err := exec.Command("ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "sine=frequency=440:duration=1",
			"-c:a", "aac", "-b:a", "64k", a).CombinedOutput()
		if err != nil {
			clipErr = fmt.Errorf("ffmpeg m4a: %v: %s", err, out)
			return
		}
		if clipMP4, clipErr = os.ReadFile(v); clipErr != nil {
			return
		}
		clipM4A, clipErr = os.ReadFile(a)
	})
	if clipErr != nil {
		t.Fatal(clipErr)
	}
	return clipMP4, clipM4A
}

// recordingDialer dials loopback for real and records (and refuses) everything else: tests
// never send a packet beyond 127.0.0.0/8 and ::1.
type recordingDialer struct {
	mu    sync.Mutex
	addrs []string
}

func (r *recordingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	r.mu.Lock()
	r.addrs = append(r.addrs, addr)
	r.mu.Unlock()
	ap, err := netip.ParseAddrPort(addr)
	if err == nil && ap.Addr().IsLoopback() {
		var d net.Dialer
		return d.DialContext(ctx, network, addr)
	}
	return nil, errors.New("test dialer: refusing a non-loopback address")
}

func (r *recordingDialer) calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.addrs...)
}

// fixedResolver answers every name with the given addresses (none: the name does not exist).
type fixedResolver []netip.Addr

func (f fixedResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return f, nil
}

func apiCode(err error) string {
	var e interface{ CodeOrDefault() string }
	if errors.As(err, &e) {
		return e.CodeOrDefault()
	}
	return ""
}
