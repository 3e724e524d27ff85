package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/probe/probetest"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres/pgtest"
)

// The first half of a charge bounded both ways (docs/billing.md) for the local engines,
// driven through the whole service:
// random sources whose mvhd, tkhd and mdhd understate or overstate their samples by random
// amounts (or tell the truth), on every route that takes media — enhancement on the sandbox
// and on the local ffmpeg engine, production with an input video, native edit with a
// reference video — and whatever the headers say, every task is charged at most its
// reservation, no key with a credit ends below zero, no local engine's result is ever cut or
// recorded as upstream excess, and the ledger checks out; on SQLite and on PostgreSQL.
// MEDIAGEN_PROPERTY_SEED replays a run; MEDIAGEN_PROPERTY_SOURCES sets its size (requests).
func TestPropertyLocalEnginesChargeWithinTheReservationWhateverTheHeadersSay(t *testing.T) {
	t.Parallel()
	// The two stores run side by side: each run is mostly ffmpeg waiting on its own files.
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); sourcesPropertyRun(t, "") })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); sourcesPropertyRun(t, pgtest.URL(t)) })
}

// lyingSource is one generated source: what its samples play and what its headers say.
type lyingSource struct {
	name            string
	samples, header float64
}

// sourcesPropertyRun runs the property on SQLite, or on PostgreSQL at pgURL.
func sourcesPropertyRun(t *testing.T, pgURL string) {
	tools := requireTools(t)
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("MEDIAGEN_PROPERTY_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	n := 12
	if s := os.Getenv("MEDIAGEN_PROPERTY_SOURCES"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	t.Logf("seed %d (MEDIAGEN_PROPERTY_SEED=%d replays this run; MEDIAGEN_PROPERTY_SOURCES=%d sets its size)", seed, seed, n)
	rng := rand.New(rand.NewPCG(seed, 3))
	dir := t.TempDir()
	mediaDir := filepath.Join(dir, "media")
	if err := os.MkdirAll(mediaDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Short sources for enhancement and production inputs; 4–8 s ones for edit references
	// (edit mode takes 4–30 s, so a header can make one look too short or long enough).
	var short, long []lyingSource
	for i := range 6 {
		short = append(short, renderLying(t, tools, rng, mediaDir, fmt.Sprintf("s%d.mp4", i), 0.6+rng.Float64()*4))
	}
	for i := range 2 {
		long = append(long, renderLying(t, tools, rng, mediaDir, fmt.Sprintf("l%d.mp4", i), 4.2+rng.Float64()*4))
	}
	for _, s := range append(append([]lyingSource(nil), short...), long...) {
		t.Logf("source %s: samples %.3f s, headers say %.3f s", s.name, s.samples, s.header)
	}
	media := httptest.NewTLSServer(http.FileServer(http.Dir(mediaDir)))
	t.Cleanup(media.Close)

	m := NewMain(env(nil), io.Discard, io.Discard)
	m.FetchTLS = &tls.Config{RootCAs: media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	data := filepath.Join(dir, "data")
	var dbArgs []string
	if pgURL != "" {
		dbArgs = []string{"--db", pgURL}
	}
	// demo-enhance-lite runs on the local ffmpeg engine, demo-enhance on the sandbox.
	cat := localUpstreamsCatalog(t, t.TempDir())
	if err := m.ParseFlags(append([]string{"--listen", "127.0.0.1:0", "--data-dir", data, "--sandbox-pace", "0", "--catalog", cat,
		"--fetch-allow", "loopback", "--log-level", "error", "--workers", "4"}, dbArgs...)); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	type key struct{ secret, id string }
	var keys []key
	for i, credit := range []string{"50", "0.05"} {
		o := admin(t, data, append([]string{"key", "create", "--tenant", "demo", "--name", fmt.Sprintf("src-%d", i), "--catalog", cat}, dbArgs...)...)
		k := key{secret: reKey.FindString(o), id: regexp.MustCompile(`key id:\s+(key_\S+)`).FindStringSubmatch(o)[1]}
		admin(t, data, append([]string{"credit", "--key", k.id, "--amount", credit, "--catalog", cat}, dbArgs...)...)
		keys = append(keys, k)
	}

	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	url := func(s lyingSource) string { return media.URL + "/" + s.name }
	counts := map[string]int{}
	var tasks []string
	for i := range n {
		k := keys[rng.IntN(len(keys))]
		crid := fmt.Sprintf(`"client_request_id":"src-%d"`, i)
		var route, body string
		switch r := rng.IntN(8); {
		case r < 5:
			s := short[rng.IntN(len(short))]
			route = "enhancement"
			declared := pick(strconv.FormatFloat(s.header, 'f', 3, 64), "0.001", strconv.FormatFloat(s.samples+3, 'f', 3, 64))
			fps := pick("", `"fps":15,`, `"fps":24,`, `"fps":30,`, `"fps":60,`)
			body = fmt.Sprintf(`{"model":%q,"metadata":{"video_url":%q,"duration":%s,%s"resolution_limit":128,%s}}`,
				pick("demo-enhance-lite", "demo-enhance"), url(s), declared, fps, crid)
		case r < 6:
			s := short[rng.IntN(len(short))]
			route = "production"
			body = fmt.Sprintf(`{"model":"demo-production-lite","prompt":"extend @Video1","metadata":{"resolution":"1080p","duration":%s,"omni_reference_task_type":"extend","content":[{"type":"video_url","role":"reference_video","video_url":{"url":%q}}],%s}}`,
				pick("4", "5"), url(s), crid)
		default:
			s := long[rng.IntN(len(long))]
			route = "native"
			body = fmt.Sprintf(`{"model":"demo-video-2.5","prompt":"make @Video1 blue","metadata":{"resolution":"480p","omni_reference_task_type":"edit","content":[{"type":"video_url","role":"reference_video","video_url":{"url":%q}}],%s}}`,
				url(s), crid)
		}
		status, b := postAs(t, m.URL(), k.secret, "/v1/videos", body)
		counts[route+" "+strconv.Itoa(status)]++
		switch {
		case status == 202:
			var task struct {
				ID string `json:"id"`
			}
			if err := json.Unmarshal(b, &task); err != nil {
				t.Fatal(err)
			}
			tasks = append(tasks, task.ID)
		case status == 402:
		case status == 400 && route == "native" && strings.Contains(string(b), `metadata.content[0]`):
			// A reference whose samples run under 4 s is refused in edit mode.
		default:
			t.Fatalf("%s %s: %d %s", route, body, status, b)
		}
	}
	outcomes := map[string]int{}
	for _, id := range tasks {
		outcomes[waitTerminal(t, m.URL(), []string{keys[0].secret, keys[1].secret}, id)]++
	}

	db, overageRefs := openForCheck(t, data, pgURL)
	ctx := context.Background()
	if err := db.CheckLedger(ctx); err != nil {
		t.Fatalf("ledger: %v", err)
	}
	var worst float64
	for _, id := range tasks {
		rec, err := db.Task(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if rec.Charged > rec.Reserved {
			t.Errorf("task %s (%s) charged %s against a reservation of %s", id, rec.Route, rec.Charged, rec.Reserved)
		}
		if rec.Reserved > 0 {
			worst = max(worst, float64(rec.Charged)/float64(rec.Reserved))
		}
	}
	for _, k := range keys {
		b, err := db.Balance(ctx, k.id)
		if err != nil {
			t.Fatal(err)
		}
		if b.Available < 0 || b.Reserved != 0 {
			t.Errorf("key %s ends at %s available, %s reserved", k.id, b.Available, b.Reserved)
		}
	}
	if len(overageRefs) > 0 {
		t.Errorf("overage on %v", overageRefs)
	}
	excess, err := db.UpstreamExcess(ctx, store.ExcessFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range excess {
		t.Errorf("a local engine's result recorded as upstream excess: %+v", e)
	}
	t.Logf("%d requests: %v", n, counts)
	t.Logf("%d tasks ended: %v; the highest charge/reservation %.3f; overages %d; upstream excess %d",
		len(tasks), outcomes, worst, len(overageRefs), len(excess))
}

// renderLying renders a clip whose samples play a random length and rewrites its headers to
// understate or overstate that by a random amount, or leaves them honest.
func renderLying(t *testing.T, tools ffmpeg.Tools, rng *rand.Rand, dir, name string, samples float64) lyingSource {
	t.Helper()
	samples = float64(int(samples*1000)) / 1000
	fps := []int{15, 24, 30}[rng.IntN(3)]
	path := filepath.Join(dir, name)
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 32, Height: 18, FPS: fps, Duration: samples, Audio: rng.IntN(2) == 0, Container: "mp4"}, path); err != nil {
		t.Fatal(err)
	}
	info, err := tools.Probe(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	s := lyingSource{name: name, samples: info.Length(), header: info.Length()}
	switch rng.IntN(4) {
	case 0: // understated by up to 1.5 s
		s.header = max(0.05, s.samples-rng.Float64()*min(1.5, s.samples))
	case 1:
		// Understated so that header + slack lands just under a whole second: the reservation
		// rounds that up to the second, and an output running a few milliseconds past it
		// (a container past -t) is billed a whole second more. The 1.2 s source whose
		// headers say 0.75 s is one of these.
		s.header = math.Floor(s.samples+0.25) - 0.25 - rng.Float64()*0.01
		if s.header < 0.05 {
			s.header = s.samples / 2
		}
	case 2: // overstated by up to 2 s
		s.header = s.samples + rng.Float64()*2
	default:
		return s
	}
	if err := probetest.RewriteDurations(path, s.header); err != nil {
		t.Fatal(err)
	}
	return s
}
