package httpapi

import (
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/billing"
	"mediagen/internal/blob"
	"mediagen/internal/jobs"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/pixels/pixelstest"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/money"
	"mediagen/internal/provider"
	"mediagen/internal/provider/sandbox"
	"mediagen/internal/speech"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// countingSynth counts the calls that reach the engine, so tests can show that a replay or a
// waiting retry generates nothing.
type countingSynth struct {
	next  provider.Synthesizer
	calls atomic.Int64
}

func (c *countingSynth) Synthesize(ctx context.Context, r provider.SpeechRequest) (provider.Speech, error) {
	c.calls.Add(1)
	return c.next.Synthesize(ctx, r)
}

// mapResolver answers host names from a table; everything else does not exist.
// mapResolver answers the names in it and no others, without any network: tests never look
// a name up in the real DNS.
type mapResolver = testkit.Names

type speechEnv struct {
	*testEnv
	key    string
	keyRec store.Key
	svc    *speech.Service
	engine *countingSynth
	blobs  *blob.FS
	tools  ffmpeg.Tools
	media  *httptest.Server // HTTPS on 127.0.0.1, reached as media.example.com
	mediaM sync.Mutex
	ranges []string // Range headers the media server received
	voice  string   // the body of /voice.mp3: an ID3 tag and real speech (the sandbox measures its pitch)
}

func requireSpeechTools(t testing.TB) ffmpeg.Tools {
	t.Helper()
	tools := ffmpeg.Tools{}
	if err := tools.Check(context.Background()); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("ffmpeg, ffprobe and espeak-ng required under CI=true: %v", err)
		}
		t.Skip(err)
	}
	return tools
}

// newSpeechEnv is a server with the speech service on the real sandbox engine (espeak-ng), a
// fresh SQLite store, the test catalog, an "acme" key with startCredit, and an HTTPS media
// server on loopback that safefetch reaches as media.example.com (evil.example.com resolves
// to a private address and must never be dialled).
func newSpeechEnv(t *testing.T, opts ...func(*speech.Service)) *speechEnv {
	t.Helper()
	tools := requireSpeechTools(t)
	e := newTestEnvWith(t, testCatalog(t), nil, DefaultMaxBodyBytes)
	se := &speechEnv{testEnv: e, tools: tools}
	se.media = httptest.NewTLSServer(http.HandlerFunc(se.serveMedia))
	t.Cleanup(se.media.Close)
	roots := se.media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	fetch := loopbackFetch(t, roots, mapResolver{"media.example.com": "127.0.0.1", "evil.example.com": "10.0.0.1"})
	// The sandbox uses speech references (it measures the voice's pitch): it fetches them too.
	mp3 := filepath.Join(t.TempDir(), "voice.mp3")
	if err := tools.Speak(context.Background(), "A reference voice.", mp3, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	spoken, err := os.ReadFile(mp3)
	if err != nil {
		t.Fatal(err)
	}
	se.voice = "ID3\x04\x00\x00\x00\x00\x00\x00" + string(spoken)
	eng, err := sandbox.New(sandbox.Config{Dir: t.TempDir(), Tools: tools, Pace: -1, MaxConcurrent: 2, Fetch: fetch,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { eng.Close() })
	se.engine = &countingSynth{next: eng}
	se.blobs, err = blob.NewFS(t.TempDir(), []byte(strings.Repeat("k", 32)), "http://files.test")
	if err != nil {
		t.Fatal(err)
	}
	se.svc = &speech.Service{Store: e.store, Engines: map[string]provider.Synthesizer{"sandbox": se.engine}, Fetch: fetch,
		Blobs: se.blobs, Probe: tools, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Wait: 20 * time.Second}
	for _, o := range opts {
		o(se.svc)
	}
	startSpeechJobs(t, e.store, se.svc)
	e.srv.speech = se.svc
	se.key, se.keyRec = e.newKey("acme", startCredit, false)
	return se
}

// serveMedia is the reference media server.
func (se *speechEnv) serveMedia(w http.ResponseWriter, r *http.Request) {
	se.mediaM.Lock()
	se.ranges = append(se.ranges, r.Header.Get("Range"))
	se.mediaM.Unlock()
	id3 := se.voice
	png := string(pixelstest.PNGHeader(64, 64, 8, pixelstest.RGB)) + strings.Repeat("\x00", 2048)
	serve := func(ct, body string) {
		w.Header().Set("Content-Type", ct)
		http.ServeContent(w, r, "", time.Time{}, strings.NewReader(body))
	}
	switch r.URL.Path {
	case "/voice.mp3":
		serve("audio/mpeg", id3)
	case "/voice.bin": // generic type: the first bytes decide
		serve("application/octet-stream", id3)
	case "/face.png":
		serve("image/png", png)
	case "/bomb.png": // 16000×16000 declared: 2 GB of 16-bit RGBA once decoded
		serve("image/png", string(pixelstest.PNGHeader(16000, 16000, 16, pixelstest.RGBA))+strings.Repeat("\x00", 2048))
	case "/face.svg":
		serve("image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg" width="100000" height="100000"/>`)
	case "/page.mp3":
		serve("text/html; charset=utf-8", "<!doctype html><html><body>not audio</body></html>")
	case "/empty.mp3":
		w.Header().Set("Content-Type", "audio/mpeg")
		w.WriteHeader(http.StatusOK)
	case "/redirect.mp3":
		http.Redirect(w, r, "/voice.mp3", http.StatusFound)
	default:
		http.NotFound(w, r)
	}
}

// mediaURL is the URL of a path on the media server under its public-looking name.
func (se *speechEnv) mediaURL(path string) string {
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(se.media.URL, "https://"))
	return "https://media.example.com:" + port + path
}

func (se *speechEnv) post(key, body string) response {
	se.t.Helper()
	return se.do("POST", "/v1/audio/speech", map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}, body)
}

func (se *speechEnv) balance() store.Balance {
	se.t.Helper()
	b, err := se.store.Balance(context.Background(), se.keyRec.ID)
	if err != nil {
		se.t.Fatal(err)
	}
	return b
}

// checkUntouched asserts that nothing was recorded or reserved for the key: the balance is the
// starting credit, the reserved account never saw an entry, and no speech record is pending.
func (se *speechEnv) checkUntouched(t *testing.T) {
	t.Helper()
	if b := se.balance(); b.Available != startCredit || b.Reserved != 0 || b.Used != 0 {
		t.Errorf("balance changed: %+v", b)
	}
	entries, err := se.store.Entries(context.Background(), store.AccountID(se.keyRec.ID, store.AccountReserved))
	if err != nil || len(entries) != 0 {
		t.Errorf("reservation entries %v, %v", entries, err)
	}
	var pending store.InFlight
	err = se.store.Transact(context.Background(), func(tx store.Tx) error {
		var err error
		pending, err = tx.InFlight(context.Background(), store.InFlightSpeeches, se.keyRec.ID, se.keyRec.TenantID)
		return err
	})
	if err != nil || pending.Key != 0 {
		t.Errorf("pending speech records %+v, %v", pending, err)
	}
}

// startSpeechJobs runs the speech service's job kinds on an engine for the test, as a process
// serving the API does.
func startSpeechJobs(t *testing.T, st jobs.Store, svc *speech.Service) {
	t.Helper()
	eng := jobs.New(jobs.Config{Store: st, Logger: svc.Logger})
	for _, k := range svc.Kinds() {
		if err := eng.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := eng.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	svc.Notify = eng.Notify
	t.Cleanup(eng.Stop)
}

// speechBody is the strict shape of a 200 answer.
type speechBody struct {
	ID               string  `json:"id"`
	Object           string  `json:"object"`
	Created          int64   `json:"created"`
	Model            string  `json:"model"`
	URL              string  `json:"url"`
	URLExpiresAt     int64   `json:"url_expires_at"`
	Duration         float64 `json:"duration"`
	OriginalDuration float64 `json:"original_duration"`
	Usage            struct {
		Type             string  `json:"type"`
		Duration         float64 `json:"duration"`
		OriginalDuration float64 `json:"original_duration"`
	} `json:"usage"`
	Metadata *struct {
		ClientRequestID string `json:"client_request_id"`
	} `json:"metadata"`
}

func decodeSpeech(t *testing.T, r response) speechBody {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var b speechBody
	if err := json.Unmarshal(r.body, &b, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("speech body: %v: %s", err, r.body)
	}
	if hasJSONNull(r.body) {
		t.Errorf("speech body contains null: %s", r.body)
	}
	if !strings.HasPrefix(b.ID, "speech_") || b.Object != "audio.speech" || b.Model != "acme-speech" || b.URL == "" ||
		b.Duration <= 0 || b.OriginalDuration != b.Duration || b.Usage.Type != "seconds" ||
		b.Usage.Duration != b.Duration || b.Usage.OriginalDuration != b.OriginalDuration {
		t.Errorf("speech body %s", r.body)
	}
	if d := time.Since(time.Unix(b.Created, 0)); d < -time.Second || d > time.Minute {
		t.Errorf("created %d is not now", b.Created)
	}
	if d := time.Until(time.Unix(b.URLExpiresAt, 0)); d < 23*time.Hour || d > 25*time.Hour {
		t.Errorf("url_expires_at %d is not in about 24 h", b.URLExpiresAt)
	}
	if !strings.Contains(b.URL, "expires="+fmt.Sprint(b.URLExpiresAt)) {
		t.Errorf("url %s does not expire at url_expires_at %d", b.URL, b.URLExpiresAt)
	}
	return b
}

// errBody is the strict shape of an error answer.
type errBody struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
		Param   string `json:"param"`
	} `json:"error"`
}

func decodeErr(t *testing.T, r response, status int, typ, code, param string) errBody {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var b errBody
	if err := json.Unmarshal(r.body, &b, json.RejectUnknownMembers(true)); err != nil {
		t.Fatalf("error body: %v: %s", err, r.body)
	}
	if b.Error.Type != typ || b.Error.Code != code || b.Error.Param != param || b.Error.Message == "" {
		t.Fatalf("error %s, want type %s code %s param %q", r.body, typ, code, param)
	}
	if strings.Contains(string(r.body), ":null") || strings.Contains(string(r.body), "127.0.0.1") ||
		strings.Contains(string(r.body), "/tmp/") || (status >= 500 && strings.Contains(string(r.body), "sandbox")) {
		t.Errorf("error leaks internals: %s", r.body)
	}
	return b
}

// measuredCharge is the charge of the stored audio of a response: its measured duration in
// integer microseconds × the test catalog's speech rate (0.0002 per second).
func (se *speechEnv) measuredCharge(t *testing.T, b speechBody) (money.Micros, int64) {
	t.Helper()
	rec, err := se.store.Speech(context.Background(), b.ID)
	if err != nil {
		t.Fatal(err)
	}
	var res speech.Result
	if err := json.Unmarshal(rec.Result, &res); err != nil {
		t.Fatal(err)
	}
	path, ok := se.blobs.LocalPath(res.AudioKey)
	if !ok || !strings.Contains(b.URL, "/v1/files/"+res.AudioKey+"?") {
		t.Fatalf("stored audio %q, link %s", res.AudioKey, b.URL)
	}
	info, err := se.tools.Probe(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	if info.Container != "mp3" || !info.HasAudio {
		t.Errorf("stored audio %+v", info)
	}
	us := billing.SecondsToMicros(info.Duration)
	if b.Duration != float64(us)/1e6 {
		t.Errorf("duration %v, measured %v s (%d µs)", b.Duration, info.Duration, us)
	}
	charge, err := billing.SecondsCost(200, us)
	if err != nil {
		t.Fatal(err)
	}
	return charge, us
}

// loopbackFetch is a safefetch client for tests: names resolve only through names, TLS trusts
// roots, and a dial to anything but loopback fails the test instead of leaving the machine.
func loopbackFetch(t *testing.T, roots *x509.CertPool, names mapResolver) *safefetch.Client {
	t.Helper()
	return testkit.LoopbackFetch(t, roots, names)
}
