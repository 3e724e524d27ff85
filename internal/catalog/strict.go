package catalog

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"gopkg.in/yaml.v3"
)

// Scalar types. Even with KnownFields, yaml.v3 is lax with two Go kinds: a bool field takes the
// YAML 1.1 words yes/on/y (quoted or not), and a string field takes any scalar, so "name: 42" or
// "family: 2.5" decode as the text of a number. checkScalars walks the parsed document alongside
// the Go type it is about to be decoded into and rejects those, with their line, before the strict
// decode runs; the Go field types stay plain bool and string, so callers are unaffected. Leaf
// types with their own UnmarshalYAML (the enums and Rate, yaml.go) are checked by running that
// decoder, so every wrong scalar in the file is reported at once. Structure errors (a list where
// a string belongs) and unknown keys are left to the strict decoder. A null value (key: ~, or a
// key with no value) means the key is absent, as the decoder treats it.

// scalarErrors checks a catalog document. A node reached more than once through an alias is
// reported once.
func scalarErrors(doc *yaml.Node) error {
	var errs []error
	seen := map[string]bool{}
	for _, err := range checkScalars(doc, reflect.TypeOf(Catalog{}), "") {
		if !seen[err.Error()] {
			seen[err.Error()] = true
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

var unmarshalerType = reflect.TypeOf((*yaml.Unmarshaler)(nil)).Elem()

// checkScalars returns the wrong scalars under n, in file order. what names the key n is the
// value of.
func checkScalars(n *yaml.Node, t reflect.Type, what string) []error {
	if n == nil {
		return nil
	}
	if n.Kind == yaml.AliasNode {
		return checkScalars(n.Alias, t, what)
	}
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil
		}
		return checkScalars(n.Content[0], t, what)
	}
	t = deref(t)
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		// The enums and Rate decode themselves: run their decoder here too, so that every
		// wrong scalar in the file is reported together, in file order.
		decode := func() error { return reflect.New(t).Interface().(yaml.Unmarshaler).UnmarshalYAML(n) }
		err := decode()
		if err != nil {
			repair(n, decode)
		}
		return appendErr(nil, err)
	}
	var errs []error
	switch t.Kind() {
	case reflect.Bool:
		if n.Kind == yaml.ScalarNode {
			if err := strictBool(n, what); err != nil {
				errs = append(errs, err)
				toNull(n)
			}
		}
	case reflect.String:
		if n.Kind == yaml.ScalarNode {
			if err := strictString(n, what); err != nil {
				errs = append(errs, err)
				repair(n, func() error { return strictString(n, what) })
			}
		}
	case reflect.Slice, reflect.Array:
		if n.Kind == yaml.SequenceNode {
			// Keys inside list items are named from the item, like check.go names them
			// (packages.native_4k, not tenants.packages.native_4k).
			itemWhat := what
			if k := deref(t.Elem()).Kind(); k == reflect.Struct || k == reflect.Map {
				itemWhat = ""
			}
			for _, item := range n.Content {
				errs = append(errs, checkScalars(item, t.Elem(), itemWhat)...)
			}
		}
	case reflect.Struct, reflect.Map:
		if n.Kind != yaml.MappingNode {
			break
		}
		var fields map[string]reflect.Type
		if t.Kind() == reflect.Struct {
			fields = map[string]reflect.Type{}
			yamlFields(t, fields)
		}
		for i := 0; i+1 < len(n.Content); i += 2 {
			key, val := n.Content[i], n.Content[i+1]
			if key.ShortTag() == "!!merge" { // <<: *anchor merges the anchored mapping(s) in
				if val.Kind == yaml.SequenceNode {
					for _, m := range val.Content {
						errs = append(errs, checkScalars(m, t, what)...)
					}
				} else {
					errs = append(errs, checkScalars(val, t, what)...)
				}
				continue
			}
			if t.Kind() == reflect.Map {
				errs = append(errs, checkScalars(key, t.Key(), keyOf(what))...)
				errs = append(errs, checkScalars(val, t.Elem(), joinKey(what, key.Value))...)
			} else if ft, ok := fields[key.Value]; ok {
				errs = append(errs, checkScalars(val, ft, joinKey(what, key.Value))...)
			} else {
				// The strict decoder's finding, made here so that it does not stop the
				// other checks.
				msg := fmt.Sprintf("line %d: unknown key %q", key.Line, key.Value)
				if what != "" {
					msg += " under " + what
				}
				errs = append(errs, errors.New(msg))
			}
		}
	}
	return errs
}

// repair makes a wrong scalar decodable, after its problem is reported, so that the checks
// after the walk still run: its text as a string when that is what the file meant (name: 42,
// family: 2.5), else null, which the decoder takes as absent.
func repair(n *yaml.Node, check func() error) {
	tag, style := n.Tag, n.Style
	n.Tag, n.Style = "!!str", yaml.DoubleQuotedStyle
	if check() == nil {
		return
	}
	n.Tag, n.Style = tag, style
	toNull(n)
}

func toNull(n *yaml.Node) {
	n.Kind, n.Tag, n.Value, n.Style, n.Content = yaml.ScalarNode, "!!null", "", 0, nil
}

func deref(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}

func keyOf(what string) string {
	if what == "" {
		return "a key"
	}
	return "a key under " + what
}

func joinKey(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// yamlFields maps the YAML keys of struct type t to their field types, as yaml.v3 names them.
func yamlFields(t reflect.Type, into map[string]reflect.Type) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() && !f.Anonymous {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "-" {
			continue
		}
		if inline := strings.Contains(","+opts+",", ",inline,"); inline {
			if ft := deref(f.Type); ft.Kind() == reflect.Struct {
				yamlFields(ft, into)
			}
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		into[name] = f.Type
	}
}

// strictBool accepts the unquoted YAML booleans true and false only.
func strictBool(n *yaml.Node, what string) error {
	if n.ShortTag() == "!!bool" && (n.Value == "true" || n.Value == "false") {
		return nil
	}
	msg := fmt.Sprintf("line %d: %s must be true or false, not %s", n.Line, what, written(n))
	if quoted(n) && (n.Value == "true" || n.Value == "false") {
		msg += " (a quoted value is a string; write it without quotes)"
	}
	return errors.New(msg)
}

// strictString accepts a YAML string: plain text or quoted. A plain scalar that YAML reads as
// something else (42, 2.5, true, 2024-01-01) must be quoted to be a string.
func strictString(n *yaml.Node, what string) error {
	tag := n.ShortTag()
	if tag == "!!str" {
		return nil
	}
	if n.Style&yaml.TaggedStyle != 0 {
		return fmt.Errorf("line %d: %s must be a string, not a value tagged %s", n.Line, what, n.Tag)
	}
	kind := strings.TrimPrefix(tag, "!!")
	switch tag {
	case "!!int", "!!float":
		kind = "number"
	case "!!bool":
		kind = "boolean"
	case "!!timestamp":
		kind = "date"
	}
	return fmt.Errorf("line %d: %s must be a string, but %s is a YAML %s; quote it: %q", n.Line, what, n.Value, kind, n.Value)
}

func quoted(n *yaml.Node) bool {
	return n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
}

// written shows a scalar about as the file has it: quoted if it was quoted.
func written(n *yaml.Node) string {
	switch {
	case n.Style&yaml.DoubleQuotedStyle != 0:
		return fmt.Sprintf("%q", n.Value)
	case n.Style&yaml.SingleQuotedStyle != 0:
		return "'" + strings.ReplaceAll(n.Value, "'", "''") + "'"
	default:
		return n.Value
	}
}
