package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/asset"
	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/jobs"
	"mediagen/internal/testkit"
)

// assetEnv is the API with the asset library on a fresh SQLite store, keys of two tenants
// (acme, limited), and a loopback HTTPS media server the fetches may reach.
type assetEnv struct {
	*testEnv
	svc     *asset.Service
	acme    string // API key secrets
	limited string
	media   *httptest.Server
	dir     string
	clock   *testkit.Clock // the asset service's and its job engine's; runs with the wall clock
}

const testPublicURL = "http://mediagen.test"

func newAssetEnv(t *testing.T) *assetEnv {
	t.Helper()
	return newAssetEnvOn(t, "sqlite")
}

// newAssetEnvOn is newAssetEnv on a fresh store of the driver (see openTestStore).
func newAssetEnvOn(t *testing.T, driver string) *assetEnv {
	t.Helper()
	return newAssetEnvWith(t, driver, testCatalog(t))
}

// newAssetEnvWith is newAssetEnvOn with the catalog cat.
func newAssetEnvWith(t *testing.T, driver string, cat *catalog.Catalog) *assetEnv {
	t.Helper()
	root := t.TempDir()
	db := openTestStore(t, driver)
	key := bytes.Repeat([]byte("s"), 32)
	assetBlobs, err := blob.NewFS(filepath.Join(root, "assets"), key, testPublicURL)
	if err != nil {
		t.Fatal(err)
	}
	results, err := blob.NewFS(filepath.Join(root, "blobs"), key, testPublicURL)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "media")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	media := httptest.NewTLSServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(media.Close)
	// cdn.example.com and hooks.example.com (used below) resolve to nothing: never to the network.
	fetch := loopbackFetch(t, media.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, mapResolver{})
	clock := testkit.RunningClock()
	engine := jobs.New(jobs.Config{Store: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: clock.Now})
	svc := asset.New(asset.Config{Store: db, Catalog: cat, Blobs: assetBlobs, Fetch: fetch, PublicURL: testPublicURL,
		PollInterval: 50 * time.Millisecond, MinCheck: 200 * time.Millisecond, Notify: engine.Notify, Now: clock.Now})
	for _, k := range svc.Kinds() {
		if err := engine.Register(k); err != nil {
			t.Fatal(err)
		}
	}
	if err := engine.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(engine.Stop)
	s := New(Config{Store: db, Catalog: cat, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Assets: svc, Files: asset.Files{Assets: assetBlobs, Results: results}})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	e := &assetEnv{testEnv: &testEnv{t: t, srv: s, ts: ts, store: db}, svc: svc, media: media, dir: dir, clock: clock}
	e.acme, _ = e.newKey("acme", 0, false)
	e.limited, _ = e.newKey("limited", 0, false)
	return e
}

func (e *assetEnv) call(key, path, body string) response {
	e.t.Helper()
	return e.do("POST", path, map[string]string{"Authorization": "Bearer " + key, "Content-Type": "application/json"}, body)
}

// ok calls and demands the status; it returns the decoded object.
func (e *assetEnv) ok(key, path, body string, status int) map[string]any {
	e.t.Helper()
	r := e.call(key, path, body)
	if r.status != status {
		e.t.Fatalf("%s %s: %d %s", path, body, r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		e.t.Errorf("%s: content type %q", path, ct)
	}
	if hasJSONNull(r.body) {
		e.t.Errorf("%s: null in %s", path, r.body)
	}
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		e.t.Fatalf("%s: %v: %s", path, err, r.body)
	}
	return m
}

func (e *assetEnv) write(name string, b []byte) string {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, name), b, 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.media.URL + "/" + name
}

func (e *assetEnv) waitAsset(key, prefix, id string) map[string]any {
	e.t.Helper()
	var m map[string]any
	testkit.WaitEvery(e.t, 20*time.Millisecond, 20*time.Second, fmt.Sprintf("asset %s still Processing", id), func() bool {
		m = e.ok(key, prefix+"/assets/get", `{"Id":"`+id+`"}`, 200)
		return m["Status"] != "Processing"
	})
	return m
}

func testPNG(t testing.TB, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = uint8(i * 31)
	}
	img.Set(0, 0, color.White)
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

var (
	vPrefix = asset.VirtualPrefix
	hPrefix = asset.RealHumanPrefix
)

// allAssetPaths are the 21 endpoints of the contract.
var allAssetPaths = []string{
	vPrefix + "/asset-groups/create", vPrefix + "/asset-groups/list", vPrefix + "/asset-groups/get",
	vPrefix + "/asset-groups/update", vPrefix + "/asset-groups/delete",
	vPrefix + "/assets/create", vPrefix + "/assets/list", vPrefix + "/assets/get", vPrefix + "/assets/update", vPrefix + "/assets/delete",
	hPrefix + "/validate-session/create", hPrefix + "/validate-result/get",
	hPrefix + "/asset-groups/list", hPrefix + "/asset-groups/get", hPrefix + "/asset-groups/update", hPrefix + "/asset-groups/delete",
	hPrefix + "/assets/create", hPrefix + "/assets/list", hPrefix + "/assets/get", hPrefix + "/assets/update", hPrefix + "/assets/delete",
}

// Every endpoint is POST with a Bearer key and a JSON body, and refuses anything else with
// the standard envelopes.
func TestAssetEndpointsTransportRules(t *testing.T) {
	t.Parallel()
	e := newAssetEnv(t)
	if len(allAssetPaths) != 21 {
		t.Fatal(len(allAssetPaths))
	}
	for _, p := range allAssetPaths {
		checkEnvelope(t, e.do("POST", p, map[string]string{"Content-Type": "application/json"}, `{}`), 401, "authentication_error", "missing_api_key")
		checkEnvelope(t, e.do("POST", p, map[string]string{"Authorization": "Bearer mg_nope", "Content-Type": "application/json"}, `{}`), 401, "authentication_error", "invalid_api_key")
		r := e.do("GET", p, map[string]string{"Authorization": "Bearer " + e.acme}, "")
		checkEnvelope(t, r, 405, "invalid_request_error", "method_not_allowed")
		if r.header.Get("Allow") != "POST" {
			t.Errorf("%s: Allow %q", p, r.header.Get("Allow"))
		}
		checkEnvelope(t, e.do("POST", p, map[string]string{"Authorization": "Bearer " + e.acme, "Content-Type": "text/plain"}, `{}`), 415, "invalid_request_error", "unsupported_media_type")
		checkEnvelope(t, e.call(e.acme, p, `{"Model":"demo-video"}`), 400, "invalid_request_error", "invalid_request_error")
		checkEnvelope(t, e.call(e.acme, p, `not json`), 400, "invalid_request_error", "invalid_request_error")
		checkEnvelope(t, e.call(e.acme, p, strings.Repeat(" ", DefaultMaxBodyBytes+1)), 413, "invalid_request_error", "request_too_large")
	}
	// The asset library paths do not exist with other spellings.
	checkEnvelope(t, e.call(e.acme, "/v1/vidgen/virtual/assets/move", `{}`), 404, "not_found_error", "not_found")
	checkEnvelope(t, e.call(e.acme, "/v1/vidgen/real-human/asset-groups/create", `{"Name":"x"}`), 404, "not_found_error", "not_found")
}

func assetErr(t *testing.T, r response) (code, param string) {
	t.Helper()
	var env struct {
		Error struct {
			Code  string `json:"code"`
			Param string `json:"param"`
		} `json:"error"`
	}
	if err := json.Unmarshal(r.body, &env); err != nil {
		t.Fatalf("%v: %s", err, r.body)
	}
	return env.Error.Code, env.Error.Param
}

// The whole virtual library over HTTP: create a group, register a real PNG served on
// loopback, poll it to Active, read the stored copy through its signed link, list with
// filters and pages, rename, refuse a move, delete.
func TestVirtualLibraryOverHTTP(t *testing.T) {
	t.Parallel()
	e := newAssetEnv(t)
	g := e.ok(e.acme, vPrefix+"/asset-groups/create", `{"Name":"Brand kit","Description":"Logos"}`, 200)
	gid := g["Id"].(string)
	pngData := testPNG(t, 32, 24)
	src := e.write("logo.png", pngData)
	created := e.ok(e.acme, vPrefix+"/assets/create", `{"GroupId":"`+gid+`","URL":"`+src+`","AssetType":"Image","Name":"Logo"}`, 202)
	id := created["Id"].(string)
	if created["Status"] != "Processing" || len(created) != 2 {
		t.Fatalf("create answered %v", created)
	}
	a := e.waitAsset(e.acme, vPrefix, id)
	if a["Status"] != "Active" || a["Name"] != "Logo" || a["GroupId"] != gid || a["AssetType"] != "Image" || a["Width"] != 32.0 || a["Height"] != 24.0 {
		t.Fatalf("asset %v", a)
	}
	link := a["URL"].(string)
	if !strings.HasPrefix(link, testPublicURL+"/v1/files/assets/") || strings.Contains(link, e.media.URL) {
		t.Fatalf("URL %q", link)
	}
	// The signed link serves the stored copy (the source server is gone by now).
	e.media.Close()
	file := e.do("GET", strings.TrimPrefix(link, testPublicURL), nil, "")
	if file.status != 200 || !bytes.Equal(file.body, pngData) || file.header.Get("Content-Type") != "image/png" {
		t.Fatalf("file %d %s, %d bytes", file.status, file.header.Get("Content-Type"), len(file.body))
	}
	tampered := e.do("GET", strings.TrimPrefix(strings.Replace(link, "sig=", "sig=0", 1), testPublicURL), nil, "")
	checkEnvelope(t, tampered, 403, "permission_error", "invalid_signature")

	// Links are minted fresh on every read: in a later second, the expiry differs.
	testkit.NextSecond()
	if b := e.ok(e.acme, vPrefix+"/assets/get", `{"Id":"`+id+`"}`, 200); b["URL"] == link {
		t.Error("link not minted fresh")
	}

	for i := 0; i < 3; i++ {
		e.ok(e.acme, vPrefix+"/assets/create", fmt.Sprintf(`{"GroupId":"%s","URL":"https://cdn.example.com/v%d.mp4","AssetType":"Video"}`, gid, i), 202)
	}
	page := e.ok(e.acme, vPrefix+"/assets/list", `{"PageSize":2,"PageNumber":2}`, 200)
	if page["TotalCount"] != 4.0 || len(page["Items"].([]any)) != 2 || page["PageNumber"] != 2.0 {
		t.Errorf("page %v", page)
	}
	if imgs := e.ok(e.acme, vPrefix+"/assets/list", `{"GroupId":"`+gid+`","AssetType":"Image","Status":"Active"}`, 200); imgs["TotalCount"] != 1.0 {
		t.Errorf("filtered %v", imgs)
	}
	if groups := e.ok(e.acme, vPrefix+"/asset-groups/list", `{}`, 200); groups["TotalCount"] != 1.0 || groups["Items"].([]any)[0].(map[string]any)["AssetCount"] != 4.0 {
		t.Errorf("groups %v", groups)
	}
	if u := e.ok(e.acme, vPrefix+"/assets/update", `{"Id":"`+id+`","Name":"Logo v2"}`, 200); u["Name"] != "Logo v2" || u["Status"] != "Active" {
		t.Errorf("update %v", u)
	}
	r := e.call(e.acme, vPrefix+"/assets/update", `{"Id":"`+id+`","Name":"x","GroupId":"`+gid+`"}`)
	checkEnvelope(t, r, 400, "invalid_request_error", asset.CodeMoveNotSupported)
	if _, param := assetErr(t, r); param != "GroupId" {
		t.Errorf("param %q", param)
	}
	r = e.call(e.acme, vPrefix+"/asset-groups/delete", `{"Id":"`+gid+`"}`)
	checkEnvelope(t, r, 400, "invalid_request_error", asset.CodeGroupNotEmpty)
	if d := e.ok(e.acme, vPrefix+"/assets/delete", `{"Id":"`+id+`"}`, 200); d["Deleted"] != true {
		t.Errorf("delete %v", d)
	}
	// The copy is gone with the asset.
	if gone := e.do("GET", strings.TrimPrefix(link, testPublicURL), nil, ""); gone.status != 404 {
		t.Errorf("deleted copy answers %d", gone.status)
	}
	checkEnvelope(t, e.call(e.acme, vPrefix+"/assets/get", `{"Id":"`+id+`"}`), 404, "not_found_error", asset.CodeAssetNotFound)
}

// Bad input over HTTP answers 400 with the PascalCase param; another tenant's ids and the
// other library's ids answer 404.
func TestAssetErrorsOverHTTP(t *testing.T) {
	t.Parallel()
	e := newAssetEnv(t)
	gid := e.ok(e.acme, vPrefix+"/asset-groups/create", `{"Name":"g"}`, 200)["Id"].(string)
	aid := e.ok(e.acme, vPrefix+"/assets/create", `{"GroupId":"`+gid+`","URL":"https://cdn.example.com/a.png","AssetType":"Image"}`, 202)["Id"].(string)

	bad := []struct{ path, body, code, param string }{
		{vPrefix + "/asset-groups/create", `{}`, "invalid_request_error", "Name"},
		{vPrefix + "/asset-groups/create", `{"Name":5}`, "invalid_request_error", "Name"},
		{vPrefix + "/asset-groups/create", `{"Name":"g","ProjectName":"p"}`, "invalid_request_error", "ProjectName"},
		{vPrefix + "/asset-groups/create", `{"Name":"g","Name":"h"}`, "invalid_request_error", "Name"},
		{vPrefix + "/assets/create", `{"GroupId":"` + gid + `","URL":"data:image/png;base64,AAAA","AssetType":"Image"}`, asset.CodeInvalidSourceURL, "URL"},
		{vPrefix + "/assets/create", `{"GroupId":"` + gid + `","URL":"https://cdn.example.com/a.png","AssetType":"Picture"}`, "invalid_request_error", "AssetType"},
		{vPrefix + "/assets/create", `{"GroupId":"` + gid + `","URL":"https://cdn.example.com/a.png"}`, "invalid_request_error", "AssetType"},
		{vPrefix + "/assets/create", `{"GroupId":"` + gid + `","URL":"https://cdn.example.com/a.png","AssetType":"Image","RegionId":"x"}`, "invalid_request_error", "RegionId"},
		{vPrefix + "/assets/create", `{"GroupId":"` + gid + `","URL":"https://cdn.example.com/a.png","AssetType":"Image","SecretKey":"x"}`, "invalid_request_error", "SecretKey"},
		{vPrefix + "/assets/list", `{"PageSize":500}`, "invalid_request_error", "PageSize"},
		{vPrefix + "/assets/get", `{"Id":7}`, "invalid_request_error", "Id"},
		{hPrefix + "/validate-session/create", `{"CallbackURL":"ftp://x.example.com"}`, asset.CodeInvalidCallbackURL, "CallbackURL"},
		{hPrefix + "/validate-result/get", `{"VerifyToken":123}`, "invalid_request_error", "VerifyToken"},
	}
	for _, c := range bad {
		r := e.call(e.acme, c.path, c.body)
		checkEnvelope(t, r, 400, "invalid_request_error", c.code)
		if _, p := assetErr(t, r); p != c.param {
			t.Errorf("%s %s: param %q, want %q", c.path, c.body, p, c.param)
		}
	}
	notFound := []struct{ key, path, body, code string }{
		{e.limited, vPrefix + "/asset-groups/get", `{"Id":"` + gid + `"}`, asset.CodeGroupNotFound},
		{e.limited, vPrefix + "/assets/get", `{"Id":"` + aid + `"}`, asset.CodeAssetNotFound},
		{e.limited, vPrefix + "/assets/delete", `{"Id":"` + aid + `"}`, asset.CodeAssetNotFound},
		{e.limited, vPrefix + "/assets/create", `{"GroupId":"` + gid + `","URL":"https://cdn.example.com/a.png","AssetType":"Image"}`, asset.CodeGroupNotFound},
		{e.acme, hPrefix + "/assets/get", `{"Id":"` + aid + `"}`, asset.CodeAssetNotFound},
		{e.acme, hPrefix + "/asset-groups/get", `{"Id":"` + gid + `"}`, asset.CodeGroupNotFound},
		{e.acme, hPrefix + "/assets/create", `{"GroupId":"` + gid + `","URL":"https://cdn.example.com/a.png","AssetType":"Image"}`, asset.CodeGroupNotFound},
		{e.acme, hPrefix + "/validate-result/get", `{"VerifyToken":"vt_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}`, asset.CodeVerifyTokenNotFound},
	}
	for _, c := range notFound {
		checkEnvelope(t, e.call(c.key, c.path, c.body), 404, "not_found_error", c.code)
	}
	if l := e.ok(e.limited, vPrefix+"/assets/list", `{}`, 200); l["TotalCount"] != 0.0 {
		t.Errorf("limited sees %v", l)
	}
}

// An asset created without Name is named after its URL, and that name is always one the
// API can store and answer with: on SQLite a percent-decoded %ff used to be stored and then
// made every assets/get and assets/list of the tenant a 500; on PostgreSQL the create itself
// was a 500.
func TestAssetDefaultNameFromAnyURLIsReadableOnEveryStore(t *testing.T) {
	t.Parallel()
	for _, driver := range testDrivers {
		t.Run(driver, func(t *testing.T) {
			t.Parallel()
			e := newAssetEnvOn(t, driver)
			gid := e.ok(e.acme, vPrefix+"/asset-groups/create", `{"Name":"g"}`, 200)["Id"].(string)
			want := map[string]string{}
			for _, p := range []string{"/%ff", "/%00", "/a%0Ab.png", "/%C2%85", "/"} {
				id := e.ok(e.acme, vPrefix+"/assets/create", `{"GroupId":"`+gid+`","URL":"https://cdn.example.com`+p+`","AssetType":"Image"}`, 202)["Id"].(string)
				want[id] = strings.TrimPrefix(p, "/")
				if p == "/" {
					want[id] = "asset"
				}
			}
			for id, name := range want {
				if got := e.ok(e.acme, vPrefix+"/assets/get", `{"Id":"`+id+`"}`, 200)["Name"]; got != name {
					t.Errorf("assets/get %s: Name %v, want %q", id, got, name)
				}
			}
			l := e.ok(e.acme, vPrefix+"/assets/list", `{}`, 200)
			if l["TotalCount"] != float64(len(want)) {
				t.Errorf("assets/list %v", l)
			}
		})
	}
}
