// Package apidoc loads the public OpenAPI 3.1 document (docs/openapi.yaml) and checks real HTTP
// exchanges against it, so that tests can assert that the document and the server agree.
//
// # API
//
//	Load(path) (*Doc, error)                              parse, check the structure, compile every schema
//	(*Doc).ValidateRequest(method, path, header, body)   the operation exists; params, security, body
//	(*Doc).ValidateResponse(method, path, status, header, body)
//	                                                      the status is documented; headers, content type, body
//	(*Doc).ValidateResponseBody(method, path, status, contentType, body)
//	                                                      a sample answer: status documented, body fits
//	(*Doc).ValidateUnrouted(method, path, status, header, body)
//	                                                      the 404/405 answer to a request matching no operation
//	(*Doc).ValidateExamples() error                       every example in the document fits its schema
//	(*Doc).HasOperation(method, path) / Operations()      what the document describes
//	(*Doc).Check(t, exchanges) / ValidateAll              t.Errorf for each exchange that does not conform
//	(*Doc).CheckExchange(ex) error                        the same, for one exchange
//	Middleware(next, record) / Transport / Recorder      capture exchanges on the server or client side
//
// Typical use in a test of the HTTP layer:
//
//	doc, err := apidoc.Load("../../docs/openapi.yaml")
//	rec := &apidoc.Recorder{}
//	ts := httptest.NewServer(apidoc.Middleware(srv.Handler(), rec.Record))
//	… exercise the API …
//	doc.Check(t, rec.Exchanges())
//
// # What is checked
//
// An exchange is matched to an operation by method and path template (literal segments win
// over {param} segments). The response must use a status listed under the operation (an exact
// code, then a 4XX-style range, then default), carry the documented required headers, use a
// documented media type, and its body must validate against that media type's schema. JSON
// bodies are parsed strictly: valid UTF-8, one value, no duplicate member names.
//
// The request is checked (path and header parameters, the security requirement, Content-Type
// and body) only when the server answered 2xx: a rejected request is allowed not to conform,
// that is what the 4xx is for, while an accepted request that the document forbids is drift.
// oneOf is exact: a body fitting two branches of a oneOf fails, as it does in any validating
// client or proxy. A request body schema that is a top-level anyOf (POST /v1/videos, whose
// route comes from the model alias, so one body can fit two routes) is checked branch by
// branch only to name each branch in the error when none fits.
//
// # Library
//
// JSON Schema 2020-12 validation is done by github.com/santhosh-tekuri/jsonschema/v6 (pinned at
// v6.0.3). Chosen because it implements all of 2020-12 ($dynamicRef, unevaluated*,
// dependentSchemas, min/maxContains, if/then/else) and passes the official JSON-Schema-Test-
// Suite; it checks every schema against the 2020-12 meta-schema when compiling, so a misspelt
// keyword value or a dangling $ref fails Load; it compares numbers as exact decimals (big.Rat),
// so multipleOf 0.000001 on money amounts is exact; it can compile any JSON pointer inside a
// document, so the OpenAPI document itself is the schema resource and #/components/schemas/…
// references resolve without rewriting; and it depends only on golang.org/x/text, which the
// module already has. The OpenAPI layer (paths, operations, parameters, responses, non-schema
// $refs, structure checks) is small and written here. The alternative, pb33f/libopenapi with
// libopenapi-validator, brings a large dependency tree (and itself validates schemas with this
// same library).
//
// OpenAPI 3.1's default schema dialect is 2020-12 plus annotation-only keywords (discriminator,
// example, xml, externalDocs); schemas are compiled as 2020-12, which ignores those keywords,
// with format assertions on (uri, date-time, …, plus int32 and int64 ranges).
package apidoc

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"mime"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

// Doc is a loaded, checked and compiled OpenAPI document. It is safe for concurrent use.
type Doc struct {
	path string
	url  string         // the document's URL as a schema resource (file:///…)
	root map[string]any // JSON-compatible tree: map[string]any, []any, json.Number, string, bool, nil
	ops  []*operation
	// security schemes by name, and the document-wide security requirement.
	schemes  map[string]secScheme
	security []map[string]bool
	// The compiler is used by Load and, under mu, by ValidateExamples; compiled schemas are
	// immutable and safe for concurrent validation.
	mu       sync.Mutex
	compiler *jsonschema.Compiler
	compiled map[string]*jsonschema.Schema // by JSON pointer
	failed   map[string]bool               // pointers whose compilation failed (reported once)
	// The answers to requests that match no operation, by status ("404", "405"), from
	// components/responses NotFound and MethodNotAllowed when the document defines them.
	unrouted map[string]*response
}

// Names of the components/responses entries that describe the answers to requests matching no
// operation: an unknown path (404) and a documented path with another method (405).
const (
	NotFoundResponse         = "NotFound"
	MethodNotAllowedResponse = "MethodNotAllowed"
)

type operation struct {
	method   string   // upper case
	template string   // /v1/videos/{task_id}
	segs     []string // template split on "/"
	id       string   // operationId or "METHOD template"
	params   []*param
	security []map[string]bool // alternatives (OR) of scheme sets (AND); empty: none required
	body     *requestBody      // nil: the operation takes no body
	// responses by key: "202", "4XX", "default".
	responses map[string]*response
}

type param struct {
	name, in string
	required bool
	schema   *jsonschema.Schema
	typ      string // the schema's "type" when it is a single string, for coercing text values
}

type requestBody struct {
	required bool
	content  []*media
}

type response struct {
	code    string
	headers []*param // in "header"
	content []*media
}

type media struct {
	key      string            // as written in the document
	typ      string            // lower-case type/subtype
	params   map[string]string // parameters written in the key
	schema   *jsonschema.Schema
	branches []branch // set instead of schema for a top-level anyOf, to name the branches in errors
}

type branch struct {
	name   string
	schema *jsonschema.Schema
}

type secScheme struct {
	typ, scheme, in, name string
}

// Load reads the OpenAPI document at path (YAML or JSON), checks its structure, resolves every
// $ref and compiles every schema. The error lists every problem found.
func Load(path string) (*Doc, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("apidoc: %w", err)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("apidoc: %w", err)
	}
	root, err := parseDocument(raw)
	if err != nil {
		return nil, fmt.Errorf("apidoc: %s: %w", path, err)
	}
	d := &Doc{
		path:     path,
		url:      (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String(),
		root:     root,
		compiled: map[string]*jsonschema.Schema{},
		failed:   map[string]bool{},
		unrouted: map[string]*response{},
	}
	if probs := checkStructure(root); len(probs) > 0 {
		return nil, fmt.Errorf("apidoc: %s is not a valid OpenAPI 3.1 document:\n  %s", path, strings.Join(probs, "\n  "))
	}
	d.compiler = jsonschema.NewCompiler()
	d.compiler.DefaultDraft(jsonschema.Draft2020)
	d.compiler.AssertFormat()
	d.compiler.RegisterFormat(&jsonschema.Format{Name: "int32", Validate: intRange(math.MinInt32, math.MaxInt32)})
	d.compiler.RegisterFormat(&jsonschema.Format{Name: "int64", Validate: intRange(math.MinInt64, math.MaxInt64)})
	d.compiler.UseLoader(refuseLoader{})
	if err := d.compiler.AddResource(d.url, any(root)); err != nil {
		return nil, fmt.Errorf("apidoc: %w", err)
	}
	var probs []string
	// Every named schema compiles, used or not, so that a broken one cannot hide.
	if schemas, ok := mapAt(root, "components", "schemas"); ok {
		for _, name := range sortedKeys(schemas) {
			if _, err := d.compile("/components/schemas/" + escapeToken(name)); err != nil {
				probs = append(probs, err.Error())
			}
		}
	}
	probs = append(probs, d.buildOperations()...)
	if resps, ok := mapAt(root, "components", "responses"); ok {
		for name, status := range map[string]string{NotFoundResponse: "404", MethodNotAllowedResponse: "405"} {
			if v, ok := resps[name]; ok {
				r, p := d.buildResponse(status, v, "/components/responses/"+escapeToken(name))
				probs = append(probs, p...)
				d.unrouted[status] = r
			}
		}
	}
	if len(probs) > 0 {
		return nil, fmt.Errorf("apidoc: %s:\n  %s", path, strings.Join(probs, "\n  "))
	}
	return d, nil
}

// parseDocument turns YAML (a superset of JSON) into a JSON-compatible tree with json.Number
// numbers. yaml.v3 rejects duplicate keys.
func parseDocument(raw []byte) (map[string]any, error) {
	var v any
	if err := yaml.Unmarshal(raw, &v); err != nil {
		return nil, err
	}
	n, err := normalize(v, "")
	if err != nil {
		return nil, err
	}
	m, ok := n.(map[string]any)
	if !ok {
		return nil, errors.New("the document is not an object")
	}
	return m, nil
}

func normalize(v any, ptr string) (any, error) {
	switch v := v.(type) {
	case nil, bool, string:
		return v, nil
	case int:
		return json.Number(strconv.Itoa(v)), nil
	case int64:
		return json.Number(strconv.FormatInt(v, 10)), nil
	case uint64:
		return json.Number(strconv.FormatUint(v, 10)), nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s: %v is not a JSON number", ptrOrRoot(ptr), v)
		}
		return json.Number(strconv.FormatFloat(v, 'g', -1, 64)), nil
	case time.Time:
		return nil, fmt.Errorf("%s: unquoted timestamp %s; quote it, JSON has no timestamps", ptrOrRoot(ptr), v.Format(time.RFC3339))
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			n, err := normalize(e, ptr+"/"+strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			out[i] = n
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			n, err := normalize(e, ptr+"/"+escapeToken(k))
			if err != nil {
				return nil, err
			}
			out[k] = n
		}
		return out, nil
	case map[any]any:
		// Non-string keys, such as unquoted response codes (200:), become strings as in JSON.
		out := make(map[string]any, len(v))
		for k, e := range v {
			ks := fmt.Sprint(k)
			if _, dup := out[ks]; dup {
				return nil, fmt.Errorf("%s: duplicate key %q", ptrOrRoot(ptr), ks)
			}
			n, err := normalize(e, ptr+"/"+escapeToken(ks))
			if err != nil {
				return nil, err
			}
			out[ks] = n
		}
		return out, nil
	}
	return nil, fmt.Errorf("%s: unsupported YAML value of type %T", ptrOrRoot(ptr), v)
}

func intRange(lo, hi int64) func(any) error {
	return func(v any) error {
		var s string
		switch n := v.(type) {
		case json.Number:
			s = string(n)
		case float64:
			s = strconv.FormatFloat(n, 'f', -1, 64)
		default:
			return nil // not a number: the type keyword reports it
		}
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			if strings.ContainsAny(s, ".eE") {
				return nil // a decimal; "type: integer" decides
			}
			return fmt.Errorf("%s is out of the range of a 64-bit integer", s)
		}
		i, _ := strconv.ParseInt(s, 10, 64)
		if i < lo || i > hi {
			return fmt.Errorf("%s is out of range [%d, %d]", s, lo, hi)
		}
		return nil
	}
}

// refuseLoader keeps validation hermetic: every schema comes from the document itself (the
// JSON Schema meta-schemas are embedded in the library and never reach a loader).
type refuseLoader struct{}

func (refuseLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("external reference %s: only references inside the document are supported", u)
}

// compile compiles the schema at the JSON pointer ptr of the document (in Load, or under mu).
func (d *Doc) compile(ptr string) (*jsonschema.Schema, error) {
	if s, ok := d.compiled[ptr]; ok {
		return s, nil
	}
	if d.failed[ptr] {
		return nil, fmt.Errorf("schema %s: does not compile (reported above)", ptr)
	}
	s, err := d.compiler.Compile(d.url + "#" + encodePointer(ptr))
	if err != nil {
		d.failed[ptr] = true
		return nil, fmt.Errorf("schema %s: %s", ptr, d.clean(err.Error()))
	}
	d.compiled[ptr] = s
	return s, nil
}

// clean shortens library messages: the document's file URL becomes its base name.
func (d *Doc) clean(msg string) string {
	return strings.ReplaceAll(msg, d.url, filepath.Base(d.path))
}

var methods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// buildOperations indexes every operation with compiled parameter, body and response schemas.
func (d *Doc) buildOperations() []string {
	var probs []string
	d.schemes = map[string]secScheme{}
	if ss, ok := mapAt(d.root, "components", "securitySchemes"); ok {
		for name := range ss {
			m, _, err := deref(d.root, ss[name], "/components/securitySchemes/"+escapeToken(name))
			if err != nil {
				probs = append(probs, err.Error())
				continue
			}
			d.schemes[name] = secScheme{typ: str(m["type"]), scheme: strings.ToLower(str(m["scheme"])), in: str(m["in"]), name: str(m["name"])}
		}
	}
	d.security = securityOf(d.root["security"])
	paths, _ := d.root["paths"].(map[string]any)
	for _, tmpl := range sortedKeys(paths) {
		if strings.HasPrefix(tmpl, "x-") {
			continue // an extension, not a path
		}
		itemPtr := "/paths/" + escapeToken(tmpl)
		item, itemPtr, err := deref(d.root, paths[tmpl], itemPtr)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		for _, m := range methods {
			raw, ok := item[m]
			if !ok {
				continue
			}
			opPtr := itemPtr + "/" + m
			op, p := d.buildOperation(strings.ToUpper(m), tmpl, item, itemPtr, raw.(map[string]any), opPtr)
			probs = append(probs, p...)
			d.ops = append(d.ops, op)
		}
	}
	return probs
}

func (d *Doc) buildOperation(method, tmpl string, item map[string]any, itemPtr string, m map[string]any, ptr string) (*operation, []string) {
	var probs []string
	op := &operation{method: method, template: tmpl, segs: strings.Split(tmpl, "/"), responses: map[string]*response{}}
	op.id = str(m["operationId"])
	if op.id == "" {
		op.id = method + " " + tmpl
	}
	// Parameters: operation-level ones override path-level ones with the same name and location.
	type located struct {
		v   any
		ptr string
	}
	byKey := map[string]located{}
	var order []string
	for _, src := range []struct {
		list any
		ptr  string
	}{{item["parameters"], itemPtr + "/parameters"}, {m["parameters"], ptr + "/parameters"}} {
		list, _ := src.list.([]any)
		for i, pv := range list {
			pm, pptr, err := deref(d.root, pv, src.ptr+"/"+strconv.Itoa(i))
			if err != nil {
				probs = append(probs, err.Error())
				continue
			}
			key := str(pm["in"]) + ":" + strings.ToLower(str(pm["name"]))
			if _, seen := byKey[key]; !seen {
				order = append(order, key)
			}
			byKey[key] = located{pm, pptr}
		}
	}
	for _, key := range order {
		l := byKey[key]
		pm := l.v.(map[string]any)
		p, err := d.buildParam(str(pm["name"]), str(pm["in"]), pm, l.ptr)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		op.params = append(op.params, p)
	}
	if sec, ok := m["security"]; ok {
		op.security = securityOf(sec)
	} else {
		op.security = d.security
	}
	if rb, ok := m["requestBody"]; ok {
		rm, rptr, err := deref(d.root, rb, ptr+"/requestBody")
		if err != nil {
			probs = append(probs, err.Error())
		} else {
			body := &requestBody{required: rm["required"] == true}
			content, _ := rm["content"].(map[string]any)
			for _, key := range sortedKeys(content) {
				md, err := d.buildMedia(key, content[key], rptr+"/content/"+escapeToken(key), true)
				if err != nil {
					probs = append(probs, err.Error())
					continue
				}
				body.content = append(body.content, md)
			}
			op.body = body
		}
	}
	responses, _ := m["responses"].(map[string]any)
	for _, code := range sortedKeys(responses) {
		resp, p := d.buildResponse(code, responses[code], ptr+"/responses/"+escapeToken(code))
		probs = append(probs, p...)
		if resp != nil {
			op.responses[strings.ToUpper(code)] = resp
		}
	}
	return op, probs
}

// buildResponse compiles a Response Object: its headers and media types.
func (d *Doc) buildResponse(code string, v any, ptr string) (*response, []string) {
	rm, rptr, err := deref(d.root, v, ptr)
	if err != nil {
		return nil, []string{err.Error()}
	}
	var probs []string
	resp := &response{code: code}
	headers, _ := rm["headers"].(map[string]any)
	for _, name := range sortedKeys(headers) {
		hm, hptr, err := deref(d.root, headers[name], rptr+"/headers/"+escapeToken(name))
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		h, err := d.buildParam(name, "header", hm, hptr)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		resp.headers = append(resp.headers, h)
	}
	content, _ := rm["content"].(map[string]any)
	for _, key := range sortedKeys(content) {
		md, err := d.buildMedia(key, content[key], rptr+"/content/"+escapeToken(key), false)
		if err != nil {
			probs = append(probs, err.Error())
			continue
		}
		resp.content = append(resp.content, md)
	}
	return resp, probs
}

// buildParam compiles a parameter or header object: schema, or content with one media type.
func (d *Doc) buildParam(name, in string, m map[string]any, ptr string) (*param, error) {
	p := &param{name: name, in: in, required: m["required"] == true}
	schemaPtr := ptr + "/schema"
	if _, ok := m["schema"]; !ok {
		content, _ := m["content"].(map[string]any)
		for key := range content { // exactly one entry, checked by checkStructure
			schemaPtr = ptr + "/content/" + escapeToken(key) + "/schema"
		}
	}
	if _, err := pointerGet(d.root, schemaPtr); err != nil {
		return p, nil // no schema: any value
	}
	s, err := d.compile(schemaPtr)
	if err != nil {
		return nil, err
	}
	p.schema = s
	p.typ = d.schemaType(schemaPtr)
	return p, nil
}

// schemaType returns the single "type" of the schema at ptr, following $refs, or "".
func (d *Doc) schemaType(ptr string) string {
	v, err := pointerGet(d.root, ptr)
	for i := 0; err == nil && i < 16; i++ {
		m, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		if t, ok := m["type"].(string); ok {
			return t
		}
		ref, ok := m["$ref"].(string)
		if !ok || !strings.HasPrefix(ref, "#") {
			return ""
		}
		v, _, err = resolveRef(d.root, ref)
	}
	return ""
}

func (d *Doc) buildMedia(key string, v any, ptr string, request bool) (*media, error) {
	mt, params, err := mime.ParseMediaType(key)
	if err != nil {
		return nil, fmt.Errorf("%s: media type %q: %v", ptr, key, err)
	}
	md := &media{key: key, typ: strings.ToLower(mt), params: params}
	m, _ := v.(map[string]any)
	sv, ok := m["schema"]
	if !ok {
		return md, nil
	}
	schemaPtr := ptr + "/schema"
	if sm, ok := sv.(map[string]any); ok && request && isBareAnyOf(sm) {
		for i, bv := range sm["anyOf"].([]any) {
			s, err := d.compile(schemaPtr + "/anyOf/" + strconv.Itoa(i))
			if err != nil {
				return nil, err
			}
			name := "anyOf/" + strconv.Itoa(i)
			if bm, ok := bv.(map[string]any); ok {
				if ref, ok := bm["$ref"].(string); ok {
					name = ref[strings.LastIndexByte(ref, '/')+1:]
				}
			}
			md.branches = append(md.branches, branch{name: name, schema: s})
		}
		return md, nil
	}
	s, err := d.compile(schemaPtr)
	if err != nil {
		return nil, err
	}
	md.schema = s
	return md, nil
}

// isBareAnyOf reports whether a schema is an anyOf with nothing beside it but annotations, so
// that matching at least one branch is the whole of its meaning.
func isBareAnyOf(m map[string]any) bool {
	if _, ok := m["anyOf"].([]any); !ok {
		return false
	}
	for k := range m {
		switch k {
		case "anyOf", "description", "title", "discriminator", "example", "examples", "$comment", "deprecated", "readOnly", "writeOnly", "externalDocs":
		default:
			if !strings.HasPrefix(k, "x-") {
				return false
			}
		}
	}
	return true
}

func securityOf(v any) []map[string]bool {
	list, ok := v.([]any)
	if !ok {
		return nil
	}
	out := make([]map[string]bool, 0, len(list))
	for _, e := range list {
		req := map[string]bool{}
		if m, ok := e.(map[string]any); ok {
			for name := range m {
				req[name] = true
			}
		}
		out = append(out, req)
	}
	return out
}

// find returns the operation for method and a concrete path, with its path parameter values.
// Templates with more literal segments win, as OpenAPI requires.
func (d *Doc) find(method, path string) (*operation, map[string]string) {
	segs := strings.Split(path, "/")
	var best *operation
	var bestVals map[string]string
	bestLiterals := -1
	for _, op := range d.ops {
		if op.method != method || len(op.segs) != len(segs) {
			continue
		}
		vals, literals, ok := matchTemplate(op.segs, segs)
		if ok && literals > bestLiterals {
			best, bestVals, bestLiterals = op, vals, literals
		}
	}
	return best, bestVals
}

func matchTemplate(tmpl, segs []string) (map[string]string, int, bool) {
	vals := map[string]string{}
	literals := 0
	for i, t := range tmpl {
		s := segs[i]
		open := strings.IndexByte(t, '{')
		if open < 0 {
			if t != s {
				return nil, 0, false
			}
			literals++
			continue
		}
		// A segment such as "{id}" or "v{major}.json": literal prefix and suffix around one
		// parameter; checkStructure allows at most one parameter per segment.
		close := strings.IndexByte(t, '}')
		prefix, name, suffix := t[:open], t[open+1:close], t[close+1:]
		if len(s) <= len(prefix)+len(suffix) || !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) {
			return nil, 0, false
		}
		vals[name] = s[len(prefix) : len(s)-len(suffix)]
	}
	return vals, literals, true
}

// HasOperation reports whether the document describes method on path (a concrete path such as
// /v1/videos/video_123, optionally with a query).
func (d *Doc) HasOperation(method, path string) bool {
	p, _, _ := strings.Cut(path, "?")
	op, _ := d.find(strings.ToUpper(method), p)
	return op != nil
}

// Operations lists the documented operations as "METHOD /template", sorted.
func (d *Doc) Operations() []string {
	out := make([]string, 0, len(d.ops))
	for _, op := range d.ops {
		out = append(out, op.method+" "+op.template)
	}
	sort.Strings(out)
	return out
}

// --- JSON pointer and $ref helpers -------------------------------------------------------

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}

func unescapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}

// encodePointer percent-encodes each token of a JSON pointer for use as a URI fragment.
func encodePointer(ptr string) string {
	toks := strings.Split(ptr, "/")
	for i, t := range toks {
		toks[i] = url.PathEscape(t)
	}
	return strings.Join(toks, "/")
}

func ptrOrRoot(ptr string) string {
	if ptr == "" {
		return "(root)"
	}
	return ptr
}

// pointerGet returns the value at a JSON pointer ("" is the whole document).
func pointerGet(root any, ptr string) (any, error) {
	if ptr == "" {
		return root, nil
	}
	if !strings.HasPrefix(ptr, "/") {
		return nil, fmt.Errorf("%q is not a JSON pointer", ptr)
	}
	cur := root
	for _, tok := range strings.Split(ptr[1:], "/") {
		tok = unescapeToken(tok)
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[tok]
			if !ok {
				return nil, fmt.Errorf("%s: no member %q", ptr, tok)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(c) || (len(tok) > 1 && tok[0] == '0') {
				return nil, fmt.Errorf("%s: no element %q", ptr, tok)
			}
			cur = c[i]
		default:
			return nil, fmt.Errorf("%s: cannot descend into a %T at %q", ptr, cur, tok)
		}
	}
	return cur, nil
}

// resolveRef resolves a local reference "#/a/b" to its value and JSON pointer.
func resolveRef(root any, ref string) (any, string, error) {
	frag, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil, "", fmt.Errorf("$ref %q: only references inside the document (#/…) are supported", ref)
	}
	ptr, err := url.PathUnescape(frag)
	if err != nil {
		return nil, "", fmt.Errorf("$ref %q: %v", ref, err)
	}
	v, err := pointerGet(root, ptr)
	if err != nil {
		return nil, "", fmt.Errorf("$ref %q does not resolve: %v", ref, err)
	}
	return v, ptr, nil
}

// deref follows OpenAPI (non-schema) $refs until an object without $ref, and returns it with
// its JSON pointer.
func deref(root any, v any, ptr string) (map[string]any, string, error) {
	seen := map[string]bool{}
	for {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, ptr, fmt.Errorf("%s: expected an object", ptrOrRoot(ptr))
		}
		ref, has := m["$ref"]
		if !has {
			return m, ptr, nil
		}
		rs, ok := ref.(string)
		if !ok {
			return nil, ptr, fmt.Errorf("%s/$ref: must be a string", ptr)
		}
		if seen[rs] {
			return nil, ptr, fmt.Errorf("%s: $ref cycle through %q", ptr, rs)
		}
		seen[rs] = true
		target, tptr, err := resolveRef(root, rs)
		if err != nil {
			return nil, ptr, fmt.Errorf("%s: %v", ptr, err)
		}
		v, ptr = target, tptr
	}
}

func mapAt(root map[string]any, keys ...string) (map[string]any, bool) {
	cur := root
	for _, k := range keys {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return nil, false
		}
		cur = next
	}
	return cur, true
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
