package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"image"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/idgen"
	"mediagen/internal/keys"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/store"
	"mediagen/internal/testkit"
)

// assetE2E is the running service with a two-tenant catalog (the demo tenant, with an
// operator-granted virtual group, and a "rival" copy of it), a key of each, and the loopback
// HTTPS media server of startE2E's kind.
type assetE2E struct {
	*e2e
	rival   string // the rival tenant's key
	catPath string
	env     map[string]string
}

const grantedGroup = "demo-brand"

// twoTenantCatalog is the demo catalog plus a copy of its tenant as "rival"; the demo tenant
// gets an operator-granted virtual group.
func twoTenantCatalog(t *testing.T, dir string) string {
	t.Helper()
	demo := string(catalog.DemoYAML())
	i := strings.Index(demo, "  - id: demo\n")
	if i < 0 {
		t.Fatal("demo catalog layout changed")
	}
	block := demo[i:]
	rival := strings.Replace(strings.Replace(block, "  - id: demo\n", "  - id: rival\n", 1), "name: Demo tenant", "name: Rival Studio", 1)
	withGroup := strings.Replace(block, "    currency: USD\n", "    currency: USD\n    virtual_groups:\n      - {id: "+grantedGroup+", name: Brand assets, description: Granted by the operator}\n", 1)
	path := filepath.Join(dir, "catalog.yaml")
	if err := os.WriteFile(path, []byte(demo[:i]+withGroup+rival), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.Load(path); err != nil {
		t.Fatal(err)
	}
	return path
}

// startAssetE2E runs serve like startE2E, with the two-tenant catalog and the given
// environment.
func startAssetE2E(t *testing.T, envVars map[string]string, extra ...string) *assetE2E {
	t.Helper()
	return startAssetE2EOn(t, NewMain(env(envVars), io.Discard, io.Discard), envVars, extra...)
}

// startAssetE2EOn is startAssetE2E with a Main the caller made (to set its clock).
func startAssetE2EOn(t *testing.T, m *Main, envVars map[string]string, extra ...string) *assetE2E {
	t.Helper()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "input.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 30, Duration: 2.5, Container: "mp4", Audio: true, Text: "asset clip"}, clip); err != nil {
		t.Fatal(err)
	}
	media := httptest.NewTLSServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(media.Close)
	catPath := twoTenantCatalog(t, t.TempDir())
	m.FetchTLS = &tls.Config{RootCAs: media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	args := append([]string{"--listen", "127.0.0.1:0", "--data-dir", filepath.Join(dir, "data"), "--sandbox-pace", "200ms",
		"--fetch-allow", "loopback", "--log-level", "warn", "--catalog", catPath}, extra...)
	seedSQLite(t, filepath.Join(dir, "data"), args)
	if err := m.ParseFlags(args); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	e := &assetE2E{e2e: &e2e{t: t, m: m, media: media, input: media.URL + "/input.mp4", tools: tools}, catPath: catPath, env: envVars}
	e.cat, _ = catalog.Load(catPath)
	e.key = e.newKey("demo", 100*money.Scale)
	e.rival = e.newKey("rival", 100*money.Scale)
	return e
}

func (e *assetE2E) newKey(tenant string, credit money.Micros) string {
	e.t.Helper()
	secret, display, hash := keys.Generate()
	k := store.Key{ID: idgen.New("key"), TenantID: tenant, Name: "e2e", Prefix: display, Hash: hash, CreatedAt: time.Now().UTC()}
	ctx := context.Background()
	err := e.m.db.Transact(ctx, func(tx store.Tx) error {
		if err := tx.CreateKey(ctx, k, "USD"); err != nil {
			return err
		}
		_, err := billing.Credit(ctx, tx, k, "USD", credit, "e2e", time.Now().UTC())
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return secret
}

// post calls an asset endpoint with key and demands the status.
func (e *assetE2E) post(key, path, body string, status int) map[string]any {
	e.t.Helper()
	req, _ := http.NewRequest("POST", e.m.URL()+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != status {
		e.t.Fatalf("%s %s: %d %s", path, body, res.StatusCode, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		e.t.Fatalf("%s: %v: %s", path, err, b)
	}
	return m
}

func (e *assetE2E) register(key, group, url, typ string) string {
	e.t.Helper()
	return e.post(key, "/v1/vidgen/virtual/assets/create", fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":%q}`, group, url, typ), 202)["Id"].(string)
}

func (e *assetE2E) poll(key, id string) map[string]any {
	e.t.Helper()
	var a map[string]any
	testkit.WaitEvery(e.t, 100*time.Millisecond, 60*time.Second, fmt.Sprintf("asset %s still Processing", id), func() bool {
		a = e.post(key, "/v1/vidgen/virtual/assets/get", `{"Id":"`+id+`"}`, 200)
		return a["Status"] != "Processing"
	})
	return a
}

func (e *assetE2E) writeMedia(name string, b []byte) string {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.mediaDir(), name), b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.media.URL + "/" + name
}

func pngOf(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewNRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i*7 + i/5)
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Native and production tasks that reference asset:// images and videos complete on the
// sandbox; the production charge counts the asset video's seconds as measured by the service
// from its stored copy; someone else's asset, a Failed asset and the wrong asset type are
// rejected at submission with nothing charged.
func TestEndToEndAssetsInVideoRequests(t *testing.T) {
	t.Parallel()
	e := startAssetE2E(t, nil)
	demo, _ := e.cat.Tenant("demo")
	rates := demo.Rates

	// The catalog's group is granted to the demo tenant only.
	g := e.post(e.key, "/v1/vidgen/virtual/asset-groups/get", `{"Id":"`+grantedGroup+`"}`, 200)
	if g["Origin"] != "Operator" || g["Status"] != "Active" {
		t.Fatalf("granted group %v", g)
	}
	e.post(e.rival, "/v1/vidgen/virtual/asset-groups/get", `{"Id":"`+grantedGroup+`"}`, 404)

	img := e.register(e.key, grantedGroup, e.writeMedia("frame.png", pngOf(t, 96, 64)), "Image")
	vid := e.register(e.key, grantedGroup, e.input, "Video")
	broken := e.register(e.key, grantedGroup, e.writeMedia("readme.txt", []byte("not a picture")), "Image")
	rivalGroup := e.post(e.rival, "/v1/vidgen/virtual/asset-groups/create", `{"Name":"rival"}`, 200)["Id"].(string)
	rivalImg := e.register(e.rival, rivalGroup, e.writeMedia("rival.png", pngOf(t, 8, 8)), "Image")

	if a := e.poll(e.key, img); a["Status"] != "Active" || a["Width"] != 96.0 {
		t.Fatalf("image %v", a)
	}
	va := e.poll(e.key, vid)
	if va["Status"] != "Active" {
		t.Fatalf("video %v", va)
	}
	if res, err := http.Get(e.m.URL() + "/metrics"); err == nil {
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if !strings.Contains(string(b), `mediagen_assets_processed_total{code="",status="Active",type="Video"} 1`) {
			t.Errorf("asset processing metric missing from /metrics")
		}
	}
	clip, err := e.tools.Probe(context.Background(), filepath.Join(e.mediaDir(), "input.mp4"))
	if err != nil {
		t.Fatal(err)
	}
	measured := va["Duration"].(float64)
	if !near(measured, clip.Duration, 0.05) || va["Width"] != 320.0 || va["Height"] != 180.0 {
		t.Fatalf("video measured %v s (%vx%v), ffprobe says %v s", measured, va["Width"], va["Height"], clip.Duration)
	}
	if a := e.poll(e.key, broken); a["Status"] != "Failed" || a["FailureCode"] != "unsupported_media" {
		t.Fatalf("broken %v", a)
	}
	e.poll(e.rival, rivalImg)

	// Rejections at submission: no task, no charge.
	before, _ := e.balance()
	rejected := []struct{ name, body, want string }{
		{"another tenant's asset", `{"model":"demo-video-2.5","prompt":"@Image1","metadata":{"resolution":"480p","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"asset://` + rivalImg + `"}}]}}`, "was not found"},
		{"a Failed asset", `{"model":"demo-video-2.5","prompt":"@Image1","metadata":{"resolution":"480p","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"asset://` + broken + `"}}]}}`, "not Active"},
		{"an image as the production video", `{"model":"demo-production-lite","prompt":"extend","metadata":{"resolution":"1080p","omni_reference_task_type":"extend","content":[{"type":"video_url","role":"reference_video","video_url":{"url":"asset://` + img + `"}}]}}`, "needs a Video asset"},
		{"a video as a first frame", `{"model":"demo-video-2.5","metadata":{"resolution":"480p","content":[{"type":"image_url","role":"first_frame","image_url":{"url":"asset://` + vid + `"}}]}}`, "needs a Image asset"},
		{"an unknown asset", `{"model":"demo-video-2.5","prompt":"@Image1","metadata":{"resolution":"480p","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"asset://asset_doesnotexist00000000"}}]}}`, "was not found"},
	}
	for _, c := range rejected {
		status, b := e.call("POST", "/v1/videos", c.body)
		if status != 400 || !strings.Contains(string(b), c.want) || !strings.Contains(string(b), `"param":"metadata.content[0]`) {
			t.Errorf("%s: %d %s", c.name, status, b)
		}
	}
	// The rival cannot use the demo tenant's asset either.
	e.key, e.rival = e.rival, e.key
	status, b := e.call("POST", "/v1/videos", `{"model":"demo-video-2.5","prompt":"@Image1","metadata":{"resolution":"480p","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"asset://`+img+`"}}]}}`)
	e.key, e.rival = e.rival, e.key
	if status != 400 || !strings.Contains(string(b), "was not found") {
		t.Errorf("rival used the demo asset: %d %s", status, b)
	}
	if after, _ := e.balance(); after != before {
		t.Fatalf("rejections moved money: %s → %s", before, after)
	}

	// A native task with an asset image as its first frame and a production task extending the
	// asset video.
	native := e.create(`{"model":"demo-video-2.5","prompt":"@Image1 comes alive","metadata":{"resolution":"480p","duration":4,"ratio":"adaptive","content":[{"type":"image_url","role":"first_frame","image_url":{"url":"asset://` + img + `"}}]}}`)
	prod := e.create(`{"model":"demo-production-lite","prompt":"extend @Video1","metadata":{"resolution":"1080p","duration":4,"omni_reference_task_type":"extend","content":[{"type":"video_url","role":"reference_video","video_url":{"url":"asset://` + vid + `"}},{"type":"image_url","role":"reference_image","image_url":{"url":"asset://` + img + `"}}]}}`)

	nt := e.wait(native)
	if nt.Status != "completed" || nt.Usage == nil {
		t.Fatalf("native: %+v %+v", nt, nt.Error)
	}
	_, ninfo := e.download(nt.Metadata.URL, "native.mp4")
	if ninfo.Height != 480 || !near(ninfo.Duration, 4, 0.05) {
		t.Errorf("native measured %+v", ninfo)
	}
	nCharge, _ := billing.TokenCost(rate(rates.NativeRate("demo-video-2.5")), nt.Usage.CompletionTokens)

	pt := e.wait(prod)
	if pt.Status != "completed" {
		t.Fatalf("production: %+v %+v", pt, pt.Error)
	}
	_, pinfo := e.download(pt.Metadata.URL, "production.mp4")
	if pinfo.Height != 1080 {
		t.Errorf("production measured %+v", pinfo)
	}
	q := billing.Quote{Route: "production", Rate: rate(rates.ProductionRate("lite", "1080p", true)),
		InputMicros: []int64{billing.SecondsToMicros(measured)}}
	pCharge, _ := billing.SettleAmount(q, billing.Measured{OutputSeconds: pinfo.Duration})
	withoutInput, _ := billing.SettleAmount(billing.Quote{Route: "production", Rate: rate(rates.ProductionRate("lite", "1080p", true))},
		billing.Measured{OutputSeconds: pinfo.Duration})
	if pCharge <= withoutInput {
		t.Fatalf("test bug: the input seconds add nothing (%s vs %s)", pCharge, withoutInput)
	}
	available, used := e.balance()
	total := nCharge + pCharge
	if want := 100*money.Scale - total; available != want.String() || used != total.String() {
		t.Fatalf("balance available %s used %s; want %s and %s (native %s + production %s with %.3f s of asset video)",
			available, used, want, total, nCharge, pCharge, measured)
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Fatal(err)
	}

	// The operator revokes a tenant group: its assets can no longer be used, nor added to it.
	own := e.post(e.key, "/v1/vidgen/virtual/asset-groups/create", `{"Name":"own"}`, 200)["Id"].(string)
	ownImg := e.register(e.key, own, e.writeMedia("own.png", pngOf(t, 16, 16)), "Image")
	e.poll(e.key, ownImg)
	var out bytes.Buffer
	admin := func(args ...string) error {
		out.Reset()
		return runAdmin(context.Background(), append(args, "--data-dir", e.m.Config.DataDir, "--catalog", e.catPath), env(nil), &out, io.Discard)
	}
	if err := admin("asset-group", "revoke", own); err != nil || !strings.Contains(out.String(), "revoked") {
		t.Fatalf("revoke: %v %s", err, out.String())
	}
	status, b = e.call("POST", "/v1/videos", `{"model":"demo-video-2.5","prompt":"@Image1","metadata":{"resolution":"480p","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"asset://`+ownImg+`"}}]}}`)
	if status != 403 || !strings.Contains(string(b), "asset_group_not_authorized") || !strings.Contains(string(b), `"param":"metadata.content[0].image_url.url"`) {
		t.Errorf("revoked group's asset: %d %s", status, b)
	}
	e.post(e.key, "/v1/vidgen/virtual/assets/create", `{"GroupId":"`+own+`","URL":"`+e.media.URL+`/own.png","AssetType":"Image"}`, 403)
	if err := admin("asset-group", "grant", "--tenant", "demo", "--id", own); err != nil || !strings.Contains(out.String(), "authorized again") {
		t.Fatalf("grant: %v %s", err, out.String())
	}
	e.register(e.key, own, e.media.URL+"/own.png", "Image")
	if err := admin("asset-group", "grant", "--tenant", "rival", "--name", "Stock footage"); err != nil || !strings.Contains(out.String(), "granted") {
		t.Fatalf("grant new: %v %s", err, out.String())
	}
	if err := admin("asset-group", "list", "--tenant", "rival"); err != nil || !strings.Contains(out.String(), "Stock footage") || !strings.Contains(out.String(), "operator") {
		t.Fatalf("list: %v %s", err, out.String())
	}
	if l := e.post(e.rival, "/v1/vidgen/virtual/asset-groups/list", `{}`, 200); l["TotalCount"] != 2.0 {
		t.Errorf("rival groups %v", l)
	}
	if err := admin("asset-group", "revoke", grantedGroup); err == nil || !strings.Contains(err.Error(), "catalog") {
		t.Errorf("revoking a catalog group: %v", err)
	}
}

// The default fetch policy refuses loopback sources at creation.
func TestEndToEndAssetSourcePolicy(t *testing.T) {
	t.Parallel()
	e := startAssetE2E(t, nil, "--fetch-allow", "")
	g := e.post(e.key, "/v1/vidgen/virtual/asset-groups/create", `{"Name":"g"}`, 200)["Id"].(string)
	r := e.post(e.key, "/v1/vidgen/virtual/assets/create", `{"GroupId":"`+g+`","URL":"`+e.input+`","AssetType":"Video"}`, 400)
	if r["error"].(map[string]any)["code"] != "invalid_source_url" {
		t.Fatalf("loopback source: %v", r)
	}
}

// An asset whose fetch is cut by a shutdown is handed back and completed by the next start
// of the service on the same data: it never stays Processing.
func TestEndToEndAssetSurvivesRestart(t *testing.T) {
	t.Parallel()
	requireTools(t)
	dir := t.TempDir()
	var gate atomic.Bool
	gate.Store(true)
	held := make(chan struct{}, 8)
	data := pngOf(t, 20, 10)
	media := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gate.Load() {
			held <- struct{}{}
			<-r.Context().Done() // hangs until the fetcher gives up
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(data)
	}))
	t.Cleanup(media.Close)
	start := func() *Main {
		m := NewMain(env(nil), io.Discard, io.Discard)
		m.FetchTLS = &tls.Config{RootCAs: media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
		if err := m.ParseFlags([]string{"--listen", "127.0.0.1:0", "--data-dir", dir, "--fetch-allow", "loopback", "--log-level", "error"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := start()
	e := &assetE2E{e2e: &e2e{t: t, m: m, key: m.DemoKey}}
	g := e.post(e.key, "/v1/vidgen/virtual/asset-groups/create", `{"Name":"g"}`, 200)["Id"].(string)
	id := e.register(e.key, g, media.URL+"/slow.png", "Image")
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the fetch never started")
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	gate.Store(false)
	m2 := start()
	t.Cleanup(func() { _ = m2.Close() })
	e.m = m2
	if got := e.poll(e.key, id); got["Status"] != "Active" || got["Width"] != 20.0 {
		t.Fatalf("after restart: %v", got)
	}
	stored, _ := m2.db.Asset(context.Background(), id)
	if stored.Attempts != 1 {
		t.Errorf("attempts %d: the interrupted attempt should have been handed back", stored.Attempts)
	}
}
