package apidoc

import (
	"strconv"
	"strings"
	"testing"
)

// A oneOf request body is validated exactly, as any validating client or proxy does: a body
// fitting two branches fails. An anyOf body passes with one branch or more, and names every
// branch when none fits.
func TestRequestBodyOneOfIsExactAndAnyOfIsInclusive(t *testing.T) {
	const tmpl = `openapi: 3.1.0
info:
  title: t
  version: "1"
paths:
  /things:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              KEYWORD:
                - $ref: '#/components/schemas/A'
                - $ref: '#/components/schemas/B'
      responses:
        '204':
          description: ok
components:
  schemas:
    A:
      type: object
      additionalProperties: false
      properties:
        x: {type: integer}
        a: {type: integer}
    B:
      type: object
      additionalProperties: false
      properties:
        x: {type: integer}
        b: {type: integer}
`
	both, onlyA, neither := `{"x":1}`, `{"a":1}`, `{"c":1}`
	tests := []struct {
		keyword, body, want string // want: "" valid, else a substring of the error
	}{
		{"oneOf", onlyA, ""},
		{"oneOf", both, "oneOf"},
		{"oneOf", neither, "oneOf"},
		{"anyOf", onlyA, ""},
		{"anyOf", both, ""},
		{"anyOf", neither, "as B:"},
	}
	for _, tt := range tests {
		t.Run(tt.keyword+" "+tt.body, func(t *testing.T) {
			d, err := Load(writeDoc(t, strings.Replace(tmpl, "KEYWORD", tt.keyword, 1)))
			if err != nil {
				t.Fatal(err)
			}
			err = d.ValidateRequest("POST", "/things", hdr("Content-Type", "application/json"), []byte(tt.body))
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tt.want != "" && err == nil:
				t.Fatal("accepted")
			case tt.want != "" && !strings.Contains(err.Error(), tt.want):
				t.Fatalf("error does not mention %q: %v", tt.want, err)
			}
		})
	}
}

// What code generators need from the document (docs/clients.md, "Generated clients"):
//   - every error schema is self-contained: an object whose error member declares message,
//     type, code and param itself, with no allOf that generators flatten into a type that
//     loses the members;
//   - every number has format double, so that generators use a 64-bit float for amounts;
//   - every $ref points at a whole component, which oapi-codegen requires.
func TestDocumentIsGeneratorFriendly(t *testing.T) {
	for _, path := range []string{docPath, "../../docs/admin-openapi.yaml"} {
		t.Run(path, func(t *testing.T) {
			d, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			schemas, _ := mapAt(d.root, "components", "schemas")
			for _, name := range sortedKeys(schemas) {
				if !strings.HasSuffix(name, "Error") && name != "ErrorEnvelope" {
					continue
				}
				s, _ := schemas[name].(map[string]any)
				if _, ok := s["allOf"]; ok {
					t.Errorf("%s: built with allOf; make it self-contained", name)
					continue
				}
				errm, ok := s["properties"].(map[string]any)["error"].(map[string]any)
				if !ok {
					continue // not an envelope (TaskError is a task's error member)
				}
				if ref, ok := errm["$ref"].(string); ok {
					errm, _, _ = deref(d.root, map[string]any{"$ref": ref}, "")
				}
				props, _ := errm["properties"].(map[string]any)
				for _, member := range []string{"message", "type", "code", "param"} {
					if _, ok := props[member]; !ok {
						t.Errorf("%s: error.%s is not declared", name, member)
					}
				}
			}
			walk(d.root, "", func(ptr string, m map[string]any) {
				if m["type"] == "number" && m["format"] != "double" {
					t.Errorf("%s: a number without format: double", ptr)
				}
				if ref, ok := m["$ref"].(string); ok && strings.Count(ref, "/") > 3 {
					t.Errorf("%s: $ref %s points inside a component", ptr, ref)
				}
			})
		})
	}
}

// walk calls f on every object of the tree with its JSON pointer.
func walk(v any, ptr string, f func(string, map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(ptr, v)
		for k, e := range v {
			walk(e, ptr+"/"+escapeToken(k), f)
		}
	case []any:
		for i, e := range v {
			walk(e, ptr+"/"+strconv.Itoa(i), f)
		}
	}
}
