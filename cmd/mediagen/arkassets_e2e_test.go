package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/ark/arkfake"
	"mediagen/internal/provider/arkassets/arkassetsfake"
	"mediagen/internal/testkit"
)

const (
	arkAssetsTestAccess = "AKLT-e2e-4f1c0b"
	arkAssetsTestSecret = "c2stYXJrLWFzc2V0cy1lMmU="
)

// arkAssetsE2E is serve with the demo tenant and a rival tenant both bound to one ModelArk
// asset library (the fake arkassetsfake), demo-video-fast bound to an ark account (arkfake) of
// the same ModelArk account, and a CDN with the tenants' images.
type arkAssetsE2E struct {
	*assetE2E
	lib  *arkassetsfake.Server
	ark  *arkfake.Server
	cdn  *httptest.Server
	dir  string // the CDN's files
	logs *syncBuffer
}

func trustAll(certs ...*x509.Certificate) *tls.Config {
	pool := x509.NewCertPool()
	for _, c := range certs {
		pool.AddCert(c)
	}
	return &tls.Config{RootCAs: pool}
}

func startArkAssets(t *testing.T) *arkAssetsE2E {
	t.Helper()
	tools := requireTools(t)
	dir := t.TempDir()
	clip := filepath.Join(dir, "out.mp4")
	if err := tools.Render(context.Background(), ffmpeg.RenderSpec{Width: 320, Height: 180, FPS: 24, Duration: 2, Container: "mp4", Text: "seedance"}, clip); err != nil {
		t.Fatal(err)
	}
	// The vendor fetches the link it is given, as ModelArk does: the service's signed link
	// to its stored copy must serve the image, to a client without any credentials.
	fetch := func(u string) error {
		res, err := http.Get(u)
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 200 || !strings.HasPrefix(string(b), "\x89PNG") {
			return fmt.Errorf("HTTP %d, %d bytes", res.StatusCode, len(b))
		}
		return nil
	}
	lib := arkassetsfake.Start(arkassetsfake.Config{AccessKey: arkAssetsTestAccess, SecretKey: arkAssetsTestSecret, Region: "cn-beijing",
		Polls: 2, Fetch: fetch})
	t.Cleanup(lib.Close)
	ark := arkfake.Start(arkfake.Config{Key: arkTestKey, Clip: clip, Tokens: 1000, KnownAsset: lib.Known})
	t.Cleanup(ark.Close)
	files := t.TempDir()
	cdn := httptest.NewTLSServer(http.FileServer(http.Dir(files)))
	t.Cleanup(cdn.Close)

	accounts := "  - name: ark-lib\n    kind: ark_assets\n    base_url: " + lib.Base() + "\n    region: cn-beijing\n" +
		"    access_key_env: VOLC_TEST_ACCESSKEY\n    secret_key_env: VOLC_TEST_SECRETKEY\n" +
		"  - name: ark-main\n    kind: ark\n    base_url: " + ark.Base() + "\n    api_key_env: ARK_TEST_KEY\n    asset_library: ark-lib\n"
	catPath := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{"demo-video-fast": "ark-main"})
	b, err := os.ReadFile(catPath)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	i := strings.Index(text, "  - id: demo\n")
	block := strings.Replace(text[i:], "    currency: USD\n", "    currency: USD\n    asset_library: ark-lib\n", 1)
	rival := strings.Replace(strings.Replace(block, "  - id: demo\n", "  - id: rival\n", 1), "name: Demo tenant", "name: Rival Studio", 1)
	if err := os.WriteFile(catPath, []byte(text[:i]+block+rival), 0o644); err != nil {
		t.Fatal(err)
	}

	envVars := map[string]string{"ARK_TEST_KEY": arkTestKey, "VOLC_TEST_ACCESSKEY": arkAssetsTestAccess, "VOLC_TEST_SECRETKEY": arkAssetsTestSecret}
	logs := &syncBuffer{}
	m := NewMain(env(envVars), io.Discard, logs)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("serve's log:\n%s", logs.String())
		}
	})
	m.FetchTLS = trustAll(lib.Certificate(), ark.Certificate(), cdn.Certificate())
	m.AssetLibraryPoll = 50 * time.Millisecond
	m.AssetLibraryDeadline = 3 * time.Second
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--fetch-allow", "loopback", "--catalog", catPath)
	ae := &assetE2E{e2e: e}
	ae.rival = ae.newKey("rival", 100*money.Scale)
	return &arkAssetsE2E{assetE2E: ae, lib: lib, ark: ark, cdn: cdn, dir: files, logs: logs}
}

// image puts a w×h PNG on the CDN and returns its URL.
func (e *arkAssetsE2E) image(name string, w, h int) string {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.dir, name), pngOf(e.t, w, h), 0o644); err != nil {
		e.t.Fatal(err)
	}
	return e.cdn.URL + "/" + name
}

func (e *arkAssetsE2E) group(key, name string) string {
	e.t.Helper()
	return e.post(key, "/v1/vidgen/virtual/asset-groups/create", `{"Name":"`+name+`"}`, 200)["Id"].(string)
}

// A virtual asset of a tenant bound to ModelArk's asset library is registered there from a
// signed link to the service's own copy, stays Processing until the vendor says Active, and a
// Seedance task referencing asset://<our id> sends the vendor's asset id; an image outside the
// library's limits is refused at submission with nothing written; another tenant of the same
// library can neither read the asset nor use it.
func TestArkAssetsVirtualAssetReachesSeedanceAsTheVendorID(t *testing.T) {
	t.Parallel()
	e := startArkAssets(t)
	g := e.group(e.key, "cast")

	for _, c := range []struct{ name, url string }{
		{"a side under 300 px", e.image("small.png", 200, 400)},
		{"a width/height ratio over 2.5", e.image("wide.png", 1300, 400)},
	} {
		res := e.post(e.key, "/v1/vidgen/virtual/assets/create", fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":"Image"}`, g, c.url), 400)
		errObj, _ := res["error"].(map[string]any)
		if errObj["code"] != "image_outside_library_limits" || errObj["param"] != "URL" {
			t.Errorf("%s: %v", c.name, res)
		}
	}
	if list := e.post(e.key, "/v1/vidgen/virtual/assets/list", `{}`, 200); list["TotalCount"] != 0.0 {
		t.Errorf("refused images left assets behind: %v", list)
	}
	if e.lib.Assets() != 0 || e.lib.Groups() != 0 {
		t.Fatalf("refused images reached the vendor: %d assets, %d groups", e.lib.Assets(), e.lib.Groups())
	}

	id := e.register(e.key, g, e.image("face.png", 640, 480), "Image")
	if a := e.post(e.key, "/v1/vidgen/virtual/assets/get", `{"Id":"`+id+`"}`, 200); a["Status"] != "Processing" {
		t.Fatalf("a new asset: %v", a)
	}
	if a := e.poll(e.key, id); a["Status"] != "Active" {
		t.Fatalf("asset %v", a)
	}
	if e.lib.Groups() != 1 || e.lib.Assets() != 1 || e.lib.Calls("CreateAssetGroup") != 1 || e.lib.Calls("CreateAsset") != 1 {
		t.Fatalf("vendor: %d groups, %d assets, %d group creates, %d asset creates; want one each",
			e.lib.Groups(), e.lib.Assets(), e.lib.Calls("CreateAssetGroup"), e.lib.Calls("CreateAsset"))
	}
	if u := e.lib.URLs(); len(u) != 1 || !strings.HasPrefix(u[0], e.m.URL()+"/v1/files/assets/") {
		t.Fatalf("the vendor was given %q, want a signed link to the stored copy", u)
	}
	if a := e.post(e.rival, "/v1/vidgen/virtual/assets/get", `{"Id":"`+id+`"}`, 404); a["error"] == nil {
		t.Fatalf("the rival read the asset: %v", a)
	}

	body := `{"model":"demo-video-fast","prompt":"@Image1 walks","metadata":{"duration":5,"resolution":"720p","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"asset://` + id + `"}}]}}`
	if status, b := func() (int, []byte) {
		old := e.key
		e.key = e.rival
		defer func() { e.key = old }()
		return e.call("POST", "/v1/videos", body)
	}(); status != 400 || !strings.Contains(string(b), "was not found") {
		t.Fatalf("the rival's task with the demo tenant's asset: %d %s", status, b)
	}
	task := e.create(body)
	if got := e.wait(task); got.Status != "completed" {
		t.Fatalf("task %+v", got)
	}
	var sent []string
	for _, u := range e.ark.URLs() {
		if strings.HasPrefix(u, "asset://") {
			sent = append(sent, strings.TrimPrefix(u, "asset://"))
		}
	}
	if len(sent) != 1 || !e.lib.Known(sent[0]) || sent[0] == id {
		t.Fatalf("Seedance was sent %q; want the vendor's asset id (our id is %s)", e.ark.URLs(), id)
	}
	for _, f := range [][]string{e.lib.Violations(), e.ark.Violations()} {
		if len(f) > 0 {
			t.Fatalf("wire format violations: %q", f)
		}
	}
	// The keys are read, never written: not in the log, not in any file the service wrote.
	if strings.Contains(e.logs.String(), arkAssetsTestSecret) || strings.Contains(e.logs.String(), arkAssetsTestAccess) {
		t.Error("a key of the library is in serve's log")
	}
	_ = filepath.WalkDir(e.m.Config.DataDir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), arkAssetsTestSecret) {
				t.Errorf("the secret key is in %s", path)
			}
		}
		return nil
	})
}

// Faults of the library: a lost create answer is found by name (one vendor group and one vendor
// asset each), 429, 5xx, a refused key and garbage answers are waited out, a refusal by the
// vendor's review and an asset that never leaves Processing end Failed with their codes.
func TestArkAssetsFaultsAreWaitedOutOrEndTheAsset(t *testing.T) {
	t.Parallel()
	e := startArkAssets(t)

	e.lib.SetLoseCreates(2)
	g := e.group(e.key, "lost")
	id := e.register(e.key, g, e.image("a.png", 640, 480), "Image")
	if a := e.poll(e.key, id); a["Status"] != "Active" {
		t.Fatalf("after lost answers: %v", a)
	}
	if e.lib.Lost() != 2 || e.lib.Groups() != 1 || e.lib.Assets() != 1 {
		t.Fatalf("lost %d, groups %d, assets %d; want 2 lost and one of each", e.lib.Lost(), e.lib.Groups(), e.lib.Assets())
	}

	for _, f := range []struct {
		name string
		set  func(on bool)
	}{
		{"429", func(on bool) { e.lib.SetStatus(map[bool]int{true: 429}[on]) }},
		{"503", func(on bool) { e.lib.SetStatus(map[bool]int{true: 503}[on]) }},
		{"401", func(on bool) { e.lib.SetStatus(map[bool]int{true: 401}[on]) }},
		{"403", func(on bool) { e.lib.SetStatus(map[bool]int{true: 403}[on]) }},
		{"garbage", e.lib.SetGarbage},
	} {
		before := e.lib.Faulted()
		f.set(true)
		id := e.register(e.key, g, e.image("f"+f.name+".png", 640, 480), "Image")
		testkit.WaitEvery(t, 20*time.Millisecond, 20*time.Second, f.name+" never reached the library", func() bool {
			return e.lib.Faulted() > before
		})
		if a := e.post(e.key, "/v1/vidgen/virtual/assets/get", `{"Id":"`+id+`"}`, 200); a["Status"] != "Processing" {
			t.Fatalf("%s: %v while the library fails", f.name, a)
		}
		f.set(false)
		if a := e.poll(e.key, id); a["Status"] != "Active" {
			t.Fatalf("%s waited out: %v", f.name, a)
		}
	}

	e.lib.SetRefuse(true)
	refused := e.register(e.key, g, e.image("r.png", 640, 480), "Image")
	if a := e.poll(e.key, refused); a["Status"] != "Failed" || a["FailureCode"] != "upstream_refused" {
		t.Fatalf("refused: %v", a)
	}
	e.lib.SetRefuse(false)

	e.lib.SetNever(true)
	stuck := e.register(e.key, g, e.image("n.png", 640, 480), "Image")
	if a := e.poll(e.key, stuck); a["Status"] != "Failed" || a["FailureCode"] != "upstream_timeout" {
		t.Fatalf("never Active: %v", a)
	}
	if v := e.lib.Violations(); len(v) > 0 {
		t.Fatalf("wire format violations: %q", v)
	}
}

// Real-person verification of a tenant bound to ModelArk's library runs on the vendor's H5
// page: validate-session/create hands out the vendor's H5Link (this service's own page refuses
// the token), validate-result/get is pending until the person passes there, then returns our
// GroupId bound to the vendor's real-person group; an asset created in it is registered in that
// vendor group (no group is made) and reaches Seedance as the vendor's id; the rival tenant can
// use neither the token, the group nor the asset.
func TestArkAssetsRealPersonVerifiedByTheVendor(t *testing.T) {
	t.Parallel()
	e := startArkAssets(t)
	const prefix = "/v1/vidgen/real-human"
	s := e.post(e.key, prefix+"/validate-session/create", `{"CallbackURL":"`+e.cdn.URL+`/done"}`, 200)
	link, token := s["H5Link"].(string), s["VerifyToken"].(string)
	if !strings.HasPrefix(link, e.lib.Base()+"/h5/") {
		t.Fatalf("H5Link %q is not the vendor's", link)
	}
	if res, err := http.Get(e.m.URL() + "/verify/" + token); err == nil {
		res.Body.Close()
		if res.StatusCode != 404 {
			t.Fatalf("this service's own page answered %d for a vendor session", res.StatusCode)
		}
	}
	res := e.post(e.key, prefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`, 400)
	if errObj, _ := res["error"].(map[string]any); errObj["code"] != "verification_pending" {
		t.Fatalf("before the pass: %v", res)
	}
	e.post(e.rival, prefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`, 404)

	// The person passes on the vendor's page, which sends them to the tenant's CallbackURL.
	hc := e.lib.Client()
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	page, err := hc.Get(link)
	if err != nil {
		t.Fatal(err)
	}
	html, _ := io.ReadAll(page.Body)
	page.Body.Close()
	if !strings.Contains(string(html), `id="pass"`) {
		t.Fatalf("the vendor's page: %s", html)
	}
	pass, err := hc.Post(strings.Replace(link, "?", "/pass?", 1), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	pass.Body.Close()
	if loc := pass.Header.Get("Location"); !strings.HasPrefix(loc, e.cdn.URL+"/done") || !strings.Contains(loc, "resultCode=10000") {
		t.Fatalf("after the pass the person is sent to %q", loc)
	}

	group := e.post(e.key, prefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`, 200)["GroupId"].(string)
	if !strings.HasPrefix(group, "grp_") {
		t.Fatalf("GroupId %q is not ours", group)
	}
	res = e.post(e.key, prefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`, 400)
	if errObj, _ := res["error"].(map[string]any); errObj["code"] != "verify_token_used" {
		t.Fatalf("a second redeem: %v", res)
	}
	e.post(e.rival, prefix+"/asset-groups/get", `{"Id":"`+group+`"}`, 404)
	e.post(e.rival, prefix+"/assets/create", fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":"Image"}`, group, e.image("x.png", 640, 480)), 404)

	id := e.post(e.key, prefix+"/assets/create", fmt.Sprintf(`{"GroupId":%q,"URL":%q,"AssetType":"Image"}`, group, e.image("person.png", 480, 640)), 202)["Id"].(string)
	var a map[string]any
	testkit.WaitEvery(t, 50*time.Millisecond, 30*time.Second, "real-human asset still Processing", func() bool {
		a = e.post(e.key, prefix+"/assets/get", `{"Id":"`+id+`"}`, 200)
		return a["Status"] != "Processing"
	})
	if a["Status"] != "Active" {
		t.Fatalf("real-human asset %v", a)
	}
	if n := e.lib.Calls("CreateAssetGroup"); n != 0 {
		t.Fatalf("%d vendor groups were made for a real person; the vendor's own group is the one", n)
	}

	body := `{"model":"demo-video-fast","prompt":"@Image1 smiles","metadata":{"duration":5,"resolution":"720p","content":[{"type":"image_url","role":"reference_image","image_url":{"url":"asset://` + id + `"}}]}}`
	old := e.key
	e.key = e.rival
	if status, b := e.call("POST", "/v1/videos", body); status != 400 || !strings.Contains(string(b), "was not found") {
		t.Fatalf("the rival's task with the person's asset: %d %s", status, b)
	}
	e.key = old
	if got := e.wait(e.create(body)); got.Status != "completed" {
		t.Fatalf("task %+v", got)
	}
	urls := e.ark.URLs()
	if len(urls) != 1 || !strings.HasPrefix(urls[0], "asset://") || e.lib.AssetGroup(strings.TrimPrefix(urls[0], "asset://")) == "" {
		t.Fatalf("Seedance was sent %q; want the vendor's id of the person's asset", urls)
	}
	for _, f := range [][]string{e.lib.Violations(), e.ark.Violations()} {
		if len(f) > 0 {
			t.Fatalf("wire format violations: %q", f)
		}
	}
}

// `upstream check` of an ark_assets account makes one signed call: with the account's keys it
// passes, with a wrong secret the fake refuses the signature and the check fails; neither
// key is ever printed.
func TestArkAssetsUpstreamCheckSignsWithTheAccountsKeys(t *testing.T) {
	t.Parallel()
	fake := arkassetsfake.Start(arkassetsfake.Config{AccessKey: arkAssetsTestAccess, SecretKey: arkAssetsTestSecret, Region: "cn-beijing"})
	t.Cleanup(fake.Close)
	account := "  - name: ark-lib\n    kind: ark_assets\n    base_url: " + fake.Base() + "\n    region: cn-beijing\n" +
		"    access_key_env: VOLC_TEST_ACCESSKEY\n    secret_key_env: VOLC_TEST_SECRETKEY\n"
	cat := demoCatalogWith(t, t.TempDir(), account, nil)
	for _, tc := range []struct {
		name, secret, want string
		fails              bool
	}{
		{"with its keys", arkAssetsTestSecret, "ark-lib (ark_assets): OK, listed asset groups with a signed request with the account's key at " + fake.Base(), false},
		{"with a wrong secret", "d3Jvbmctc2VjcmV0LWtleQ==", "ark-lib (ark_assets): FAILED", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", cat, "ark-lib"},
				env(map[string]string{"VOLC_TEST_ACCESSKEY": arkAssetsTestAccess, "VOLC_TEST_SECRETKEY": tc.secret}), &out, &errOut, fake.TLS())
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err != nil) != tc.fails || !strings.Contains(text, tc.want) {
				t.Errorf("check: %v\n%s; want %q", err, text, tc.want)
			}
			if strings.Contains(text, tc.secret) {
				t.Errorf("the secret key is in the output: %s", text)
			}
		})
	}
}

// The vendor's verification faults: while ModelArk cannot be reached (5xx, a refused key),
// validate-session/create and validate-result/get answer 503 verification_unavailable and a
// pending session stays pending; a check the person failed on the vendor's page is
// verification_declined, and no group is made.
func TestArkAssetsVerificationFaults(t *testing.T) {
	t.Parallel()
	e := startArkAssets(t)
	const prefix = "/v1/vidgen/real-human"
	code := func(res map[string]any) any {
		errObj, _ := res["error"].(map[string]any)
		return errObj["code"]
	}
	for _, status := range []int{503, 401} {
		e.lib.SetStatus(status)
		if c := code(e.post(e.key, prefix+"/validate-session/create", `{}`, 503)); c != "verification_unavailable" {
			t.Fatalf("create with the vendor answering %d: %v", status, c)
		}
		e.lib.SetStatus(0)
	}
	token := e.post(e.key, prefix+"/validate-session/create", `{}`, 200)["VerifyToken"].(string)
	e.lib.SetStatus(500)
	if c := code(e.post(e.key, prefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`, 503)); c != "verification_unavailable" {
		t.Fatalf("result with the vendor down: %v", c)
	}
	e.lib.SetStatus(0)
	if c := code(e.post(e.key, prefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`, 400)); c != "verification_pending" {
		t.Fatalf("result after the vendor is back: %v", c)
	}

	s := e.post(e.key, prefix+"/validate-session/create", `{}`, 200)
	link := s["H5Link"].(string)
	res, err := e.lib.Client().Post(strings.Replace(link, "?", "/fail?", 1), "", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	for range 2 { // declined, and stays declined
		if c := code(e.post(e.key, prefix+"/validate-result/get", `{"VerifyToken":"`+s["VerifyToken"].(string)+`"}`, 400)); c != "verification_declined" {
			t.Fatalf("a failed check: %v", c)
		}
	}
	if list := e.post(e.key, prefix+"/asset-groups/list", `{}`, 200); list["TotalCount"] != 0.0 {
		t.Fatalf("groups after no pass: %v", list)
	}
}
