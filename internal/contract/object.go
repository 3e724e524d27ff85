package contract

import (
	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
)

// Object is a request body parsed with every strictness rule of the contract (ParseObject):
// one JSON object of valid UTF-8, no duplicate member names, nothing after it, bounded depth
// and size. It is the one strict decoder of the service: the video and speech bodies are read
// from it here, and the asset library reads its flat bodies from it through Members.
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

// ParseObject parses body as one strict JSON object.
func ParseObject(body []byte) (Object, *apierr.Error) {
	o, err := parseObject(body)
	return Object{o}, err
}

// Members returns the object's members in the order they were written.
func (o Object) Members() []Member {
	out := make([]Member, len(o.o.n.members))
	for i, m := range o.o.n.members {
		out[i] = Member{Name: m.name, Value: Value{m.val}}
	}
	return out
}
