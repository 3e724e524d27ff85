package apidoc

import (
	"fmt"
	"mime"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// checkStructure checks the OpenAPI 3.1 object structure that schema compilation does not
// cover: required and known fields of every object the document uses, path templates against
// their path parameters, unique operationIds, response codes, security references, media type
// names, and that every $ref in the document resolves. Schemas themselves are checked by the
// JSON Schema compiler (against the 2020-12 meta-schema) in Load.
//
// The rules follow the OpenAPI Specification 3.1 ("fixed fields" of each object). Extension
// fields (x-…) are allowed everywhere the specification allows them.
func checkStructure(root map[string]any) []string {
	c := &checker{root: root, opIDs: map[string]string{}, tags: map[string]bool{}}
	c.document()
	c.refs(root, "", false)
	return c.probs
}

type checker struct {
	root  map[string]any
	probs []string
	opIDs map[string]string // operationId → pointer
	tags  map[string]bool   // declared tag names
}

func (c *checker) add(ptr, format string, args ...any) {
	c.probs = append(c.probs, ptrOrRoot(ptr)+": "+fmt.Sprintf(format, args...))
}

var (
	reOpenAPI       = regexp.MustCompile(`^3\.1\.\d+$`)
	reComponentName = regexp.MustCompile(`^[a-zA-Z0-9.\-_]+$`)
	reResponseCode  = regexp.MustCompile(`^([1-5]\d\d|[1-5]XX|default)$`)
	reTemplateParam = regexp.MustCompile(`\{([^{}/]+)\}`)
)

// fields checks that v is an object whose members are all in allowed (or x- extensions), and
// that every required member is present. It returns the object, or nil.
func (c *checker) fields(v any, ptr string, required, allowed []string) map[string]any {
	m, ok := v.(map[string]any)
	if !ok {
		c.add(ptr, "must be an object")
		return nil
	}
	for _, k := range sortedKeys(m) {
		if !slices.Contains(allowed, k) && !slices.Contains(required, k) && !strings.HasPrefix(k, "x-") {
			c.add(ptr, "unknown field %q", k)
		}
	}
	for _, k := range required {
		if _, ok := m[k]; !ok {
			c.add(ptr, "missing required field %q", k)
		}
	}
	return m
}

func (c *checker) isString(m map[string]any, key, ptr string, nonEmpty bool) {
	v, ok := m[key]
	if !ok {
		return
	}
	s, isStr := v.(string)
	if !isStr {
		c.add(ptr+"/"+key, "must be a string")
	} else if nonEmpty && strings.TrimSpace(s) == "" {
		c.add(ptr+"/"+key, "must not be empty")
	}
}

func (c *checker) isBool(m map[string]any, key, ptr string) {
	if v, ok := m[key]; ok {
		if _, isBool := v.(bool); !isBool {
			c.add(ptr+"/"+key, "must be a boolean")
		}
	}
}

// deref follows a $ref for an object that may be a Reference Object. Broken refs are
// reported by refs(); here they just stop the walk.
func (c *checker) deref(v any, ptr string) (any, string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return v, ptr, true
	}
	if _, has := m["$ref"]; !has {
		return v, ptr, true
	}
	for k := range m {
		if k != "$ref" && k != "summary" && k != "description" {
			c.add(ptr, "a Reference Object takes only $ref, summary and description, not %q", k)
		}
	}
	t, tptr, err := deref(c.root, v, ptr)
	if err != nil {
		return nil, ptr, false
	}
	return t, tptr, true
}

func (c *checker) document() {
	m := c.fields(c.root, "", []string{"openapi", "info", "paths"},
		[]string{"jsonSchemaDialect", "servers", "webhooks", "components", "security", "tags", "externalDocs"})
	if m == nil {
		return
	}
	if s, _ := m["openapi"].(string); !reOpenAPI.MatchString(s) {
		c.add("/openapi", "must be a 3.1.x version string, not %v", m["openapi"])
	}
	if d, ok := m["jsonSchemaDialect"]; ok {
		switch d {
		case "https://spec.openapis.org/oas/3.1/dialect/base", "https://json-schema.org/draft/2020-12/schema":
		default:
			c.add("/jsonSchemaDialect", "only the OpenAPI 3.1 base dialect or JSON Schema 2020-12 is supported, not %v", d)
		}
	}
	c.info(m["info"])
	c.servers(m["servers"], "/servers")
	if tags, ok := m["tags"]; ok {
		list, ok := tags.([]any)
		if !ok {
			c.add("/tags", "must be an array")
		}
		for i, t := range list {
			ptr := "/tags/" + strconv.Itoa(i)
			tm := c.fields(t, ptr, []string{"name"}, []string{"description", "externalDocs"})
			if tm == nil {
				continue
			}
			c.isString(tm, "name", ptr, true)
			name := str(tm["name"])
			if c.tags[name] {
				c.add(ptr, "duplicate tag %q", name)
			}
			c.tags[name] = true
		}
	}
	c.components(m["components"])
	if sec, ok := m["security"]; ok {
		c.security(sec, "/security")
	}
	c.paths(m["paths"])
}

func (c *checker) info(v any) {
	m := c.fields(v, "/info", []string{"title", "version"},
		[]string{"summary", "description", "termsOfService", "contact", "license"})
	if m == nil {
		return
	}
	c.isString(m, "title", "/info", true)
	c.isString(m, "version", "/info", true)
	c.isString(m, "summary", "/info", false)
	c.isString(m, "description", "/info", false)
	if l, ok := m["license"]; ok {
		lm := c.fields(l, "/info/license", []string{"name"}, []string{"identifier", "url"})
		if lm != nil {
			if _, a := lm["identifier"]; a {
				if _, b := lm["url"]; b {
					c.add("/info/license", "identifier and url are mutually exclusive")
				}
			}
		}
	}
	if ct, ok := m["contact"]; ok {
		c.fields(ct, "/info/contact", nil, []string{"name", "url", "email"})
	}
}

func (c *checker) servers(v any, ptr string) {
	if v == nil {
		return
	}
	list, ok := v.([]any)
	if !ok {
		c.add(ptr, "must be an array")
		return
	}
	for i, s := range list {
		sp := ptr + "/" + strconv.Itoa(i)
		m := c.fields(s, sp, []string{"url"}, []string{"description", "variables"})
		if m == nil {
			continue
		}
		c.isString(m, "url", sp, true)
		vars, _ := m["variables"].(map[string]any)
		for _, match := range reTemplateParam.FindAllStringSubmatch(str(m["url"]), -1) {
			if _, ok := vars[match[1]]; !ok {
				c.add(sp+"/url", "variable {%s} is not defined under variables", match[1])
			}
		}
		for _, name := range sortedKeys(vars) {
			vp := sp + "/variables/" + escapeToken(name)
			vm := c.fields(vars[name], vp, []string{"default"}, []string{"enum", "description"})
			if vm == nil {
				continue
			}
			c.isString(vm, "default", vp, false)
			if e, ok := vm["enum"]; ok {
				el, ok := e.([]any)
				if !ok || len(el) == 0 {
					c.add(vp+"/enum", "must be a non-empty array")
				} else if !slices.Contains(el, vm["default"]) {
					c.add(vp, "default must be one of enum")
				}
			}
		}
	}
}

var componentKinds = []string{"schemas", "responses", "parameters", "examples", "requestBodies", "headers", "securitySchemes", "links", "callbacks", "pathItems"}

func (c *checker) components(v any) {
	if v == nil {
		return
	}
	m := c.fields(v, "/components", nil, componentKinds)
	if m == nil {
		return
	}
	for _, kind := range componentKinds {
		kv, ok := m[kind]
		if !ok {
			continue
		}
		km, ok := kv.(map[string]any)
		if !ok {
			c.add("/components/"+kind, "must be an object")
			continue
		}
		for _, name := range sortedKeys(km) {
			ptr := "/components/" + kind + "/" + escapeToken(name)
			if !reComponentName.MatchString(name) {
				c.add(ptr, "component names may use only A-Z a-z 0-9 . - _")
			}
			switch kind {
			case "schemas":
				c.schema(km[name], ptr)
			case "responses":
				c.response(km[name], ptr)
			case "parameters":
				c.parameter(km[name], ptr)
			case "examples":
				c.example(km[name], ptr)
			case "requestBodies":
				c.requestBody(km[name], ptr)
			case "headers":
				c.header(km[name], ptr)
			case "securitySchemes":
				c.securityScheme(km[name], ptr)
			}
		}
	}
}

func (c *checker) securityScheme(v any, ptr string) {
	v, ptr, ok := c.deref(v, ptr)
	if !ok {
		return
	}
	m := c.fields(v, ptr, []string{"type"}, []string{"description", "name", "in", "scheme", "bearerFormat", "flows", "openIdConnectUrl"})
	if m == nil {
		return
	}
	switch m["type"] {
	case "apiKey":
		if str(m["name"]) == "" {
			c.add(ptr, "an apiKey scheme needs name")
		}
		if !slices.Contains([]string{"query", "header", "cookie"}, str(m["in"])) {
			c.add(ptr+"/in", "must be query, header or cookie")
		}
	case "http":
		if str(m["scheme"]) == "" {
			c.add(ptr, "an http scheme needs scheme")
		}
	case "oauth2":
		if _, ok := m["flows"].(map[string]any); !ok {
			c.add(ptr, "an oauth2 scheme needs flows")
		}
	case "openIdConnect":
		if str(m["openIdConnectUrl"]) == "" {
			c.add(ptr, "an openIdConnect scheme needs openIdConnectUrl")
		}
	case "mutualTLS":
	default:
		c.add(ptr+"/type", "must be apiKey, http, mutualTLS, oauth2 or openIdConnect, not %v", m["type"])
	}
}

func (c *checker) security(v any, ptr string) {
	list, ok := v.([]any)
	if !ok {
		c.add(ptr, "must be an array")
		return
	}
	schemes, _ := mapAt(c.root, "components", "securitySchemes")
	for i, r := range list {
		rp := ptr + "/" + strconv.Itoa(i)
		rm, ok := r.(map[string]any)
		if !ok {
			c.add(rp, "must be an object")
			continue
		}
		for _, name := range sortedKeys(rm) {
			if _, ok := schemes[name]; !ok {
				c.add(rp, "security scheme %q is not defined in components/securitySchemes", name)
			}
			if _, ok := rm[name].([]any); !ok {
				c.add(rp+"/"+escapeToken(name), "must be an array of scopes")
			}
		}
	}
}

func (c *checker) paths(v any) {
	m, ok := v.(map[string]any)
	if !ok {
		c.add("/paths", "must be an object")
		return
	}
	shapes := map[string]string{} // template with parameter names erased → template
	for _, tmpl := range sortedKeys(m) {
		ptr := "/paths/" + escapeToken(tmpl)
		if strings.HasPrefix(tmpl, "x-") {
			continue
		}
		if !strings.HasPrefix(tmpl, "/") {
			c.add(ptr, "a path must start with /")
		}
		if strings.Contains(tmpl, "?") || strings.Contains(tmpl, "#") {
			c.add(ptr, "a path must not contain a query or fragment")
		}
		names, ok := c.templateNames(tmpl, ptr)
		if !ok {
			continue
		}
		shape := reTemplateParam.ReplaceAllString(tmpl, "{}")
		if other, dup := shapes[shape]; dup {
			c.add(ptr, "is equivalent to %q: templated paths with the same shape are ambiguous", other)
		}
		shapes[shape] = tmpl
		c.pathItem(m[tmpl], ptr, tmpl, names)
	}
}

// templateNames returns the parameter names of a path template, checking that braces pair up,
// that each segment holds at most one parameter and that no name repeats.
func (c *checker) templateNames(tmpl, ptr string) ([]string, bool) {
	var names []string
	for _, seg := range strings.Split(tmpl, "/") {
		open, close := strings.Count(seg, "{"), strings.Count(seg, "}")
		if open != close || open > 1 {
			c.add(ptr, "segment %q: at most one {parameter} per segment, with balanced braces", seg)
			return nil, false
		}
		if open == 1 {
			mm := reTemplateParam.FindStringSubmatch(seg)
			if mm == nil {
				c.add(ptr, "segment %q: malformed {parameter}", seg)
				return nil, false
			}
			if slices.Contains(names, mm[1]) {
				c.add(ptr, "parameter {%s} appears twice", mm[1])
			}
			names = append(names, mm[1])
		}
	}
	return names, true
}

func (c *checker) pathItem(v any, ptr, tmpl string, names []string) {
	v, ptr, ok := c.deref(v, ptr)
	if !ok {
		return
	}
	allowed := append([]string{"summary", "description", "servers", "parameters"}, methods...)
	m := c.fields(v, ptr, nil, allowed)
	if m == nil {
		return
	}
	c.servers(m["servers"], ptr+"/servers")
	shared := c.parameters(m["parameters"], ptr+"/parameters")
	ops := 0
	for _, method := range methods {
		if op, ok := m[method]; ok {
			ops++
			c.operation(op, ptr+"/"+method, tmpl, names, shared)
		}
	}
	if ops == 0 {
		c.add(ptr, "has no operations")
	}
}

// parameters checks a parameter list and returns the parameters by "in:name".
func (c *checker) parameters(v any, ptr string) map[string]map[string]any {
	out := map[string]map[string]any{}
	if v == nil {
		return out
	}
	list, ok := v.([]any)
	if !ok {
		c.add(ptr, "must be an array")
		return out
	}
	for i, p := range list {
		pp := ptr + "/" + strconv.Itoa(i)
		pv, _, ok := c.deref(p, pp)
		if !ok {
			continue
		}
		pm := c.parameter(pv, pp)
		if pm == nil {
			continue
		}
		name := str(pm["name"])
		if str(pm["in"]) == "header" {
			name = strings.ToLower(name) // header names are case-insensitive
		}
		key := str(pm["in"]) + ":" + name
		if _, dup := out[key]; dup {
			c.add(pp, "duplicate parameter %s", key)
		}
		out[key] = pm
	}
	return out
}

var paramFields = []string{"description", "required", "deprecated", "allowEmptyValue", "style", "explode", "allowReserved", "schema", "example", "examples", "content"}

func (c *checker) parameter(v any, ptr string) map[string]any {
	v, ptr, ok := c.deref(v, ptr)
	if !ok {
		return nil
	}
	m := c.fields(v, ptr, []string{"name", "in"}, paramFields)
	if m == nil {
		return nil
	}
	c.isString(m, "name", ptr, true)
	c.isBool(m, "required", ptr)
	switch m["in"] {
	case "path":
		if m["required"] != true {
			c.add(ptr, "a path parameter must have required: true")
		}
	case "query", "header", "cookie":
	default:
		c.add(ptr+"/in", "must be path, query, header or cookie, not %v", m["in"])
	}
	c.schemaOrContent(m, ptr)
	return m
}

func (c *checker) header(v any, ptr string) {
	v, ptr, ok := c.deref(v, ptr)
	if !ok {
		return
	}
	allowed := slices.DeleteFunc(slices.Clone(paramFields), func(s string) bool { return s == "allowEmptyValue" || s == "allowReserved" })
	m := c.fields(v, ptr, nil, allowed)
	if m == nil {
		return
	}
	c.isBool(m, "required", ptr)
	if s, ok := m["style"]; ok && s != "simple" {
		c.add(ptr+"/style", "a header's style must be simple")
	}
	c.schemaOrContent(m, ptr)
}

// schemaOrContent: a parameter or header has exactly one of schema and content (content with
// exactly one media type), and at most one of example and examples.
func (c *checker) schemaOrContent(m map[string]any, ptr string) {
	sch, hasSchema := m["schema"]
	content, hasContent := m["content"]
	if hasSchema == hasContent {
		c.add(ptr, "needs exactly one of schema and content")
	}
	if hasSchema {
		c.schema(sch, ptr+"/schema")
	}
	if hasContent {
		cm, ok := content.(map[string]any)
		if !ok || len(cm) != 1 {
			c.add(ptr+"/content", "must hold exactly one media type")
		} else {
			c.content(cm, ptr+"/content")
		}
	}
	c.examples(m, ptr)
}

func (c *checker) examples(m map[string]any, ptr string) {
	_, hasExample := m["example"]
	ex, hasExamples := m["examples"]
	if hasExample && hasExamples {
		c.add(ptr, "example and examples are mutually exclusive")
	}
	if hasExamples {
		em, ok := ex.(map[string]any)
		if !ok {
			c.add(ptr+"/examples", "must be a map of Example Objects")
			return
		}
		for _, name := range sortedKeys(em) {
			c.example(em[name], ptr+"/examples/"+escapeToken(name))
		}
	}
}

func (c *checker) example(v any, ptr string) {
	v, ptr, ok := c.deref(v, ptr)
	if !ok {
		return
	}
	m := c.fields(v, ptr, nil, []string{"summary", "description", "value", "externalValue"})
	if m == nil {
		return
	}
	_, hasValue := m["value"]
	_, hasExternal := m["externalValue"]
	if hasValue == hasExternal {
		c.add(ptr, "needs exactly one of value and externalValue")
	}
}

func (c *checker) content(v any, ptr string) {
	m, ok := v.(map[string]any)
	if !ok || len(m) == 0 {
		c.add(ptr, "must be a non-empty map of media types")
		return
	}
	for _, key := range sortedKeys(m) {
		mp := ptr + "/" + escapeToken(key)
		if _, _, err := mime.ParseMediaType(key); err != nil {
			c.add(mp, "is not a media type: %v", err)
		}
		mm := c.fields(m[key], mp, nil, []string{"schema", "example", "examples", "encoding"})
		if mm == nil {
			continue
		}
		if sch, ok := mm["schema"]; ok {
			c.schema(sch, mp+"/schema")
		}
		c.examples(mm, mp)
	}
}

func (c *checker) requestBody(v any, ptr string) {
	v, ptr, ok := c.deref(v, ptr)
	if !ok {
		return
	}
	m := c.fields(v, ptr, []string{"content"}, []string{"description", "required"})
	if m == nil {
		return
	}
	c.isBool(m, "required", ptr)
	c.content(m["content"], ptr+"/content")
}

func (c *checker) response(v any, ptr string) {
	v, ptr, ok := c.deref(v, ptr)
	if !ok {
		return
	}
	m := c.fields(v, ptr, []string{"description"}, []string{"headers", "content", "links"})
	if m == nil {
		return
	}
	c.isString(m, "description", ptr, false)
	if h, ok := m["headers"]; ok {
		hm, ok := h.(map[string]any)
		if !ok {
			c.add(ptr+"/headers", "must be an object")
		}
		for _, name := range sortedKeys(hm) {
			c.header(hm[name], ptr+"/headers/"+escapeToken(name))
		}
	}
	if ct, ok := m["content"]; ok {
		c.content(ct, ptr+"/content")
	}
}

func (c *checker) operation(v any, ptr, tmpl string, names []string, shared map[string]map[string]any) {
	m := c.fields(v, ptr, []string{"responses"},
		[]string{"tags", "summary", "description", "externalDocs", "operationId", "parameters", "requestBody", "callbacks", "deprecated", "security", "servers"})
	if m == nil {
		return
	}
	if id, ok := m["operationId"]; ok {
		s, isStr := id.(string)
		if !isStr || s == "" {
			c.add(ptr+"/operationId", "must be a non-empty string")
		} else if other, dup := c.opIDs[s]; dup {
			c.add(ptr+"/operationId", "%q is also used by %s", s, other)
		} else {
			c.opIDs[s] = ptr
		}
	}
	if tags, ok := m["tags"]; ok {
		list, _ := tags.([]any)
		for i, t := range list {
			if s, ok := t.(string); !ok || !c.tags[s] {
				c.add(ptr+"/tags/"+strconv.Itoa(i), "tag %v is not declared in the top-level tags", t)
			}
		}
	}
	if sec, ok := m["security"]; ok {
		c.security(sec, ptr+"/security")
	}
	c.servers(m["servers"], ptr+"/servers")
	own := c.parameters(m["parameters"], ptr+"/parameters")
	// Every template parameter is declared as a path parameter, and the other way round.
	for _, n := range names {
		if own["path:"+n] == nil && shared["path:"+n] == nil {
			c.add(ptr, "path parameter {%s} of %s is not declared", n, tmpl)
		}
	}
	for _, params := range []map[string]map[string]any{shared, own} {
		for key := range params {
			if name, ok := strings.CutPrefix(key, "path:"); ok && !slices.Contains(names, name) {
				c.add(ptr, "path parameter %q does not appear in %s", name, tmpl)
			}
		}
	}
	if rb, ok := m["requestBody"]; ok {
		c.requestBody(rb, ptr+"/requestBody")
	}
	responses, ok := m["responses"].(map[string]any)
	if !ok || len(responses) == 0 {
		c.add(ptr+"/responses", "must list at least one response")
		return
	}
	for _, code := range sortedKeys(responses) {
		rp := ptr + "/responses/" + escapeToken(code)
		if strings.HasPrefix(code, "x-") {
			continue
		}
		if !reResponseCode.MatchString(code) {
			c.add(rp, "response keys are HTTP status codes (200), ranges (4XX) or default")
		}
		c.response(responses[code], rp)
	}
}

// refs walks the whole document and checks that every $ref is a string that resolves. Literal
// data (example, examples of a schema, const, enum, default and Example Object values) is
// skipped: a "$ref" member there is data, not a reference.
func (c *checker) refs(v any, ptr string, inExample bool) {
	switch v := v.(type) {
	case map[string]any:
		for _, k := range sortedKeys(v) {
			kp := ptr + "/" + escapeToken(k)
			switch {
			case k == "$ref":
				s, ok := v[k].(string)
				if !ok {
					c.add(kp, "must be a string")
				} else if _, _, err := resolveRef(c.root, s); err != nil {
					c.add(kp, "%v", err)
				}
			case k == "example" || k == "const" || k == "enum" || k == "default":
			case k == "value" && inExample:
			case k == "examples":
				if m, ok := v[k].(map[string]any); ok { // Example Objects by name
					for _, name := range sortedKeys(m) {
						c.refs(m[name], kp+"/"+escapeToken(name), true)
					}
				} // an array: a schema's literal examples
			default:
				c.refs(v[k], kp, false)
			}
		}
	case []any:
		for i, e := range v {
			c.refs(e, ptr+"/"+strconv.Itoa(i), false)
		}
	}
}

// schemaKeywordSet is every keyword of JSON Schema 2020-12 (core, applicator, unevaluated,
// validation, meta-data, format, content) plus the OpenAPI 3.1 vocabulary. An unknown keyword
// is legal JSON Schema but constrains nothing, so a misspelling such as additionalProperty
// would silently loosen the document; checkStructure rejects it instead.
var schemaKeywordSet = map[string]bool{}

func init() {
	for _, k := range strings.Fields(`$schema $id $ref $anchor $dynamicRef $dynamicAnchor $vocabulary $comment $defs
		allOf anyOf oneOf not if then else dependentSchemas prefixItems items contains properties
		patternProperties additionalProperties propertyNames unevaluatedItems unevaluatedProperties
		type const enum multipleOf maximum exclusiveMaximum minimum exclusiveMinimum maxLength minLength
		pattern maxItems minItems uniqueItems maxContains minContains maxProperties minProperties required
		dependentRequired format contentEncoding contentMediaType contentSchema title description default
		deprecated readOnly writeOnly examples discriminator xml externalDocs example`) {
		schemaKeywordSet[k] = true
	}
}

// schema checks the keywords of a schema and of every subschema written inside it.
func (c *checker) schema(v any, ptr string) {
	m, ok := v.(map[string]any)
	if !ok {
		if _, isBool := v.(bool); !isBool {
			c.add(ptr, "a schema must be an object or a boolean")
		}
		return
	}
	for _, k := range sortedKeys(m) {
		if !schemaKeywordSet[k] && !strings.HasPrefix(k, "x-") {
			c.add(ptr, "unknown JSON Schema keyword %q", k)
		}
	}
	for _, k := range schemaKeywords {
		if sub, ok := m[k]; ok {
			c.schema(sub, ptr+"/"+k)
		}
	}
	for _, k := range schemaMapKeywords {
		subs, _ := m[k].(map[string]any)
		for _, name := range sortedKeys(subs) {
			c.schema(subs[name], ptr+"/"+k+"/"+escapeToken(name))
		}
	}
	for _, k := range schemaArrayKeywords {
		subs, _ := m[k].([]any)
		for i, sub := range subs {
			c.schema(sub, ptr+"/"+k+"/"+strconv.Itoa(i))
		}
	}
}
