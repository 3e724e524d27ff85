package contract

import (
	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
)

// Object is a request body parsed with every strictness rule of the contract (ParseObject):
// one JSON object of valid UTF-8, no duplicate member names, nothing after it, bounded depth
// and size. It is the one strict decoder of the service: the video and speech bodies are read
// from it here, the asset library and the admin API read their flat bodies from it through
// Members, and the OpenAPI checker (internal/apidoc) reads every JSON body it validates with
// ParseValue.
type Object struct{ o object }

// Member is one member of an Object, in the order the client wrote it.
type Member struct {
	Name  string
	Value Value
}

// Value is a parsed JSON value.
type Value struct{ n *node }

// Kind is the value's JSON kind: 'n' null, 't' and 'f' booleans, '"' string, '0' number,
// '{' object, '[' array (jsontext's kinds).
func (v Value) Kind() jsontext.Kind { return v.n.kind }

// Text is a string's unescaped text, or a number's literal text.
func (v Value) Text() string { return v.n.text }

// Members are an object's members in the order they were written (none for another kind).
func (v Value) Members() []Member { return members(v.n) }

// Elems are an array's elements in order (none for another kind).
func (v Value) Elems() []Value {
	out := make([]Value, len(v.n.elems))
	for i, e := range v.n.elems {
		out[i] = Value{e}
	}
	return out
}

// ParseObject parses body as one strict JSON object within the contract's request limits.
func ParseObject(body []byte) (Object, *apierr.Error) {
	o, err := parseObject(body)
	return Object{o}, err
}

// ParseValue parses body as one strict JSON value of any kind within lim: the strictness of
// ParseObject, with bounds of the caller's choosing (a checker of recorded responses needs
// larger ones than a client's request gets). Errors name the path as ParseObject's do.
func ParseValue(body []byte, lim Limits) (Value, *apierr.Error) {
	n, err := parseWithin(body, lim)
	if err != nil {
		return Value{}, err
	}
	return Value{n}, nil
}

// Members returns the object's members in the order they were written.
func (o Object) Members() []Member { return members(o.o.n) }

func members(n *node) []Member {
	out := make([]Member, len(n.members))
	for i, m := range n.members {
		out[i] = Member{Name: m.name, Value: Value{m.val}}
	}
	return out
}
