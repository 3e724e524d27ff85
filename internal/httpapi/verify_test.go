package httpapi

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"mediagen/internal/apidoc"
	"mediagen/internal/asset"
)

func (e *assetEnv) page(path string) response {
	e.t.Helper()
	return e.do("GET", path, nil, "")
}

func (e *assetEnv) action(token, action string) response {
	e.t.Helper()
	return e.do("POST", "/verify/"+token+"/"+action, map[string]string{"Content-Type": "application/json"}, "{}")
}

var reNonce = regexp.MustCompile(`script-src 'nonce-([A-Za-z0-9_-]+)'`)

// The H5Link page: self-contained HTML under a strict CSP, usable without an API key; its
// actions move the session, and validate-result/get then hands out the group once.
func TestVerificationPageOverHTTP(t *testing.T) {
	t.Parallel()
	e := newAssetEnv(t)
	s := e.ok(e.acme, hPrefix+"/validate-session/create", `{}`, 200)
	link, token := s["H5Link"].(string), s["VerifyToken"].(string)
	if link != testPublicURL+"/verify/"+token {
		t.Fatalf("H5Link %q", link)
	}
	r := e.page("/verify/" + token)
	if r.status != 200 || r.header.Get("Content-Type") != "text/html; charset=utf-8" {
		t.Fatalf("page %d %s", r.status, r.header.Get("Content-Type"))
	}
	csp := r.header.Get("Content-Security-Policy")
	m := reNonce.FindStringSubmatch(csp)
	if m == nil || !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
		t.Fatalf("CSP %q", csp)
	}
	html := string(r.body)
	for _, want := range []string{`data-state="pending"`, `<script nonce="` + m[1] + `">`, `<style nonce="` + m[1] + `">`,
		`name="viewport"`, "Acme (everything)", `id="agree"`, `id="start"`, `id="decline"`, `id="confirm"`} {
		if !strings.Contains(html, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// No external assets: no src/href attribute and no url() pointing anywhere.
	if regexp.MustCompile(`(?i)(src|href)\s*=|url\(|@import`).MatchString(html) {
		t.Error("page loads external resources")
	}
	for h, want := range map[string]string{"Referrer-Policy": "no-referrer", "Cache-Control": "no-store", "X-Frame-Options": "DENY"} {
		if got := r.header.Get(h); got != want {
			t.Errorf("%s %q", h, got)
		}
	}
	// Each load gets a fresh nonce.
	if m2 := reNonce.FindStringSubmatch(e.page("/verify/" + token).header.Get("Content-Security-Policy")); m2 == nil || m2[1] == m[1] {
		t.Error("nonce reused")
	}

	if r := e.page("/verify/vt_unknownunknownunknownunknown00"); r.status != 404 || !strings.Contains(string(r.body), "not valid") {
		t.Errorf("unknown token page %d", r.status)
	}
	checkEnvelope(t, e.do("POST", "/verify/"+token+"/start", map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, "a=b"),
		415, "invalid_request_error", "unsupported_media_type")
	checkEnvelope(t, e.action(token, "confirm"), 400, "invalid_request_error", asset.CodeCheckNotStarted)
	checkEnvelope(t, e.action("vt_nopenopenopenopenopenopenopenope", "start"), 404, "not_found_error", asset.CodeVerifyTokenNotFound)
	checkEnvelope(t, e.action(token, "teleport"), 404, "not_found_error", "unknown_action")
	if r := e.action(token, "start"); r.status != 200 || string(r.body) != "{\"State\":\"started\"}\n" {
		t.Fatalf("start %d %s", r.status, r.body)
	}
	checkEnvelope(t, e.call(e.acme, hPrefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`), 400, "invalid_request_error", asset.CodeVerificationPending)
	checkEnvelope(t, e.action(token, "confirm"), 400, "invalid_request_error", asset.CodeCheckIncomplete)
	e.clock.Advance(250 * time.Millisecond) // past the liveness check's shortest duration (MinCheck)
	if r := e.action(token, "confirm"); r.status != 200 || !strings.Contains(string(r.body), `"passed"`) {
		t.Fatalf("confirm %d %s", r.status, r.body)
	}
	if r := e.page("/verify/" + token); !strings.Contains(string(r.body), `data-state="passed"`) {
		t.Error("page does not show the pass")
	}
	res := e.ok(e.acme, hPrefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`, 200)
	gid := res["GroupId"].(string)
	checkEnvelope(t, e.call(e.acme, hPrefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`), 400, "invalid_request_error", asset.CodeVerifyTokenUsed)
	// The new group takes real-human assets; the virtual paths do not know it.
	e.ok(e.acme, hPrefix+"/assets/create", `{"GroupId":"`+gid+`","URL":"https://cdn.example.com/me.mp4","AssetType":"Video"}`, 202)
	checkEnvelope(t, e.call(e.acme, vPrefix+"/assets/create", `{"GroupId":"`+gid+`","URL":"https://cdn.example.com/me.mp4","AssetType":"Video"}`), 404, "not_found_error", asset.CodeGroupNotFound)

	// A declined session.
	s = e.ok(e.acme, hPrefix+"/validate-session/create", `{"CallbackURL":"https://hooks.example.com/v"}`, 200)
	t2 := s["VerifyToken"].(string)
	if r := e.action(t2, "decline"); r.status != 200 || !strings.Contains(string(r.body), `"declined"`) {
		t.Fatalf("decline %d %s", r.status, r.body)
	}
	checkEnvelope(t, e.call(e.acme, hPrefix+"/validate-result/get", `{"VerifyToken":"`+t2+`"}`), 400, "invalid_request_error", asset.CodeVerificationDeclined)
}

// Asset traffic of every documented outcome validates against docs/openapi.yaml.
func TestAssetOpenAPIMatchesRecordedTraffic(t *testing.T) {
	t.Parallel()
	doc, err := apidoc.Load("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	e := newAssetEnv(t)
	rec := &apidoc.Recorder{}
	recorded := httptest.NewServer(apidoc.Middleware(e.srv.Handler(), rec.Record))
	t.Cleanup(recorded.Close)
	e.ts = recorded

	gid := e.ok(e.acme, vPrefix+"/asset-groups/create", `{"Name":"Brand kit","Description":"Logos"}`, 200)["Id"].(string)
	e.ok(e.acme, vPrefix+"/asset-groups/list", `{}`, 200)
	e.ok(e.acme, vPrefix+"/asset-groups/get", `{"Id":"`+gid+`"}`, 200)
	e.ok(e.acme, vPrefix+"/asset-groups/update", `{"Id":"`+gid+`","Description":""}`, 200)
	img := e.ok(e.acme, vPrefix+"/assets/create", `{"GroupId":"`+gid+`","URL":"`+e.write("a.png", testPNG(t, 8, 8))+`","AssetType":"Image"}`, 202)["Id"].(string)
	bad := e.ok(e.acme, vPrefix+"/assets/create", `{"GroupId":"`+gid+`","URL":"`+e.write("b.txt", []byte("text"))+`","AssetType":"Image","Name":"b"}`, 202)["Id"].(string)
	e.waitAsset(e.acme, vPrefix, img)
	e.waitAsset(e.acme, vPrefix, bad)
	e.ok(e.acme, vPrefix+"/assets/list", `{"GroupId":"`+gid+`","PageSize":1}`, 200)
	e.ok(e.acme, vPrefix+"/assets/update", `{"Id":"`+img+`","Name":"renamed"}`, 200)
	e.ok(e.acme, vPrefix+"/assets/delete", `{"Id":"`+bad+`"}`, 200)
	e.call(e.acme, vPrefix+"/asset-groups/delete", `{"Id":"`+gid+`"}`)                                                               // 400 not empty
	e.call(e.acme, vPrefix+"/assets/update", `{"Id":"`+img+`","Name":"x","GroupId":"g"}`)                                            // 400 move
	e.call(e.acme, vPrefix+"/assets/create", `{"GroupId":"`+gid+`","URL":"data:,x","AssetType":"Image"}`)                            // 400 source
	e.call(e.limited, vPrefix+"/assets/get", `{"Id":"`+img+`"}`)                                                                     // 404
	e.call(e.limited, vPrefix+"/asset-groups/get", `{"Id":"`+gid+`"}`)                                                               // 404
	e.call("mg_wrong", vPrefix+"/assets/list", `{}`)                                                                                 // 401
	e.do("POST", vPrefix+"/assets/list", map[string]string{"Authorization": "Bearer " + e.acme, "Content-Type": "text/plain"}, "{}") // 415

	s := e.ok(e.acme, hPrefix+"/validate-session/create", `{"CallbackURL":"https://hooks.example.com/v"}`, 200)
	token := s["VerifyToken"].(string)
	e.call(e.acme, hPrefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`) // 400 pending
	e.action(token, "start")
	e.clock.Advance(250 * time.Millisecond) // past the liveness check's shortest duration (MinCheck)
	e.action(token, "confirm")
	hg := e.ok(e.acme, hPrefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`, 200)["GroupId"].(string)
	e.call(e.acme, hPrefix+"/validate-result/get", `{"VerifyToken":"`+token+`"}`) // 400 used
	e.ok(e.acme, hPrefix+"/asset-groups/list", `{"PageNumber":1,"PageSize":5}`, 200)
	e.ok(e.acme, hPrefix+"/asset-groups/get", `{"Id":"`+hg+`"}`, 200)
	e.ok(e.acme, hPrefix+"/asset-groups/update", `{"Id":"`+hg+`","Name":"Jane Doe"}`, 200)
	ha := e.ok(e.acme, hPrefix+"/assets/create", `{"GroupId":"`+hg+`","URL":"`+e.write("me.png", testPNG(t, 4, 4))+`","AssetType":"Image"}`, 202)["Id"].(string)
	e.waitAsset(e.acme, hPrefix, ha)
	e.ok(e.acme, hPrefix+"/assets/list", `{"Status":"Active"}`, 200)
	e.ok(e.acme, hPrefix+"/assets/update", `{"Id":"`+ha+`","Name":"portrait"}`, 200)
	e.call(e.acme, vPrefix+"/assets/get", `{"Id":"`+ha+`"}`) // 404: other library
	e.ok(e.acme, hPrefix+"/assets/delete", `{"Id":"`+ha+`"}`, 200)
	e.ok(e.acme, hPrefix+"/asset-groups/delete", `{"Id":"`+hg+`"}`, 200)
	e.ok(e.acme, vPrefix+"/assets/delete", `{"Id":"`+img+`"}`, 200)
	e.ok(e.acme, vPrefix+"/asset-groups/delete", `{"Id":"`+gid+`"}`, 200)

	var checked []apidoc.Exchange
	statuses := map[int]int{}
	for _, ex := range rec.Exchanges() {
		if !doc.HasOperation(ex.Method, ex.Path) {
			continue // the verification page is an end-user page, documented in docs/assets.md
		}
		checked = append(checked, ex)
		statuses[ex.Status]++
	}
	if len(checked) < 30 {
		t.Fatalf("checked %d exchanges", len(checked))
	}
	for _, st := range []int{http.StatusOK, http.StatusAccepted, 400, 401, 404, 415} {
		if statuses[st] == 0 {
			t.Errorf("no exchange with status %d", st)
		}
	}
	doc.Check(t, checked)
}
