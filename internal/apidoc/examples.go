package apidoc

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ValidateExamples checks that every example in the document fits its schema: the example and
// examples of every schema and subschema, of every media type (request bodies with the same
// anyOf branch naming as ValidateRequest), and of every parameter and header. It returns all
// mismatches joined, or nil.
func (d *Doc) ValidateExamples() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	v := &exampleValidator{d: d, seen: map[string]bool{}}
	if schemas, ok := mapAt(d.root, "components", "schemas"); ok {
		for _, name := range sortedKeys(schemas) {
			v.schemaTree(schemas[name], "/components/schemas/"+escapeToken(name))
		}
	}
	paths, _ := d.root["paths"].(map[string]any)
	for _, tmpl := range sortedKeys(paths) {
		if strings.HasPrefix(tmpl, "x-") {
			continue
		}
		item, itemPtr, err := deref(d.root, paths[tmpl], "/paths/"+escapeToken(tmpl))
		if err != nil {
			continue
		}
		v.parameters(item["parameters"], itemPtr+"/parameters")
		for _, m := range methods {
			op, ok := item[m].(map[string]any)
			if !ok {
				continue
			}
			ptr := itemPtr + "/" + m
			v.parameters(op["parameters"], ptr+"/parameters")
			if rb, ok := op["requestBody"]; ok {
				v.body(rb, ptr+"/requestBody")
			}
			responses, _ := op["responses"].(map[string]any)
			for _, code := range sortedKeys(responses) {
				v.response(responses[code], ptr+"/responses/"+escapeToken(code))
			}
		}
	}
	for kind, fn := range map[string]func(any, string){
		"parameters":    v.param,
		"headers":       v.param,
		"requestBodies": v.body,
		"responses":     v.response,
	} {
		comps, _ := mapAt(d.root, "components", kind)
		for _, name := range sortedKeys(comps) {
			fn(comps[name], "/components/"+kind+"/"+escapeToken(name))
		}
	}
	return errors.Join(v.errs...)
}

type exampleValidator struct {
	d    *Doc
	seen map[string]bool // pointers of objects already visited
	errs []error
}

func (v *exampleValidator) fail(ptr string, err error) {
	v.errs = append(v.errs, fmt.Errorf("example %s: %v", ptr, err))
}

func (v *exampleValidator) visit(x any, ptr string) (map[string]any, string, bool) {
	m, mptr, err := deref(v.d.root, x, ptr)
	if err != nil || v.seen[mptr] {
		return nil, "", false
	}
	v.seen[mptr] = true
	return m, mptr, true
}

// Keywords whose values are schemas, maps of schemas, and arrays of schemas.
var (
	schemaKeywords      = []string{"additionalProperties", "items", "contains", "not", "if", "then", "else", "propertyNames", "unevaluatedItems", "unevaluatedProperties", "contentSchema", "additionalItems"}
	schemaMapKeywords   = []string{"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"}
	schemaArrayKeywords = []string{"allOf", "anyOf", "oneOf", "prefixItems"}
)

// schemaTree validates the example and examples of the schema at ptr and of every subschema
// written inside it ($refs are not followed: their targets are visited where they are written).
func (v *exampleValidator) schemaTree(x any, ptr string) {
	m, ok := x.(map[string]any)
	if !ok || v.seen[ptr] {
		return
	}
	v.seen[ptr] = true
	var values []any
	var where []string
	if ex, ok := m["example"]; ok {
		values, where = append(values, ex), append(where, ptr+"/example")
	}
	if exs, ok := m["examples"].([]any); ok {
		for i, ex := range exs {
			values, where = append(values, ex), append(where, ptr+"/examples/"+strconv.Itoa(i))
		}
	}
	if len(values) > 0 {
		s, err := v.d.compile(ptr)
		if err != nil {
			v.fail(ptr, err)
		} else {
			for i, ex := range values {
				if err := s.Validate(ex); err != nil {
					v.fail(where[i], errors.New(v.d.clean(err.Error())))
				}
			}
		}
	}
	for _, k := range schemaKeywords {
		if sub, ok := m[k]; ok {
			v.schemaTree(sub, ptr+"/"+k)
		}
	}
	for _, k := range schemaMapKeywords {
		subs, _ := m[k].(map[string]any)
		for _, name := range sortedKeys(subs) {
			v.schemaTree(subs[name], ptr+"/"+k+"/"+escapeToken(name))
		}
	}
	for _, k := range schemaArrayKeywords {
		subs, _ := m[k].([]any)
		for i, sub := range subs {
			v.schemaTree(sub, ptr+"/"+k+"/"+strconv.Itoa(i))
		}
	}
}

func (v *exampleValidator) parameters(x any, ptr string) {
	list, _ := x.([]any)
	for i, p := range list {
		v.param(p, ptr+"/"+strconv.Itoa(i))
	}
}

// param handles a Parameter or Header Object: examples are values of the parameter's schema.
func (v *exampleValidator) param(x any, ptr string) {
	m, ptr, ok := v.visit(x, ptr)
	if !ok {
		return
	}
	if content, ok := m["content"].(map[string]any); ok {
		v.content(content, ptr+"/content", false)
		return
	}
	sch, ok := m["schema"]
	if !ok {
		return
	}
	v.schemaTree(sch, ptr+"/schema")
	s, err := v.d.compile(ptr + "/schema")
	if err != nil {
		v.fail(ptr, err)
		return
	}
	v.examplesOf(m, ptr, &media{schema: s})
}

func (v *exampleValidator) body(x any, ptr string) {
	m, ptr, ok := v.visit(x, ptr)
	if !ok {
		return
	}
	content, _ := m["content"].(map[string]any)
	v.content(content, ptr+"/content", true)
}

func (v *exampleValidator) response(x any, ptr string) {
	m, ptr, ok := v.visit(x, ptr)
	if !ok {
		return
	}
	headers, _ := m["headers"].(map[string]any)
	for _, name := range sortedKeys(headers) {
		v.param(headers[name], ptr+"/headers/"+escapeToken(name))
	}
	content, _ := m["content"].(map[string]any)
	v.content(content, ptr+"/content", false)
}

func (v *exampleValidator) content(content map[string]any, ptr string, request bool) {
	for _, key := range sortedKeys(content) {
		mp := ptr + "/" + escapeToken(key)
		mm, ok := content[key].(map[string]any)
		if !ok || v.seen[mp] {
			continue
		}
		v.seen[mp] = true
		if sch, ok := mm["schema"]; ok {
			v.schemaTree(sch, mp+"/schema")
		}
		md, err := v.d.buildMedia(key, mm, mp, request)
		if err != nil {
			v.fail(mp, err)
			continue
		}
		v.examplesOf(mm, mp, md)
	}
}

// examplesOf validates the example and the Example Objects' values of a media type, parameter
// or header object against md.
func (v *exampleValidator) examplesOf(m map[string]any, ptr string, md *media) {
	if ex, ok := m["example"]; ok {
		v.check(md, ex, ptr+"/example")
	}
	exs, _ := m["examples"].(map[string]any)
	for _, name := range sortedKeys(exs) {
		em, eptr, err := deref(v.d.root, exs[name], ptr+"/examples/"+escapeToken(name))
		if err != nil {
			continue
		}
		if val, ok := em["value"]; ok { // externalValue examples are not fetched
			v.check(md, val, eptr+"/value")
		}
	}
}

func (v *exampleValidator) check(md *media, val any, ptr string) {
	if md.schema == nil && len(md.branches) == 0 {
		return
	}
	// Text media types carry their example as a string, which is what validateBody checks.
	if err := v.d.validateValue(md, val); err != nil {
		v.fail(ptr, errors.New(strings.TrimSpace(err.Error())))
	}
}
