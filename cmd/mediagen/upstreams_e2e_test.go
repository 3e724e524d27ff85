package main

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/testkit"
)

// demoCatalogWith writes the demo catalog with an upstreams section (accounts, as YAML list
// items) and some aliases rebound from the sandbox to accounts, and checks that it loads.
func demoCatalogWith(t *testing.T, dir, accounts string, bind map[string]string) string {
	t.Helper()
	demo := string(catalog.DemoYAML())
	for alias, account := range bind {
		i := strings.Index(demo, "alias: "+alias+"\n")
		j := strings.Index(demo[max(i, 0):], "upstream: sandbox")
		if i < 0 || j < 0 {
			t.Fatal("demo catalog layout changed")
		}
		demo = demo[:i+j] + "upstream: " + account + demo[i+j+len("upstream: sandbox"):]
	}
	path := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(path, []byte("upstreams:\n"+accounts+demo), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Load(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// localUpstreamsCatalog is the demo catalog with the enhancement and speech aliases bound to
// local engines (kinds ffmpeg and espeak) instead of the sandbox.
func localUpstreamsCatalog(t *testing.T, dir string) string {
	t.Helper()
	return demoCatalogWith(t, dir, "  - name: local-enhance\n    kind: ffmpeg\n  - name: local-speech\n    kind: espeak\n",
		map[string]string{"demo-enhance-lite": "local-enhance", "demo-speech": "local-speech"})
}

// Aliases bound to the local ffmpeg and espeak engines run on them: with no test markers (a
// sandbox marker in the source URL or the text is just text) and with real measured output.
func TestLocalUpstreamsServeTheirAliasesWithoutMarkers(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "input.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 30, Duration: 2.5, Container: "mp4", Audio: true, Text: "local"}, clip); err != nil {
		t.Fatal(err)
	}
	media := httptest.NewTLSServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(media.Close)
	m := NewMain(env(nil), io.Discard, io.Discard)
	m.FetchTLS = &tls.Config{RootCAs: media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--fetch-allow", "loopback",
		"--log-level", "warn", "--catalog", localUpstreamsCatalog(t, t.TempDir())}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	e := &e2e{t: t, m: m, media: media, input: media.URL + "/input.mp4", tools: tools}
	e.key = (&assetE2E{e2e: e}).newKey("demo", 100*money.Scale)

	// ?sandbox=fail would fail a sandbox job; the ffmpeg engine fetches the URL as it is.
	id := e.create(`{"model":"demo-enhance-lite","metadata":{"video_url":"` + e.input + `?sandbox=fail","duration":2.5,"resolution_limit":240,"fps":48}}`)
	task := e.wait(id)
	if task.Status != "completed" || task.Metadata.VideoURL == "" {
		t.Fatalf("enhancement on the ffmpeg engine: %+v %+v", task, task.Error)
	}
	_, info := e.download(task.Metadata.VideoURL, "enhanced.mp4")
	if info.Height != 240 || !near(info.FPS, 48, 0.01) || !near(info.Duration, 2.5, 0.05) || !info.HasAudio {
		t.Errorf("enhanced on the ffmpeg engine: %+v", info)
	}

	// [sandbox:fail] would fail a sandbox speech; espeak speaks it.
	s := e.speech(`{"model":"demo-speech","input":"[sandbox:fail] is spoken as it is written."}`)
	if s.Duration <= 0 || s.URL == "" {
		t.Fatalf("speech on the espeak engine: %+v", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "upstreams", "local-speech")); err != nil {
		t.Errorf("the espeak account's engine directory: %v", err)
	}
}

// startRemote starts m — its environment and FetchTLS set by the caller — on a loopback address
// that is also its --public-url (a worker with a remote upstream account needs one), with its
// data directory under dir and the rest of args, and returns the test's handle on it with a
// new key of the demo tenant holding credit.
func startRemote(t *testing.T, m *Main, dir string, tools ffmpeg.Tools, credit money.Micros, args ...string) *e2e {
	t.Helper()
	addr := testkit.FreeAddr(t)
	seedSQLite(t, filepath.Join(dir, "data"), args)
	if err := m.ParseFlags(append([]string{"--listen", addr, "--public-url", "http://" + addr, "--data-dir", filepath.Join(dir, "data")}, args...)); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	e := &e2e{t: t, m: m, tools: tools}
	e.key = (&assetE2E{e2e: e}).newKey("demo", credit)
	return e
}
