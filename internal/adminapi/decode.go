package adminapi

import (
	"bytes"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
	"mediagen/internal/contract"
	"mediagen/internal/money"
)

// Request bodies are read with the public contract's strict parser (contract.ParseObject:
// one JSON object of valid UTF-8, a member appears once, nothing after it, bounded depth) and
// then member by member against the route's fields: names are case-sensitive, an unknown
// member, a null or a wrong type is 400 naming the member. Admin bodies are flat.

// FieldKind is the JSON type a field takes.
type FieldKind byte

const (
	KindString  FieldKind = '"'
	KindInteger FieldKind = '0' // a JSON number without fraction or exponent
	KindDecimal FieldKind = 'd' // a JSON number read exactly as money (at most 6 decimals)
	KindBool    FieldKind = 'b'
	KindCap     FieldKind = 'c' // a spend cap: an amount as KindDecimal, or the string "none"
)

// Field is one member a body may have.
type Field struct {
	Name     string
	Kind     FieldKind
	Required bool
}

// Str, Int, Dec, Bool and Cap are optional fields; call Req on one to require it.
func Str(name string) Field  { return Field{Name: name, Kind: KindString} }
func Int(name string) Field  { return Field{Name: name, Kind: KindInteger} }
func Dec(name string) Field  { return Field{Name: name, Kind: KindDecimal} }
func Bool(name string) Field { return Field{Name: name, Kind: KindBool} }
func Cap(name string) Field  { return Field{Name: name, Kind: KindCap} }

// Req marks the field required.
func (f Field) Req() Field { f.Required = true; return f }

// Body is a decoded request body: the members that were sent.
type Body struct {
	strs  map[string]string
	ints  map[string]int64
	decs  map[string]money.Micros
	bools map[string]bool
	caps  map[string]money.Cap
}

// Str returns a string member ("" when absent).
func (b *Body) Str(name string) string { return b.strs[name] }

// Int returns an integer member (0 when absent).
func (b *Body) Int(name string) int64 { return b.ints[name] }

// Dec returns a decimal member (0 when absent).
func (b *Body) Dec(name string) money.Micros { return b.decs[name] }

// Bool returns a boolean member (false when absent).
func (b *Body) Bool(name string) bool { return b.bools[name] }

// Cap returns a cap member (money.NoCap when absent or "none").
func (b *Body) Cap(name string) money.Cap { return b.caps[name] }

// Has reports whether the member was sent.
func (b *Body) Has(name string) bool {
	_, s := b.strs[name]
	_, i := b.ints[name]
	_, d := b.decs[name]
	_, o := b.bools[name]
	_, c := b.caps[name]
	return s || i || d || o || c
}

const maxBodyMembers = 64

func invalid(param, format string, args ...any) *apierr.Error {
	return apierr.Invalid(param, fmt.Sprintf(format, args...))
}

// decodeBody parses raw against fields. An empty body is an empty object.
func decodeBody(raw []byte, fields []Field) (*Body, error) {
	b := &Body{strs: map[string]string{}, ints: map[string]int64{}, decs: map[string]money.Micros{}, bools: map[string]bool{}, caps: map[string]money.Cap{}}
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	obj, perr := contract.ParseObject(raw)
	if perr != nil {
		return nil, perr
	}
	for i, m := range obj.Members() {
		if i == maxBodyMembers {
			return nil, invalid("", "The request body has too many members.")
		}
		f, ok := lookup(fields, m.Name)
		if !ok {
			return nil, unknownMember(m.Name, fields)
		}
		kind := m.Value.Kind()
		if kind == 'n' {
			return nil, invalid(f.Name, "%s must not be null; omit it to leave it out.", f.Name)
		}
		switch f.Kind {
		case KindString:
			if kind != '"' {
				return nil, typeErr(f, kind)
			}
			b.strs[f.Name] = m.Value.Text()
		case KindBool:
			if kind != 't' && kind != 'f' {
				return nil, typeErr(f, kind)
			}
			b.bools[f.Name] = kind == 't'
		case KindInteger:
			if kind != '0' {
				return nil, typeErr(f, kind)
			}
			text := m.Value.Text()
			if strings.ContainsAny(text, ".eE") {
				return nil, invalid(f.Name, "%s must be an integer, without a decimal point or exponent.", f.Name)
			}
			n, err := strconv.ParseInt(text, 10, 64)
			if err != nil {
				return nil, invalid(f.Name, "%s is out of range.", f.Name)
			}
			b.ints[f.Name] = n
		case KindDecimal:
			if kind != '0' {
				return nil, typeErr(f, kind)
			}
			v, err := money.Parse(m.Value.Text())
			if err != nil {
				return nil, invalid(f.Name, "%s must be a decimal number with at most 6 decimal places, without an exponent.", f.Name)
			}
			b.decs[f.Name] = v
		case KindCap:
			c, err := decodeCap(f.Name, kind, m.Value.Text())
			if err != nil {
				return nil, err
			}
			b.caps[f.Name] = c
		}
	}
	for _, f := range fields {
		if f.Required && !b.Has(f.Name) {
			return nil, invalid(f.Name, "%s is required.", f.Name)
		}
	}
	return b, nil
}

// decodeCap reads a spend cap: a JSON number from 0 (nothing may be spent) to money.MaxAmount,
// or the string "none" for no cap. One meaning everywhere (docs/billing.md, "Spend caps").
func decodeCap(name string, kind jsontext.Kind, text string) (money.Cap, error) {
	msg := fmt.Sprintf("%s must be an amount from 0 to %s (0: nothing may be spent; at most 6 decimal places), or \"none\" for no cap.", name, money.MaxAmount)
	switch kind {
	case '"':
		if text == "none" {
			return money.NoCap, nil
		}
	case '0':
		if v, err := money.Parse(text); err == nil && v >= 0 && v <= money.MaxAmount {
			return money.CapOf(v), nil
		}
	}
	return money.NoCap, invalid(name, "%s", msg)
}

func lookup(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

func unknownMember(name string, fields []Field) *apierr.Error {
	var names []string
	for _, f := range fields {
		names = append(names, f.Name)
	}
	if len(names) == 0 {
		return invalid(name, "Unknown member %q: this request takes an empty body.", name)
	}
	return invalid(name, "Unknown member %q. This request takes: %s.", name, strings.Join(names, ", "))
}

func typeErr(f Field, got jsontext.Kind) *apierr.Error {
	want := map[FieldKind]string{KindString: "a string", KindInteger: "an integer", KindDecimal: "a number", KindBool: "true or false",
		KindCap: `a number or "none"`}[f.Kind]
	return invalid(f.Name, "%s must be %s, not %s.", f.Name, want, contract.KindName(byte(got)))
}

// Query reads a request's query parameters strictly: only the names given may appear, each at
// most once.
type Query struct{ v url.Values }

func parseQuery(raw string, allowed []string) (*Query, error) {
	v, err := url.ParseQuery(raw)
	if err != nil {
		return nil, invalid("", "The query string is malformed.")
	}
	for name, vals := range v {
		ok := false
		for _, a := range allowed {
			ok = ok || a == name
		}
		if !ok {
			if len(allowed) == 0 {
				return nil, invalid(name, "Unknown query parameter %q: this request takes none.", name)
			}
			return nil, invalid(name, "Unknown query parameter %q. This request takes: %s.", name, strings.Join(allowed, ", "))
		}
		if len(vals) > 1 {
			return nil, invalid(name, "Query parameter %s is given more than once.", name)
		}
	}
	return &Query{v: v}, nil
}

// Str returns a parameter ("" when absent).
func (q *Query) Str(name string) string { return q.v.Get(name) }

// Int returns an integer parameter (0 when absent).
func (q *Query) Int(name string) (int, error) {
	s := q.v.Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, invalid(name, "%s must be an integer.", name)
	}
	return n, nil
}

// Time returns an RFC 3339 time parameter (zero when absent).
func (q *Query) Time(name string) (time.Time, error) {
	s := q.v.Get(name)
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, invalid(name, "%s must be an RFC 3339 time such as 2026-11-25T10:00:00Z.", name)
	}
	return t, nil
}
