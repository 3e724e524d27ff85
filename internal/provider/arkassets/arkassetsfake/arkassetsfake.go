// Package arkassetsfake is ModelArk's asset-library OpenAPI for tests, written from the vendor's
// published references (docs/upstreams.md, "ModelArk asset library", cites each page):
// POST /?Action=<Action>&Version=2024-01-01, JSON bodies in PascalCase, answers in the
// {"ResponseMetadata":{…},"Result":{…}} envelope, every request signed with HMAC-SHA256
// signature V4 for service "ark" — the fake re-signs each request with the account's secret key
// and records a violation when the signature, the version or a field is wrong.
//
// Actions: CreateAssetGroup, ListAssetGroups, CreateAsset, ListAssets, GetAsset,
// CreateVisualValidateSession, GetVisualValidateResult. The vendor fetches an asset's URL at
// CreateAsset; so does the fake (Fetch), and it records the URL. An asset is Processing for
// Config.Polls GetAssets, then Active (or Failed for a refused URL, or Processing for ever).
// The visual validation's H5 page is a tiny HTML page at /h5/{token} whose pass button
// (POST /h5/{token}/pass) passes the person (POST /h5/{token}/fail fails the check: the result
// is then the error ValidateFailed), makes a real-person group and redirects to the
// session's CallbackURL with bytedToken and resultCode=10000, as the vendor's page does.
//
// Faults: a create whose answer is lost after the object was made (LoseCreates), a fixed HTTP
// status for every call (Status: 401, 403, 429, 5xx), garbage answers (Garbage), refusals of a
// URL (Refuse), assets that never leave Processing (Never).
package arkassetsfake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	volc "github.com/volcengine/volcengine-go-sdk/volcengine/base"

	"mediagen/internal/provider/fakekit"
)

// Config sets up a Server.
type Config struct {
	AccessKey, SecretKey, Region string
	// Polls is how many GetAssets of an asset answer Processing before it is Active
	// (default 1).
	Polls int
	// Fetch, when set, is how the fake reads an asset's URL at CreateAsset (the real vendor
	// fetches it): an error refuses the asset (Failed), as the vendor's review would.
	Fetch func(url string) error
	// Refuse, when it returns true for an asset's URL, makes the asset Failed (the vendor's
	// review refused it).
	Refuse func(url string) bool
	// Never keeps every asset Processing.
	Never bool
	// LoseCreates is how many creates (groups and assets) make their object and then answer
	// 500: answers lost after the vendor acted.
	LoseCreates int
	// Status, when set, answers every call with this HTTP status and an error envelope
	// (401, 403, 429 with Retry-After 1, 500, 503).
	Status int
	// Garbage answers every call 200 with a body that is not the envelope.
	Garbage bool
}

// Server is a running fake.
type Server struct {
	fakekit.Kit
	cfg Config

	groups     map[string]*group
	groupOrder []string
	assets     map[string]*asset
	sessions   map[string]*session
	n          int
	lost       int
	calls      map[string]int
	faulted    int  // calls answered with the Status or Garbage fault
	refuseAll  bool // SetRefuse
	urls       []string
}

type group struct {
	id, name, typ string
}

type asset struct {
	id, group, name, typ, url, status string
	polls                             int
}

type session struct {
	token, callback, group string
	passed, failed         bool
}

// Start starts the fake on loopback over TLS.
func Start(cfg Config) *Server {
	if cfg.Polls <= 0 {
		cfg.Polls = 1
	}
	s := &Server{cfg: cfg, groups: map[string]*group{}, assets: map[string]*asset{}, sessions: map[string]*session{},
		calls: map[string]int{}}
	s.Serve(s, 0, 0, 0) // no drawn faults: this fake injects its own
	return s
}

// Base is the API base URL an account's base_url names.
func (s *Server) Base() string { return s.URL() }

// SetStatus changes the fault of every call (0: none).
func (s *Server) SetStatus(status int) {
	s.Locked(func() { s.cfg.Status = status })
}

// SetGarbage changes whether every call is answered with garbage.
func (s *Server) SetGarbage(garbage bool) {
	s.Locked(func() { s.cfg.Garbage = garbage })
}

// SetRefuse makes the review refuse every asset created from now on.
func (s *Server) SetRefuse(refuse bool) {
	s.Locked(func() { s.refuseAll = refuse })
}

// Faulted is how many calls were answered with the Status or Garbage fault.
func (s *Server) Faulted() int { return s.Load(&s.faulted) }

// SetNever changes whether assets stay Processing.
func (s *Server) SetNever(never bool) {
	s.Locked(func() { s.cfg.Never = never })
}

// SetLoseCreates makes the next n creates lose their answers.
func (s *Server) SetLoseCreates(n int) {
	s.Locked(func() { s.cfg.LoseCreates = n })
}

// Calls is how many calls of the action were answered.
func (s *Server) Calls(action string) int { return fakekit.Get(&s.Kit, s.calls, action) }

// Groups is how many groups exist; Assets how many assets.
func (s *Server) Groups() int { return fakekit.Len(&s.Kit, s.groups) }

// Assets is how many assets exist.
func (s *Server) Assets() int { return fakekit.Len(&s.Kit, s.assets) }

// URLs are the asset URLs CreateAsset was given, in order.
func (s *Server) URLs() []string { return fakekit.Clone(&s.Kit, &s.urls) }

// Lost is how many creates lost their answer.
func (s *Server) Lost() int { return s.Load(&s.lost) }

// Known reports an Active asset id of the fake: what Seedance would accept as asset://<id>.
func (s *Server) Known(id string) bool {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	a, ok := s.assets[id]
	return ok && a.status == "Active"
}

// AssetGroup is the group of an asset id ("" when unknown).
func (s *Server) AssetGroup(id string) string {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if a, ok := s.assets[id]; ok {
		return a.group
	}
	return ""
}

func (s *Server) nextID(prefix string) string {
	s.n++
	return fmt.Sprintf("%s-20261129%06d-%05d", prefix, s.n, s.n*7919%100000)
}

func writeEnvelope(w http.ResponseWriter, status int, action, code string, result any) {
	meta := map[string]any{"RequestId": "20261129000000FAKE", "Action": action, "Version": "2024-01-01", "Service": "ark", "Region": "cn-beijing"}
	body := map[string]any{"ResponseMetadata": meta}
	if code != "" {
		meta["Error"] = map[string]any{"Code": code, "Message": "fake: " + code}
	} else {
		body["Result"] = result
	}
	w.Header().Set("Content-Type", "application/json")
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
	}
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

// ServeHTTP implements the API and the H5 page.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/h5/") {
		s.h5(w, r)
		return
	}
	action, version := r.URL.Query().Get("Action"), r.URL.Query().Get("Version")
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		s.Violate("%s %s: want POST /?Action=…", r.Method, r.URL.Path)
		writeEnvelope(w, http.StatusNotFound, action, "InvalidActionOrVersion", nil)
		return
	}
	if version != "2024-01-01" {
		s.Violate("%s: Version %q", action, version)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		s.Violate("%s: Content-Type %q", action, ct)
	}
	if !s.signed(r, body) {
		writeEnvelope(w, http.StatusUnauthorized, action, "SignatureDoesNotMatch", nil)
		return
	}
	s.Mu.Lock()
	status, garbage := s.cfg.Status, s.cfg.Garbage
	if status != 0 || garbage {
		s.faulted++
	}
	s.Mu.Unlock()
	switch {
	case status != 0:
		code := map[int]string{401: "InvalidAccessKey", 403: "AccessDenied", 429: "FlowLimitExceeded"}[status]
		if code == "" {
			code = "InternalError"
		}
		writeEnvelope(w, status, action, code, nil)
		return
	case garbage:
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `<html>upstream gateway</html>`)
		return
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil {
		s.Violate("%s: body is not a JSON object: %v", action, err)
		writeEnvelope(w, http.StatusBadRequest, action, "InvalidParameter", nil)
		return
	}
	s.Mu.Lock()
	s.calls[action]++
	s.Mu.Unlock()
	switch action {
	case "CreateAssetGroup":
		s.createGroup(w, in)
	case "ListAssetGroups":
		s.listGroups(w, in)
	case "CreateAsset":
		s.createAsset(w, in)
	case "ListAssets":
		s.listAssets(w, in)
	case "GetAsset":
		s.getAsset(w, in)
	case "CreateVisualValidateSession":
		s.createSession(w, r, in)
	case "GetVisualValidateResult":
		s.getResult(w, in)
	default:
		s.Violate("unknown Action %q", action)
		writeEnvelope(w, http.StatusBadRequest, action, "InvalidActionOrVersion", nil)
	}
}

// signed checks the Authorization header: the credential scope names the account's access
// key, the region and service ark, and the signature is the one the secret key makes over
// the request as received.
func (s *Server) signed(r *http.Request, body []byte) bool {
	auth := r.Header.Get("Authorization")
	date := r.Header.Get("X-Date")
	if !strings.HasPrefix(auth, "HMAC-SHA256 Credential="+s.cfg.AccessKey+"/") || len(date) != 16 {
		s.Violate("%s: Authorization %q is not a signature of access key %s", r.URL.Query().Get("Action"), redact(auth), s.cfg.AccessKey)
		return false
	}
	if !strings.Contains(auth, "/"+s.cfg.Region+"/ark/request,") {
		s.Violate("credential scope of %q is not region %s, service ark", redact(auth), s.cfg.Region)
		return false
	}
	again, _ := http.NewRequest(r.Method, "https://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	for k, v := range r.Header {
		if k == "Content-Type" || (strings.HasPrefix(k, "X-") && k != "X-Content-Sha256") {
			again.Header[k] = v
		}
	}
	volc.Sign4(again, volc.Credentials{AccessKeyID: s.cfg.AccessKey, SecretAccessKey: s.cfg.SecretKey, Service: "ark", Region: s.cfg.Region})
	if again.Header.Get("Authorization") != auth {
		s.Violate("%s: signature does not match the request", r.URL.Query().Get("Action"))
		return false
	}
	return true
}

func redact(auth string) string {
	if i := strings.Index(auth, "Signature="); i >= 0 {
		return auth[:i] + "Signature=…"
	}
	return auth
}

// fields checks a body's members against the action's documented ones.
func (s *Server) fields(action string, in map[string]any, required []string, optional ...string) bool {
	ok := true
	for _, k := range required {
		if v, has := in[k]; !has || v == "" || v == nil {
			s.Violate("%s: %s is missing", action, k)
			ok = false
		}
	}
	for k := range in {
		if !slices.Contains(required, k) && !slices.Contains(optional, k) && k != "ProjectName" {
			s.Violate("%s: unknown field %q", action, k)
			ok = false
		}
	}
	return ok
}

func str(in map[string]any, k string) string { v, _ := in[k].(string); return v }

// lose reports whether this create's answer is lost (the object is made all the same).
func (s *Server) lose() bool {
	s.Mu.Lock()
	defer s.Mu.Unlock()
	if s.cfg.LoseCreates > 0 {
		s.cfg.LoseCreates--
		s.lost++
		return true
	}
	return false
}

func (s *Server) createGroup(w http.ResponseWriter, in map[string]any) {
	if !s.fields("CreateAssetGroup", in, []string{"Name"}, "Description", "GroupType") {
		writeEnvelope(w, http.StatusBadRequest, "CreateAssetGroup", "MissingParameter", nil)
		return
	}
	if t := str(in, "GroupType"); t != "" && t != "AIGC" {
		s.Violate("CreateAssetGroup: GroupType %q (only AIGC)", t)
	}
	if n := str(in, "Name"); len([]rune(n)) > 64 {
		s.Violate("CreateAssetGroup: Name of %d characters (at most 64)", len([]rune(n)))
	}
	s.Mu.Lock()
	g := &group{id: s.nextID("group"), name: str(in, "Name"), typ: "AIGC"}
	s.groups[g.id] = g
	s.groupOrder = append(s.groupOrder, g.id)
	s.Mu.Unlock()
	if s.lose() {
		writeEnvelope(w, http.StatusInternalServerError, "CreateAssetGroup", "InternalError", nil)
		return
	}
	writeEnvelope(w, http.StatusOK, "CreateAssetGroup", "", map[string]any{"Id": g.id})
}

func (s *Server) listGroups(w http.ResponseWriter, in map[string]any) {
	s.fields("ListAssetGroups", in, nil, "Filter", "PageNumber", "PageSize")
	f, _ := in["Filter"].(map[string]any)
	name := str(f, "Name")
	s.Mu.Lock()
	items := []map[string]any{}
	for _, id := range s.groupOrder {
		g := s.groups[id]
		if name == "" || g.name == name {
			items = append(items, map[string]any{"Id": g.id, "Name": g.name, "GroupType": g.typ})
		}
	}
	s.Mu.Unlock()
	writeEnvelope(w, http.StatusOK, "ListAssetGroups", "", map[string]any{"Items": items, "TotalCount": len(items)})
}

func (s *Server) createAsset(w http.ResponseWriter, in map[string]any) {
	if !s.fields("CreateAsset", in, []string{"GroupId", "URL", "AssetType"}, "Name") {
		writeEnvelope(w, http.StatusBadRequest, "CreateAsset", "MissingParameter", nil)
		return
	}
	src := str(in, "URL")
	if !strings.HasPrefix(src, "https://") && !strings.HasPrefix(src, "http://") {
		s.Violate("CreateAsset: URL %q is not a link (Base64 is not taken)", src)
	}
	if t := str(in, "AssetType"); !slices.Contains([]string{"Image", "Video", "Audio"}, t) {
		s.Violate("CreateAsset: AssetType %q", t)
	}
	s.Mu.Lock()
	g, ok := s.groups[str(in, "GroupId")]
	s.urls = append(s.urls, src)
	s.Mu.Unlock()
	if !ok {
		writeEnvelope(w, http.StatusNotFound, "CreateAsset", "NotFound.GroupId", nil)
		return
	}
	status := "Processing"
	s.Mu.Lock()
	refuseAll := s.refuseAll
	s.Mu.Unlock()
	if refuseAll || (s.cfg.Refuse != nil && s.cfg.Refuse(src)) {
		status = "Failed"
	}
	if s.cfg.Fetch != nil {
		if err := s.cfg.Fetch(src); err != nil {
			s.Violate("CreateAsset: URL %s cannot be fetched: %v", src, err)
			status = "Failed"
		}
	}
	s.Mu.Lock()
	a := &asset{id: s.nextID("asset"), group: g.id, name: str(in, "Name"), typ: str(in, "AssetType"), url: src, status: status}
	s.assets[a.id] = a
	s.Mu.Unlock()
	if s.lose() {
		writeEnvelope(w, http.StatusInternalServerError, "CreateAsset", "InternalError", nil)
		return
	}
	writeEnvelope(w, http.StatusOK, "CreateAsset", "", map[string]any{"Id": a.id})
}

func (a *asset) view() map[string]any {
	return map[string]any{"Id": a.id, "Name": a.name, "GroupId": a.group, "AssetType": a.typ, "Status": a.status,
		"URL": "https://fake-tos.example/" + a.id}
}

func (s *Server) listAssets(w http.ResponseWriter, in map[string]any) {
	s.fields("ListAssets", in, nil, "Filter", "PageNumber", "PageSize")
	f, _ := in["Filter"].(map[string]any)
	name := str(f, "Name")
	var groups []string
	if gs, ok := f["GroupIds"].([]any); ok {
		for _, g := range gs {
			if id, ok := g.(string); ok {
				groups = append(groups, id)
			}
		}
	}
	s.Mu.Lock()
	items := []map[string]any{}
	for _, a := range s.assets {
		if (name == "" || a.name == name) && (len(groups) == 0 || slices.Contains(groups, a.group)) {
			items = append(items, a.view())
		}
	}
	s.Mu.Unlock()
	writeEnvelope(w, http.StatusOK, "ListAssets", "", map[string]any{"Items": items, "TotalCount": len(items)})
}

func (s *Server) getAsset(w http.ResponseWriter, in map[string]any) {
	if !s.fields("GetAsset", in, []string{"Id"}) {
		writeEnvelope(w, http.StatusBadRequest, "GetAsset", "MissingParameter", nil)
		return
	}
	s.Mu.Lock()
	a, ok := s.assets[str(in, "Id")]
	if ok && a.status == "Processing" && !s.cfg.Never {
		a.polls++
		if a.polls > s.cfg.Polls {
			a.status = "Active"
		}
	}
	var view map[string]any
	if ok {
		view = a.view()
	}
	s.Mu.Unlock()
	if !ok {
		writeEnvelope(w, http.StatusNotFound, "GetAsset", "NotFound.Asset", nil)
		return
	}
	writeEnvelope(w, http.StatusOK, "GetAsset", "", view)
}

func (s *Server) createSession(w http.ResponseWriter, r *http.Request, in map[string]any) {
	s.fields("CreateVisualValidateSession", in, nil, "CallbackURL")
	s.Mu.Lock()
	v := &session{token: fmt.Sprintf("20261129%026d", s.n+1), callback: str(in, "CallbackURL")}
	s.n++
	s.sessions[v.token] = v
	s.Mu.Unlock()
	link := "https://" + r.Host + "/h5/" + v.token + "?bytedToken=" + v.token + "&lng=en"
	writeEnvelope(w, http.StatusOK, "CreateVisualValidateSession", "", map[string]any{"BytedToken": v.token, "H5Link": link,
		"CallbackURL": v.callback})
}

func (s *Server) getResult(w http.ResponseWriter, in map[string]any) {
	if !s.fields("GetVisualValidateResult", in, []string{"BytedToken"}) {
		writeEnvelope(w, http.StatusBadRequest, "GetVisualValidateResult", "MissingParameter", nil)
		return
	}
	s.Mu.Lock()
	v, ok := s.sessions[str(in, "BytedToken")]
	var passed, failed bool
	var groupID string
	if ok {
		passed, failed, groupID = v.passed, v.failed, v.group
	}
	s.Mu.Unlock()
	switch {
	case !ok:
		writeEnvelope(w, http.StatusNotFound, "GetVisualValidateResult", "NotFound.BytedToken", nil)
	case failed:
		writeEnvelope(w, http.StatusBadRequest, "GetVisualValidateResult", "ValidateFailed", nil)
	case !passed:
		writeEnvelope(w, http.StatusBadRequest, "GetVisualValidateResult", "ValidatePending", nil)
	default:
		writeEnvelope(w, http.StatusOK, "GetVisualValidateResult", "", map[string]any{"GroupId": groupID})
	}
}

// h5 is the person's page: GET shows a pass button, POST …/pass passes the check.
func (s *Server) h5(w http.ResponseWriter, r *http.Request) {
	rest := strings.TrimPrefix(r.URL.Path, "/h5/")
	token, fail := strings.CutSuffix(rest, "/fail")
	token, pass := strings.CutSuffix(token, "/pass")
	s.Mu.Lock()
	v, ok := s.sessions[token]
	s.Mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	if fail && r.Method == http.MethodPost {
		s.Mu.Lock()
		if !v.passed {
			v.failed = true
		}
		s.Mu.Unlock()
		_, _ = io.WriteString(w, "failed")
		return
	}
	if !pass || r.Method != http.MethodPost {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = fmt.Fprintf(w, `<!doctype html><title>Liveness check</title><form method="post" action="/h5/%s/pass"><button id="pass">Pass</button></form>`,
			html.EscapeString(url.PathEscape(token)))
		return
	}
	s.Mu.Lock()
	if !v.passed {
		v.passed = true
		g := &group{id: s.nextID("group"), name: "real-person-" + token, typ: "LivenessFace"}
		s.groups[g.id] = g
		s.groupOrder = append(s.groupOrder, g.id)
		v.group = g.id
	}
	cb := v.callback
	s.Mu.Unlock()
	if cb == "" {
		_, _ = io.WriteString(w, "passed")
		return
	}
	u, err := url.Parse(cb)
	if err != nil {
		http.Error(w, "bad callback", http.StatusBadRequest)
		return
	}
	q := u.Query()
	q.Set("bytedToken", token)
	q.Set("resultCode", strconv.Itoa(10000))
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}
