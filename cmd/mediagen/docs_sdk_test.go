package main

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"

	"mediagen/internal/apidoc"
)

// The OpenAI SDK snippets of docs/clients.md (```js, ```python) are not run here: the Python SDK
// cannot be installed offline and the Node SDK would make the suite depend on npm. What can
// drift is checked: every request body they send is a valid request of docs/openapi.yaml
// for its route, and every field they read from an answer is a property the document defines.

var (
	sdkCallRE   = regexp.MustCompile(`client\.post\(\s*"(/[^"]+)"`)
	sdkReadRE   = regexp.MustCompile(`(?:\b(?:video|speech|task)|\?)\.([a-z_]+)\b|\[["']([a-z_]+)["']\]|\.get\(["']([a-z_]+)["']`)
	jsKeyRE     = regexp.MustCompile(`([{,]\s*)([A-Za-z_][A-Za-z0-9_]*)\s*:`)
	trailingRE  = regexp.MustCompile(`,(\s*[}\]])`)
	sdkMethods  = map[string]bool{"includes": true, "post": true, "get": true, "json": true, "env": true, "log": true}
	openAPIProp = func(doc []byte, name string) bool {
		return regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(name) + `:`).Match(doc)
	}
)

// sdkBodies returns, for each client.post call of a snippet, the path (under /v1) and the body
// it sends as JSON.
func sdkBodies(src string) (paths, bodies []string) {
	for _, loc := range sdkCallRE.FindAllStringSubmatchIndex(src, -1) {
		path := src[loc[2]:loc[3]]
		rest := src[loc[1]:]
		i := strings.Index(rest, "body")
		if i < 0 {
			continue
		}
		open := i + strings.IndexByte(rest[i:], '{')
		depth, end := 0, -1
		for j := open; j < len(rest) && end < 0; j++ {
			switch rest[j] {
			case '{':
				depth++
			case '}':
				depth--
				if depth == 0 {
					end = j + 1
				}
			}
		}
		if end < 0 {
			continue
		}
		body := rest[open:end]
		// The snippets' literals as JSON: generated ids as a fixed id, Python's constants,
		// JavaScript's bare keys and trailing commas.
		body = strings.NewReplacer("randomUUID()", `"8a1c0d3e-0000-4000-8000-000000000001"`,
			"str(uuid.uuid4())", `"8a1c0d3e-0000-4000-8000-000000000001"`,
			"True", "true", "False", "false", "None", "null").Replace(body)
		body = jsKeyRE.ReplaceAllString(body, `$1"$2":`)
		body = trailingRE.ReplaceAllString(body, "$1")
		paths, bodies = append(paths, "/v1"+path), append(bodies, body)
	}
	return paths, bodies
}

func TestDocsSDKSnippetsUseThisContract(t *testing.T) {
	t.Parallel()
	doc, err := apidoc.Load("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rawDoc, err := os.ReadFile("../../docs/openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{"Authorization": {"Bearer mg_docs"}, "Content-Type": {"application/json"}}
	snippets := 0
	for _, b := range docBlocks(t) {
		if b.lang != "js" && b.lang != "python" {
			continue
		}
		snippets++
		paths, bodies := sdkBodies(b.text)
		if len(bodies) < 2 {
			t.Errorf("%s: found %d request bodies (want the video and the speech call); the parser lost them", b.where(), len(bodies))
		}
		for i, body := range bodies {
			if err := doc.ValidateRequest("POST", paths[i], header, []byte(body)); err != nil {
				t.Errorf("%s: the body sent to %s is not a request of docs/openapi.yaml: %v\n%s", b.where(), paths[i], err, body)
			}
			if !strings.Contains(body, `"client_request_id"`) {
				t.Errorf("%s: the body sent to %s has no metadata.client_request_id: the SDK's own retries would make a second task", b.where(), paths[i])
			}
		}
		for _, m := range sdkReadRE.FindAllStringSubmatch(b.text, -1) {
			name := m[1] + m[2] + m[3]
			if sdkMethods[name] || name == "" {
				continue
			}
			if !openAPIProp(rawDoc, name) {
				t.Errorf("%s: reads %q, which no schema of docs/openapi.yaml defines", b.where(), name)
			}
		}
	}
	if snippets < 2 {
		t.Fatalf("found %d SDK snippets in the docs; the parser lost them", snippets)
	}
}
