package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/provider/openai/openaifake"
	"mediagen/internal/video"
)

// One alias routed over accounts of two kinds, each with its own model: an Ark account whose
// key is refused (401) and an OpenAI-compatible one. A task the Ark account refuses falls back
// to the OpenAI account and is created there as the OpenAI account's model, never Ark's; a
// request only Ark can do (480p) is accepted for Ark alone and never reaches the OpenAI
// account; each task makes one paid job and is charged what was measured.
func TestRouteAcrossKindsSendsEachAccountItsModel(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 4, Container: "mp4", Audio: true, Text: "kinds"}, clip); err != nil {
		t.Fatal(err)
	}
	arkF := arkfake.Start(arkfake.Config{Key: "another-key", Clip: clip, Tokens: 1})
	oaiF := openaifake.Start(openaifake.Config{Key: openaiTestKey, Clip: clip, Polls: 1})
	t.Cleanup(arkF.Close)
	t.Cleanup(oaiF.Close)
	roots := x509.NewCertPool()
	roots.AddCert(arkF.Certificate())
	roots.AddCert(oaiF.Certificate())
	accounts := "  - name: ark-broken\n    kind: ark\n    base_url: " + arkF.Base() + "\n    api_key_env: ARK_TEST_KEY\n" +
		"  - name: openai-main\n    kind: openai\n    base_url: " + oaiF.Base() + "\n    api_key_env: OPENAI_TEST_KEY\n"
	path := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{"demo-video-standard": "ark-broken"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	routed := strings.Replace(string(b), "upstream: ark-broken\n        model: sandbox-video-standard-2.0\n",
		"upstreams: [ark-broken, {name: openai-main, model: sora-2}]\n        model: seedance-1-0-pro\n", 1)
	if routed == string(b) {
		t.Fatal("demo catalog layout changed")
	}
	if err := os.WriteFile(path, []byte(routed), 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewMain(env(map[string]string{"ARK_TEST_KEY": arkTestKey, "OPENAI_TEST_KEY": openaiTestKey}), io.Discard, io.Discard)
	m.FetchTLS = &tls.Config{RootCAs: roots}
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--log-level", "warn", "--catalog", path)

	task := e.wait(e.create(`{"model":"demo-video-standard","prompt":"two kinds","metadata":{"ratio":"16:9","duration":4}}`))
	if task.Status != "completed" || task.Usage == nil {
		t.Fatalf("the routed task ended %s %+v", task.Status, task.Error)
	}
	forms := oaiF.Forms()
	if len(forms) != 1 || forms[0]["model"] != "sora-2" {
		t.Errorf("the OpenAI account's creates %v, want one as its model sora-2", forms)
	}
	if arkF.Refused() == 0 || arkF.Jobs() != 0 || oaiF.Creates() != 1 {
		t.Errorf("Ark refused %d creates and made %d jobs, OpenAI had %d creates: want a refusal, then one job on OpenAI",
			arkF.Refused(), arkF.Jobs(), oaiF.Creates())
	}
	tenant, _ := m.cat().Tenant("demo")
	want, _ := billing.TokenCost(rate(tenant.Rates.NativeRate("demo-video-standard")), task.Usage.CompletionTokens)
	if got := e.used(); got != want {
		t.Errorf("charged %s, want %s", got, want)
	}

	// 480p is Ark's only: the task is given Ark alone, as Ark's model (its key is refused, so
	// it waits), and the OpenAI account, which would refuse it, is not among its accounts.
	var stored video.Stored
	if err := storedOf(e, e.create(`{"model":"demo-video-standard","prompt":"ark only","metadata":{"ratio":"16:9","duration":4,"resolution":"480p"}}`), &stored); err != nil {
		t.Fatal(err)
	}
	if stored.Upstream != "ark-broken" || stored.Model != "seedance-1-0-pro" || len(stored.Upstreams) != 0 {
		t.Errorf("the Ark-only task is bound to %s as %s over %v; want ark-broken alone as seedance-1-0-pro", stored.Upstream, stored.Model, stored.Upstreams)
	}
	for _, v := range append(arkF.Violations(), oaiF.Violations()...) {
		t.Errorf("wire format: %s", v)
	}
}

// storedOf reads a task's stored request (its accounts and models) from the store.
func storedOf(e *e2e, id string, stored *video.Stored) error {
	e.t.Helper()
	r, err := e.m.db.TaskRun(context.Background(), id)
	if err != nil {
		return err
	}
	return json.Unmarshal(r.Request, stored)
}
