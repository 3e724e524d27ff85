package contract

import (
	"bytes"
	"errors"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
)

// Bounds on a request body. A legitimate body nests 5 levels deep
// (body → metadata → content → item → image_url) and holds a few hundred values, so these
// leave room for error reporting on sloppy input while keeping work per request small.
const (
	MaxBodyBytes = 1 << 20 // the HTTP layer should cap reads at this size too
	MaxDepth     = 16      // nested objects/arrays, the body itself counting as 1
	MaxValues    = 10000   // JSON values in the whole body
	MaxNameBytes = 128     // length of one object member name
)

// node is a parsed JSON value. Objects keep member order so that errors are reported in the
// order the client wrote the fields.
type node struct {
	kind    jsontext.Kind // normalized: n t f " 0 { [
	text    string        // unescaped string, or the raw text of a number
	members []member
	elems   []*node
}

type member struct {
	name string
	val  *node
}

// get returns the member called name, or nil. Names are case-sensitive, as JSON is.
func (n *node) get(name string) *node {
	for i := range n.members {
		if n.members[i].name == name {
			return n.members[i].val
		}
	}
	return nil
}

// Limits bound one parse: the body's bytes, the nesting of objects and arrays (the body itself
// counting as 1), the JSON values in the body and the bytes of one member name.
type Limits struct {
	Bytes, Depth, Values, NameBytes int
}

// requestLimits are a client request body's: the contract's.
var requestLimits = Limits{Bytes: MaxBodyBytes, Depth: MaxDepth, Values: MaxValues, NameBytes: MaxNameBytes}

type parser struct {
	dec    *jsontext.Decoder
	lim    Limits
	values int
}

// parse reads exactly one JSON value from body with every strictness rule of the contract:
// valid UTF-8, no duplicate names, no trailing data, bounded depth and size.
func parse(body []byte) (*node, *apierr.Error) { return parseWithin(body, requestLimits) }

// parseWithin is parse within lim. Duplicate names are detected here rather than by jsontext
// so that the error can name the duplicated path.
func parseWithin(body []byte, lim Limits) (*node, *apierr.Error) {
	if len(body) > lim.Bytes {
		return nil, invalidf("", "The request body is larger than %d bytes.", lim.Bytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, invalidf("", "The request body is empty; send a JSON object.")
	}
	if !utf8.Valid(body) {
		return nil, invalidf("", "The request body is not valid UTF-8.")
	}
	p := &parser{dec: jsontext.NewDecoder(bytes.NewReader(body), jsontext.AllowDuplicateNames(true)), lim: lim}
	root, err := p.value(1, "")
	if err != nil {
		return nil, err
	}
	// A decoder reads a stream of values, so "{} {}" would otherwise pass: demand EOF.
	if _, rerr := p.dec.ReadToken(); rerr != io.EOF {
		return nil, invalidf("", "The request body has data after the JSON object; send exactly one JSON object.")
	}
	return root, nil
}

func (p *parser) value(depth int, path string) (*node, *apierr.Error) {
	p.values++
	if p.values > p.lim.Values {
		return nil, invalidf(path, "The request body has more than %d JSON values.", p.lim.Values)
	}
	kind := p.dec.PeekKind()
	if (kind == '{' || kind == '[') && depth > p.lim.Depth {
		return nil, invalidf(path, "The request body nests JSON objects and arrays more than %d levels deep.", p.lim.Depth)
	}
	tok, err := p.dec.ReadToken()
	if err != nil {
		return nil, p.syntax(err, path)
	}
	switch k := tok.Kind(); k {
	case 'n', 't', 'f':
		return &node{kind: k}, nil
	case '"', '0':
		return &node{kind: k, text: tok.String()}, nil
	case '{':
		return p.object(depth, path)
	case '[':
		return p.array(depth, path)
	default:
		return nil, invalidf(path, "The request body is not valid JSON.")
	}
}

func (p *parser) object(depth int, path string) (*node, *apierr.Error) {
	n := &node{kind: '{'}
	var seen map[string]bool
	for p.dec.PeekKind() != '}' {
		tok, err := p.dec.ReadToken()
		if err != nil {
			return nil, p.syntax(err, path)
		}
		name := tok.String()
		if len(name) > p.lim.NameBytes {
			return nil, invalidf(path, "A field name in the request is longer than %d bytes.", p.lim.NameBytes)
		}
		child := joinName(path, name)
		if seen == nil {
			seen = make(map[string]bool)
		}
		if seen[name] {
			return nil, invalidf(child, "The field %s appears more than once.", child)
		}
		seen[name] = true
		v, perr := p.value(depth+1, child)
		if perr != nil {
			return nil, perr
		}
		n.members = append(n.members, member{name: name, val: v})
	}
	if _, err := p.dec.ReadToken(); err != nil {
		return nil, p.syntax(err, path)
	}
	return n, nil
}

func (p *parser) array(depth int, path string) (*node, *apierr.Error) {
	n := &node{kind: '['}
	for p.dec.PeekKind() != ']' {
		v, err := p.value(depth+1, joinIndex(path, len(n.elems)))
		if err != nil {
			return nil, err
		}
		n.elems = append(n.elems, v)
	}
	if _, err := p.dec.ReadToken(); err != nil {
		return nil, p.syntax(err, path)
	}
	return n, nil
}

// syntax turns a decoder error into a client-safe message: the decoder's own text names Go
// packages and internals, so only the byte offset is kept.
func (p *parser) syntax(err error, path string) *apierr.Error {
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		return invalidf(path, "The request body ends before the JSON value is complete.")
	}
	var serr *jsontext.SyntacticError
	if errors.As(err, &serr) {
		return invalidf(path, "The request body is not valid JSON (error near byte %d).", serr.ByteOffset)
	}
	return invalidf(path, "The request body is not valid JSON.")
}

func joinName(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func joinIndex(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}
