package apidoc

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const docPath = "../../docs/openapi.yaml"

var (
	loadOnce sync.Once
	loaded   *Doc
	loadErr  error
)

// doc loads docs/openapi.yaml once for the package's tests.
func doc(t *testing.T) *Doc {
	t.Helper()
	loadOnce.Do(func() { loaded, loadErr = Load(docPath) })
	if loadErr != nil {
		t.Fatalf("Load: %v", loadErr)
	}
	return loaded
}

const key = "Bearer mk_test_0123456789"

// hdr builds a header from name/value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func jsonReq() http.Header { return hdr("Authorization", key, "Content-Type", "application/json") }

func jsonResp() http.Header {
	return hdr("Content-Type", "application/json", "X-Request-Id", "req_abcdefghijklmnopqrst")
}

func TestDocumentLoads(t *testing.T) {
	d := doc(t)
	want := []string{
		"DELETE /v1/videos/{task_id}",
		"GET /healthz", "GET /metrics", "GET /readyz", "GET /v1/billing/balance", "GET /v1/billing/usage",
		"GET /v1/videos", "GET /v1/videos/{task_id}", "GET /v1/videos/{task_id}/content", "POST /v1/audio/speech", "POST /v1/videos",
		"POST /v1/vidgen/real-human/asset-groups/delete",
		"POST /v1/vidgen/real-human/asset-groups/get",
		"POST /v1/vidgen/real-human/asset-groups/list",
		"POST /v1/vidgen/real-human/asset-groups/update",
		"POST /v1/vidgen/real-human/assets/create",
		"POST /v1/vidgen/real-human/assets/delete",
		"POST /v1/vidgen/real-human/assets/get",
		"POST /v1/vidgen/real-human/assets/list",
		"POST /v1/vidgen/real-human/assets/update",
		"POST /v1/vidgen/real-human/validate-result/get",
		"POST /v1/vidgen/real-human/validate-session/create",
		"POST /v1/vidgen/virtual/asset-groups/create",
		"POST /v1/vidgen/virtual/asset-groups/delete",
		"POST /v1/vidgen/virtual/asset-groups/get",
		"POST /v1/vidgen/virtual/asset-groups/list",
		"POST /v1/vidgen/virtual/asset-groups/update",
		"POST /v1/vidgen/virtual/assets/create",
		"POST /v1/vidgen/virtual/assets/delete",
		"POST /v1/vidgen/virtual/assets/get",
		"POST /v1/vidgen/virtual/assets/list",
		"POST /v1/vidgen/virtual/assets/update",
	}
	if got := d.Operations(); !slices.Equal(got, want) {
		t.Errorf("Operations() = %v, want %v", got, want)
	}
}

func TestDocumentExamplesValidate(t *testing.T) {
	if err := doc(t).ValidateExamples(); err != nil {
		t.Fatal(err)
	}
}

// Every route has a request or response example: the document promises one per route.
func TestDocumentHasExamples(t *testing.T) {
	d := doc(t)
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"native:", "enhancement:", "production:", "queued:", "completed:", "balance:", "ok:", "ready:"} {
		if !strings.Contains(string(raw), " "+name+"\n") {
			t.Errorf("no example named %s", strings.TrimSuffix(name, ":"))
		}
	}
	for _, op := range d.ops {
		for code, r := range op.responses {
			if !strings.HasPrefix(code, "2") {
				continue
			}
			m, _, _ := deref(d.root, pointerMust(t, d, op, code), "")
			ok := false
			content, _ := m["content"].(map[string]any)
			for _, mt := range content {
				mm := mt.(map[string]any)
				_, a := mm["example"]
				_, b := mm["examples"]
				ok = ok || a || b
			}
			if !ok {
				t.Errorf("%s %s → %s has no example", op.method, op.template, r.code)
			}
		}
	}
}

func pointerMust(t *testing.T, d *Doc, op *operation, code string) any {
	t.Helper()
	v, err := pointerGet(d.root, "/paths/"+escapeToken(op.template)+"/"+strings.ToLower(op.method)+"/responses/"+escapeToken(code))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The security requirement: Bearer on every /v1 route, none elsewhere.
func TestDocumentSecurity(t *testing.T) {
	d := doc(t)
	for _, op := range d.ops {
		v1 := strings.HasPrefix(op.template, "/v1/")
		has := len(op.security) == 1 && op.security[0]["ApiKeyBearer"] && len(op.security[0]) == 1
		if v1 != has {
			t.Errorf("%s %s: security %v", op.method, op.template, op.security)
		}
		if v1 && op.response(401) == nil {
			t.Errorf("%s %s: no 401 documented", op.method, op.template)
		}
	}
	s := d.schemes["ApiKeyBearer"]
	if s.typ != "http" || s.scheme != "bearer" {
		t.Errorf("ApiKeyBearer = %+v", s)
	}
}

// Every documented error status uses the envelope with the type of the wire conventions, and
// rejects the envelope of another type; every response carries X-Request-Id.
func TestDocumentErrorStatusMapping(t *testing.T) {
	d := doc(t)
	typeOf := map[int]string{
		400: "invalid_request_error", 401: "authentication_error", 402: "insufficient_balance",
		403: "permission_error", 404: "not_found_error", 405: "invalid_request_error",
		409: "idempotency_error", 413: "invalid_request_error", 414: "invalid_request_error", 415: "invalid_request_error",
		429: "rate_limit_error", 500: "api_error", 503: "api_error",
		502: "api_error", 504: "api_error",
	}
	codeOf := map[int]string{
		400: "invalid_request_error", 401: "invalid_api_key", 402: "insufficient_balance",
		403: "permission_denied", 404: "not_found", 409: "idempotency_conflict",
		413: "request_too_large", 414: "uri_too_long", 415: "unsupported_media_type", 429: "rate_limit_exceeded", 500: "internal_error", 503: "service_unavailable",
		502: "speech_generation_failed", 504: "speech_timeout",
	}
	seen := 0
	for _, op := range d.ops {
		path := strings.ReplaceAll(op.template, "{task_id}", "video_x")
		for _, r := range op.responses {
			var status int
			for _, c := range r.code {
				status = status*10 + int(c-'0')
			}
			if !slices.ContainsFunc(r.headers, func(h *param) bool { return h.name == "X-Request-Id" && h.required }) {
				t.Errorf("%s %s → %d: X-Request-Id not documented as required", op.method, op.template, status)
			}
			if status < 400 {
				continue
			}
			seen++
			typ, ok := typeOf[status]
			if !ok {
				t.Errorf("%s %s → %d: unexpected error status", op.method, op.template, status)
				continue
			}
			resp := jsonResp()
			if status == 429 || status == 503 {
				resp.Set("Retry-After", "1") // required with every 429, and with a busy 503
			}
			good := `{"error":{"message":"m","type":"` + typ + `","code":"` + codeOf[status] + `"}}`
			if err := d.ValidateResponse(op.method, path, status, resp, []byte(good)); err != nil {
				t.Errorf("%s %s → %d: %v", op.method, op.template, status, err)
			}
			for other := range typeOf {
				if typeOf[other] == typ {
					continue
				}
				bad := `{"error":{"message":"m","type":"` + typeOf[other] + `","code":"` + codeOf[status] + `"}}`
				if d.ValidateResponse(op.method, path, status, resp, []byte(bad)) == nil {
					t.Errorf("%s %s → %d accepts type %s", op.method, op.template, status, typeOf[other])
				}
			}
		}
	}
	if seen < 15 {
		t.Errorf("only %d error responses checked", seen)
	}
	// The status lists of the brief.
	wantStatus := map[string][]string{
		"POST /v1/videos":                                    {"202", "400", "401", "402", "403", "409", "413", "415", "429", "500", "503"},
		"GET /v1/videos/{task_id}":                           {"200", "401", "403", "404", "429", "500"},
		"GET /v1/videos/{task_id}/content":                   {"200", "206", "302", "400", "401", "403", "404", "429", "500", "503"},
		"DELETE /v1/videos/{task_id}":                        {"200", "400", "401", "403", "404", "429", "500"},
		"GET /v1/videos":                                     {"200", "400", "401", "403", "429", "500"},
		"GET /v1/billing/balance":                            {"200", "401", "403", "429", "500"},
		"GET /v1/billing/usage":                              {"200", "400", "401", "403", "429", "500"},
		"GET /healthz":                                       {"200", "414"},
		"GET /readyz":                                        {"200", "414", "503"},
		"GET /metrics":                                       {"200", "414"},
		"POST /v1/audio/speech":                              {"200", "400", "401", "402", "403", "409", "413", "415", "429", "500", "502", "503", "504"},
		"POST /v1/vidgen/real-human/asset-groups/delete":     {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/asset-groups/get":        {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/asset-groups/list":       {"200", "400", "401", "403", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/asset-groups/update":     {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/assets/create":           {"202", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/assets/delete":           {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/assets/get":              {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/assets/list":             {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/assets/update":           {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/validate-result/get":     {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/real-human/validate-session/create": {"200", "400", "401", "403", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/asset-groups/create":        {"200", "400", "401", "403", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/asset-groups/delete":        {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/asset-groups/get":           {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/asset-groups/list":          {"200", "400", "401", "403", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/asset-groups/update":        {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/assets/create":              {"202", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/assets/delete":              {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/assets/get":                 {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/assets/list":                {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
		"POST /v1/vidgen/virtual/assets/update":              {"200", "400", "401", "403", "404", "413", "415", "429", "500", "503"},
	}
	for _, op := range d.ops {
		if got, want := op.codes(), wantStatus[op.method+" "+op.template]; !slices.Equal(got, want) {
			t.Errorf("%s %s: statuses %v, want %v", op.method, op.template, got, want)
		}
	}
}

// minimalDoc is a small valid document; the structure tests break it one way at a time.
const minimalDoc = `openapi: 3.1.0
info:
  title: t
  version: "1"
paths:
  /things/{id}:
    get:
      operationId: getThing
      parameters:
        - name: id
          in: path
          required: true
          schema:
            type: string
      responses:
        '200':
          description: ok
          content:
            application/json:
              schema:
                $ref: '#/components/schemas/Thing'
              example:
                name: a
components:
  schemas:
    Thing:
      type: object
      additionalProperties: false
      required: [name]
      properties:
        name:
          type: string
`

func writeDoc(t *testing.T, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "openapi.yaml")
	if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestMinimalDocumentLoads(t *testing.T) {
	d, err := Load(writeDoc(t, minimalDoc))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.ValidateExamples(); err != nil {
		t.Fatal(err)
	}
	if err := d.ValidateResponse("GET", "/things/1", 200, hdr("Content-Type", "application/json"), []byte(`{"name":"x"}`)); err != nil {
		t.Fatal(err)
	}
}

func TestBrokenDocumentsFailToLoad(t *testing.T) {
	cases := []struct{ name, old, new, want string }{
		{"openapi 3.0", "openapi: 3.1.0", "openapi: 3.0.3", "3.1.x"},
		{"no info", "info:\n  title: t\n  version: \"1\"\n", "", `missing required field "info"`},
		{"unknown root field", "paths:\n", "path_s: {}\npaths:\n", `unknown field "path_s"`},
		{"dangling schema ref", "#/components/schemas/Thing'", "#/components/schemas/Thin'", "Thin"},
		{"dangling response ref", "'200':\n          description: ok", "'200':\n          $ref: '#/components/responses/Nope'\n        '201':\n          description: ok", "Nope"},
		{"undeclared path parameter", "/things/{id}:", "/things/{id}/{sub}:", "{sub}"},
		{"path parameter not required", "required: true\n          schema:", "required: false\n          schema:", "required: true"},
		{"bad response code", "'200':", "'2000':", "response keys"},
		{"response without description", "          description: ok\n", "", `missing required field "description"`},
		{"schema keyword of the wrong type", "name:\n          type: string\n", "name:\n          type: strin\n", "metaschema"},
		{"misspelt schema keyword", "additionalProperties: false", "additionalProperty: false", `unknown JSON Schema keyword "additionalProperty"`},
		{"bad pattern", "name:\n          type: string\n", "name:\n          type: string\n          pattern: '('\n", "pattern"},
		{"unknown operation field", "operationId: getThing", "operationId: getThing\n      summry: x", `unknown field "summry"`},
		{"duplicate operationId", "paths:\n", "paths:\n  /other:\n    get:\n      operationId: getThing\n      responses:\n        '204':\n          description: none\n", "also used by"},
		{"undefined security scheme", "paths:\n", "security:\n  - Missing: []\npaths:\n", `"Missing" is not defined`},
		{"undeclared tag", "operationId: getThing", "operationId: getThing\n      tags: [nope]", "not declared"},
		{"duplicate key", "    Thing:\n", "    Thing:\n      type: object\n    Thing:\n", "already defined"},
		{"bad media type", "application/json:", "application json:", "media type"},
		{"external ref", "#/components/schemas/Thing'", "other.yaml#/components/schemas/Thing'", "inside the document"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(minimalDoc, c.old) {
				t.Fatalf("test bug: %q not in the minimal document", c.old)
			}
			_, err := Load(writeDoc(t, strings.Replace(minimalDoc, c.old, c.new, 1)))
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func TestBadExampleIsReported(t *testing.T) {
	for _, c := range []struct{ old, new string }{
		{"example:\n                name: a", "example:\n                name: 1"},
		{"example:\n                name: a", "example:\n                nam: a"},
		{"name:\n          type: string\n", "name:\n          type: string\n          example: 5\n"},
	} {
		d, err := Load(writeDoc(t, strings.Replace(minimalDoc, c.old, c.new, 1)))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.ValidateExamples(); err == nil {
			t.Errorf("a wrong example passes: %q", c.new)
		}
	}
}
