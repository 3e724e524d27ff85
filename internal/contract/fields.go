package contract

import (
	"errors"
	"math"
	"slices"
	"strconv"
	"strings"

	"mediagen/internal/apierr"
)

// object is a JSON object under validation together with its path, so every error can name
// the exact field.
type object struct {
	path string
	n    *node
}

func (o object) param(name string) string { return joinName(o.path, name) }

func (o object) has(name string) bool { return o.n.get(name) != nil }

// checkFields rejects the first member, in the order sent, that is not in allowed. hint may
// return a specific message for a field known to be misplaced or forbidden; where it returns
// "", the message is generic, with a suggestion when only the letter case differs.
func (o object) checkFields(allowed []string, where string, hint func(name string) string) *apierr.Error {
	for _, m := range o.n.members {
		if slices.Contains(allowed, m.name) {
			continue
		}
		param := o.param(m.name)
		if hint != nil {
			if msg := hint(m.name); msg != "" {
				return invalidf(param, "%s", msg)
			}
		}
		for _, a := range allowed {
			if strings.EqualFold(a, m.name) {
				return invalidf(param, "%s is not a supported field; field names are case-sensitive, use %s.", param, o.param(a))
			}
		}
		return invalidf(param, "%s is not a supported field on %s.", param, where)
	}
	return nil
}

// KindName describes a JSON value kind (a jsontext.Kind byte) for client messages.
func KindName(k byte) string {
	switch k {
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	return "an unknown value"
}

// expect returns the member called name, nil when it is absent, or an error when it is null or
// of another JSON type. Absent optional fields must be omitted, so null is never "absent".
func (o object) expect(name string, kind byte, want string) (*node, *apierr.Error) {
	v := o.n.get(name)
	if v == nil {
		return nil, nil
	}
	param := o.param(name)
	if v.kind == 'n' {
		return nil, invalidf(param, "%s must not be null; absent optional fields are omitted, never sent as null.", param)
	}
	k := byte(v.kind)
	if k == 'f' {
		k = 't'
	}
	if k != kind {
		return nil, invalidf(param, "%s must be %s, not %s.", param, want, KindName(k))
	}
	return v, nil
}

func (o object) str(name string) (string, bool, *apierr.Error) {
	v, err := o.expect(name, '"', "a string")
	if v == nil {
		return "", false, err
	}
	return v.text, true, nil
}

func (o object) boolean(name string) (*bool, *apierr.Error) {
	v, err := o.expect(name, 't', "a boolean (true or false)")
	if v == nil {
		return nil, err
	}
	b := v.kind == 't'
	return &b, nil
}

// integer accepts only integer literals: 5.0 and 5e0 are decimals to the contract even though
// they equal an integer.
func (o object) integer(name string) (int64, bool, *apierr.Error) {
	v, err := o.expect(name, '0', "an integer")
	if v == nil {
		return 0, false, err
	}
	param := o.param(name)
	if strings.ContainsAny(v.text, ".eE") {
		return 0, false, invalidf(param, "%s must be an integer, without a decimal point or exponent.", param)
	}
	n, perr := strconv.ParseInt(v.text, 10, 64)
	if perr != nil {
		return 0, false, invalidf(param, "%s is out of range.", param)
	}
	return n, true, nil
}

// intIn reads an optional integer that must lie in [lo, hi].
func (o object) intIn(name string, lo, hi int64) (*int, *apierr.Error) {
	n, ok, err := o.integer(name)
	if !ok {
		return nil, err
	}
	if n < lo || n > hi {
		return nil, invalidf(o.param(name), "%s must be an integer from %d to %d.", o.param(name), lo, hi)
	}
	i := int(n)
	return &i, nil
}

func (o object) number(name string) (float64, bool, *apierr.Error) {
	v, err := o.expect(name, '0', "a number")
	if v == nil {
		return 0, false, err
	}
	f, perr := strconv.ParseFloat(v.text, 64)
	if perr != nil && errors.Is(perr, strconv.ErrRange) && math.IsInf(f, 0) {
		return 0, false, invalidf(o.param(name), "%s must be a finite number.", o.param(name))
	}
	if perr != nil && !errors.Is(perr, strconv.ErrRange) {
		return 0, false, invalidf(o.param(name), "%s must be a number.", o.param(name))
	}
	return f, true, nil
}

// enum reads an optional string that must be one of values (case-sensitive).
func (o object) enum(name string, values ...string) (string, bool, *apierr.Error) {
	s, ok, err := o.str(name)
	if !ok {
		return "", false, err
	}
	if !slices.Contains(values, s) {
		return "", false, invalidf(o.param(name), "%s must be one of %s.", o.param(name), OrList(values))
	}
	return s, true, nil
}

func (o object) obj(name string) (object, bool, *apierr.Error) {
	v, err := o.expect(name, '{', "an object")
	if v == nil {
		return object{}, false, err
	}
	return object{path: o.param(name), n: v}, true, nil
}

// OrList renders values for messages: "a, b or c". The asset library's messages use it too.
func OrList(values []string) string {
	switch len(values) {
	case 0:
		return ""
	case 1:
		return values[0]
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}
