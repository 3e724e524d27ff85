package asset

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"mediagen/internal/blob"
	"mediagen/internal/media/pixels/pixelstest"
	"mediagen/internal/media/safefetch"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// The whole lifecycle over real HTTPS on loopback: create answers at once with Processing;
// the background copy makes real images and videos Active with what was measured from the
// stored copy; mismatched types, unreadable media and unusable sources end Failed with a code
// and a reason.
func TestProcessingLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	mp4, m4a := clips(t)
	g := e.virtualGroup(acme)
	pngURL := e.write("cat.png", pngBytes(t, 64, 48))
	jpgURL := e.write("dog.jpg", jpegBytes(t, 40, 30))
	mp4URL := e.write("clip.mp4", mp4)
	m4aURL := e.write("tone.m4a", m4a)
	txtURL := e.write("notes.txt", []byte("just some text, not media at all\n"))
	gifURL := e.write("anim.gif", []byte("GIF89a\x01\x00\x01\x00\x00\x00\x00;"))
	badPNG := e.write("broken.png", append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 40)...))
	var bomb bytes.Buffer // 746 KB that a decoder would make 768 MB of
	if err := pixelstest.WritePNG(&bomb, 16000, 16000, 8, pixelstest.RGB); err != nil {
		t.Fatal(err)
	}
	bombURL := e.write("black.png", bomb.Bytes())
	bomb16URL := e.write("black16.png", pixelstest.PNGHeader(5000, 4000, 16, pixelstest.RGBA))
	// The clip with its track header rewritten to 16000×16000 (tkhd version 0: width and
	// height, 16.16 fixed point, end its 84-byte payload).
	big := append([]byte{}, mp4...)
	if at := bytes.Index(big, []byte("tkhd")); at < 0 || big[at+4] != 0 {
		t.Fatal("no version 0 tkhd in the clip")
	} else {
		binary.BigEndian.PutUint32(big[at+80:], 16000<<16)
		binary.BigEndian.PutUint32(big[at+84:], 16000<<16)
	}
	bigURL := e.write("big.mp4", big)

	cases := []struct {
		name, url, typ  string
		status, code    string
		w, h            float64
		duration        float64 // 0: none shown
		reasonFragments []string
	}{
		{name: "png image", url: pngURL, typ: "Image", status: "Active", w: 64, h: 48},
		{name: "jpeg image", url: jpgURL, typ: "Image", status: "Active", w: 40, h: 30},
		{name: "mp4 video measured", url: mp4URL, typ: "Video", status: "Active", w: 160, h: 96, duration: 1.5},
		{name: "m4a audio", url: m4aURL, typ: "Audio", status: "Active", duration: 1},
		{name: "image declared as video", url: pngURL, typ: "Video", status: "Failed", code: FailTypeMismatch, reasonFragments: []string{"AssetType is Video", "image (PNG)"}},
		{name: "video declared as image", url: mp4URL, typ: "Image", status: "Failed", code: FailTypeMismatch, reasonFragments: []string{"a video (MP4)"}},
		{name: "video declared as audio", url: mp4URL, typ: "Audio", status: "Failed", code: FailTypeMismatch},
		{name: "audio-only mp4 family declared as video", url: m4aURL, typ: "Video", status: "Failed", code: FailTypeMismatch, reasonFragments: []string{"an audio file"}},
		{name: "text is no media", url: txtURL, typ: "Image", status: "Failed", code: FailUnsupportedMedia},
		{name: "gif not taken", url: gifURL, typ: "Image", status: "Failed", code: FailUnsupportedMedia, reasonFragments: []string{"GIF"}},
		{name: "png over the pixel budget", url: bombURL, typ: "Image", status: "Failed", code: FailTooManyPixels,
			reasonFragments: []string{"16000×16000 pixels", "16,777,216 pixels"}},
		{name: "16-bit png header over the pixel budget", url: bomb16URL, typ: "Image", status: "Failed", code: FailTooManyPixels,
			reasonFragments: []string{"5000×4000 pixels", "16,777,216 pixels"}},
		{name: "video frame over the pixel budget", url: bigURL, typ: "Video", status: "Failed", code: FailTooManyPixels,
			reasonFragments: []string{"16000×16000 pixels", "35,389,440 pixels"}},
		{name: "corrupt png", url: badPNG, typ: "Image", status: "Failed", code: FailUnreadable},
		{name: "missing file", url: e.url("nope.png"), typ: "Image", status: "Failed", code: FailSourceUnreachable, reasonFragments: []string{"error status"}},
		{name: "server error", url: e.url("status/503"), typ: "Image", status: "Failed", code: FailSourceUnreachable},
		{name: "unreachable port", url: "https://127.0.0.1:" + closedPort(t) + "/a.png", typ: "Image", status: "Failed", code: FailSourceUnreachable, reasonFragments: []string{"could not be reached"}},
	}
	ids := make([]string, len(cases))
	start := time.Now()
	for i, c := range cases {
		ids[i] = e.createAsset(acme, g, c.url, c.typ)
	}
	if time.Since(start) > 5*time.Second {
		t.Errorf("creates took %v: they must not wait for the fetch", time.Since(start))
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m := e.wait(acme, ids[i])
			if m["Status"] != c.status {
				t.Fatalf("status %v (%v: %v), want %s", m["Status"], m["FailureCode"], m["FailureReason"], c.status)
			}
			if c.status == "Active" {
				u, _ := m["URL"].(string)
				if !strings.HasPrefix(u, "http://127.0.0.1:9/v1/files/assets/"+ids[i]+"/") || strings.Contains(u, e.media.URL) {
					t.Errorf("URL %q is not a signed link to the stored copy", u)
				}
				if m["URLExpiresAt"] == nil || m["FailureCode"] != nil {
					t.Errorf("active view %v", m)
				}
				if c.w > 0 && (m["Width"] != c.w || m["Height"] != c.h) {
					t.Errorf("size %vx%v, want %vx%v", m["Width"], m["Height"], c.w, c.h)
				}
				d, _ := m["Duration"].(float64)
				if c.duration == 0 && d != 0 || c.duration > 0 && (d < c.duration-0.1 || d > c.duration+0.1) {
					t.Errorf("duration %v, want about %v", d, c.duration)
				}
				return
			}
			if m["FailureCode"] != c.code {
				t.Errorf("failure %v: %v, want %s", m["FailureCode"], m["FailureReason"], c.code)
			}
			reason, _ := m["FailureReason"].(string)
			for _, f := range c.reasonFragments {
				if !strings.Contains(reason, f) {
					t.Errorf("reason %q lacks %q", reason, f)
				}
			}
			if m["URL"] != nil || m["Duration"] != nil {
				t.Errorf("failed asset shows media fields: %v", m)
			}
		})
	}

	// The stored copy is the service's own: the image reads back byte for byte, and the
	// measured video duration is what the probe found in the copy.
	a, err := e.db.Asset(context.Background(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	obj, err := e.blobs.Open(context.Background(), a.BlobKey)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(obj)
	obj.Close()
	if string(got) != string(pngBytes(t, 64, 48)) || a.ContentType != "image/png" || a.Bytes != int64(len(got)) {
		t.Errorf("stored copy: %d bytes, %s", len(got), a.ContentType)
	}
	// Failed assets keep no copy.
	for i, c := range cases {
		if c.status == "Failed" {
			if a, _ := e.db.Asset(context.Background(), ids[i]); a.BlobKey != "" {
				t.Errorf("%s: failed asset keeps %s", c.name, a.BlobKey)
			}
		}
	}
}

func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ln.Close()
	return port
}

// Under the default policy (no loopback, public addresses only) a source whose name resolves
// to a private address is refused at dial time and the asset Fails; nothing beyond loopback is
// ever dialled. Literal loopback and private addresses are refused at creation already.
func TestForbiddenAddressFailsWithoutDialling(t *testing.T) {
	t.Parallel()
	dialer := &recordingDialer{}
	e := newEnv(t, envOpts{fetch: &safefetch.Options{
		Resolver:    fixedResolver{netip.MustParseAddr("10.0.0.7")},
		DialContext: dialer.dial,
	}})
	g := e.virtualGroup(acme)
	id := e.createAsset(acme, g, "https://media.example.com/cat.png", "Image")
	m := e.wait(acme, id)
	if m["Status"] != "Failed" || m["FailureCode"] != FailSourceForbidden {
		t.Fatalf("got %v", m)
	}
	if calls := dialer.calls(); len(calls) != 0 {
		t.Errorf("dialled %v", calls)
	}
	for _, u := range []string{"https://127.0.0.1/a.png", "https://10.1.2.3/a.png", "https://localhost/a.png", "https://[::1]/a.png"} {
		_, err := e.op(acme, VirtualPrefix+"/assets/create", `{"GroupId":"`+g+`","URL":"`+u+`","AssetType":"Image"}`)
		if apiCode(err) != CodeInvalidSourceURL {
			t.Errorf("%s: %v", u, err)
		}
	}
	if calls := dialer.calls(); len(calls) != 0 {
		t.Errorf("dialled %v", calls)
	}
}

// A source over the size cap fails with source_too_large, whether the server announces the
// length or not.
func TestSourceTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{mutate: func(c *Config) { c.MaxImageBytes = 1000 }})
	g := e.virtualGroup(acme)
	big := pngBytes(t, 200, 200)
	if len(big) <= 1000 {
		t.Fatalf("test image of %d bytes is not over the cap", len(big))
	}
	id := e.createAsset(acme, g, e.write("big.png", big), "Image")
	if m := e.wait(acme, id); m["FailureCode"] != FailSourceTooLarge {
		t.Fatalf("got %v", m)
	}
}

// A process that died mid-fetch leaves its lease; once it expires the asset is taken over and
// completed. After MaxAttempts interrupted attempts it is Failed instead of staying Processing.
func TestStaleProcessingIsTakenOverOrFailed(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{noRun: true, mutate: func(c *Config) { c.MaxAttempts = 2 }})
	ctx := t.Context()
	g := e.virtualGroup(acme)
	url := e.write("cat.png", pngBytes(t, 8, 8))
	doomed := e.createAsset(acme, g, url, "Image")
	// Dead processors: two claims whose short leases ran out ...
	for i := 0; i < 2; i++ {
		if c, err := e.db.ClaimJobs(ctx, IngestKind, "", time.Now(), time.Millisecond, 10, nil); err != nil || len(c) != 1 {
			t.Fatalf("dead claim %d: %v %v", i, c, err)
		}
		time.Sleep(5 * time.Millisecond) // fixed: past the dead claim's 1 ms lease
	}
	// ... and one more, holding both assets for a minute. It dies after storing its copy of
	// the recovered asset and before recording it: the copy must not outlive the takeover.
	recovered := e.createAsset(acme, g, url, "Image")
	if c, _ := e.db.ClaimJobs(ctx, IngestKind, "", time.Now(), time.Minute, 10, nil); len(c) != 2 {
		t.Fatalf("third dead claim: %v", c)
	}
	orphan := KeyPrefix + recovered + "/dead.png"
	if _, err := e.blobs.Put(ctx, orphan, strings.NewReader("half a cat")); err != nil {
		t.Fatal(err)
	}
	e.start()
	time.Sleep(200 * time.Millisecond) // fixed: a negative check, nothing is processed while the leases hold
	for _, id := range []string{doomed, recovered} {
		if m := e.must(acme, VirtualPrefix+"/assets/get", `{"Id":"`+id+`"}`); m["Status"] != "Processing" {
			t.Fatalf("leased asset processed early: %v", m)
		}
	}
	e.clock.Advance(2 * time.Minute) // the dead leases expire
	e.jobs.Notify(IngestKind)
	if m := e.wait(acme, recovered); m["Status"] != "Active" {
		t.Fatalf("recovered: %v", m)
	}
	if m := e.wait(acme, doomed); m["Status"] != "Failed" || m["FailureCode"] != FailInterrupted {
		t.Fatalf("doomed: %v", m)
	}
	a, _ := e.db.Asset(ctx, recovered)
	if a.Attempts != 2 {
		t.Errorf("recovered after %d attempts, want 2", a.Attempts)
	}
	if _, err := e.blobs.Stat(ctx, orphan); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("the dead attempt's copy is still stored: %v", err)
	}
	if _, err := e.blobs.Stat(ctx, a.BlobKey); err != nil {
		t.Errorf("the recovered copy %s: %v", a.BlobKey, err)
	}
}

// Stop hands an asset being fetched back, uncounted, for the next start.
func TestStopReleasesAssetInFlight(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	ctx := t.Context()
	g := e.virtualGroup(acme)
	id := e.createAsset(acme, g, e.url("slow"), "Image")
	testkit.WaitFor(t, 10*time.Second, "never claimed", func() bool {
		a, _ := e.db.Asset(ctx, id)
		return a.Attempts == 1
	})
	time.Sleep(100 * time.Millisecond) // fixed: the fetch stays in flight a while before Stop
	e.jobs.Stop()
	a, _ := e.db.Asset(ctx, id)
	if a.Status != store.AssetProcessing || a.Attempts != 0 {
		t.Fatalf("after stop: %+v", a)
	}
	if c, _ := e.db.ClaimJobs(ctx, IngestKind, "", time.Now(), time.Minute, 10, nil); len(c) != 1 {
		t.Fatalf("released asset not claimable: %v", c)
	}
}

// Deleting an asset while it is processed leaves no copy behind.
func TestDeleteDuringProcessing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOpts{})
	g := e.virtualGroup(acme)
	id := e.createAsset(acme, g, e.url("slow"), "Image")
	testkit.WaitFor(t, 10*time.Second, "the asset was never claimed", func() bool {
		a, _ := e.db.Asset(t.Context(), id)
		return a.Attempts == 1
	})
	e.must(acme, VirtualPrefix+"/assets/delete", `{"Id":"`+id+`"}`)
	if _, err := e.op(acme, VirtualPrefix+"/assets/get", `{"Id":"`+id+`"}`); apiCode(err) != CodeAssetNotFound {
		t.Fatalf("deleted asset: %v", err)
	}
}

// A source that fails for now is tried again with backoff, keeping the asset Processing;
// one that fails for good is not retried; retries stop after MaxAttempts.
func TestTransientSourceFailuresAreRetried(t *testing.T) {
	t.Parallel()
	png := pngBytes(t, 8, 6)
	var mu sync.Mutex
	hits := map[string]int{}
	src := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		hits[r.URL.Path]++
		n := hits[r.URL.Path]
		mu.Unlock()
		switch {
		case r.URL.Path == "/flaky.png" && n == 1:
			w.WriteHeader(http.StatusServiceUnavailable)
		case r.URL.Path == "/flaky.png" && n == 2:
			w.WriteHeader(http.StatusTooManyRequests)
		case r.URL.Path == "/flaky.png":
			w.Header().Set("Content-Type", "image/png")
			_, _ = w.Write(png)
		case r.URL.Path == "/down.png":
			w.WriteHeader(http.StatusBadGateway)
		default:
			http.NotFound(w, r)
		}
	}))
	defer src.Close()
	e := newEnv(t, envOpts{})
	g := e.virtualGroup(acme)

	cases := []struct {
		path, status, code string
		tries              int
	}{
		{"/flaky.png", "Active", "", 3},                                    // 503, 429, then the image
		{"/down.png", "Failed", FailSourceUnreachable, DefaultMaxAttempts}, // 502 every time
		{"/gone.png", "Failed", FailSourceUnreachable, 1},                  // 404 is final
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			id := e.createAsset(acme, g, src.URL+c.path, "Image")
			got := e.wait(acme, id)
			if got["Status"] != c.status || (c.code != "" && got["FailureCode"] != c.code) {
				t.Fatalf("asset ended %v", got)
			}
			mu.Lock()
			n := hits[c.path]
			mu.Unlock()
			if n != c.tries {
				t.Errorf("source fetched %d times, want %d", n, c.tries)
			}
		})
	}
}
