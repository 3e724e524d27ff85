package asset

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"mediagen/internal/apierr"
	"mediagen/internal/contract"
)

// The asset library's request bodies, read from the contract's strict parser
// (contract.ParseObject: one JSON object, a member appears once, nothing follows it): member
// names are case-sensitive; unknown members are rejected by name (with a hint for project,
// routing, credential, model and inline-upload fields); null is never a value. The bodies are
// flat, so a field is a string or an integer.

// Field kinds.
const (
	kindString  = '"'
	kindInteger = '0'
)

type field struct {
	name     string
	kind     byte
	required bool
}

func str(name string) field    { return field{name: name, kind: kindString} }
func reqStr(name string) field { return field{name: name, kind: kindString, required: true} }
func integer(name string) field {
	return field{name: name, kind: kindInteger}
}

// body is a decoded request: the members that were sent.
type body struct {
	strs map[string]string
	ints map[string]int64
}

func (b *body) has(name string) bool {
	_, s := b.strs[name]
	_, i := b.ints[name]
	return s || i
}

// Limits on values. The contract states none; these bound what is stored.
const (
	MaxNameChars        = 128
	MaxDescriptionChars = 1024
	MaxIDBytes          = 128
	MaxURLBytes         = 4096
	MaxCallbackURLBytes = 2048
	MaxPageSize         = 100
	DefaultPageSize     = 20
	maxPageNumber       = 1_000_000
	maxBodyMembers      = 64
)

func invalid(param, format string, args ...any) *apierr.Error {
	return apierr.Invalid(param, fmt.Sprintf(format, args...))
}

// forbidden is the hint hook for members a given operation refuses with a specific error.
type forbidden func(name string) *apierr.Error

// decode parses raw against fields with the contract's strict parser (contract.ParseObject),
// then reads the members in the order they were written. extra, when set, is asked first
// about unknown members.
func decode(raw []byte, fields []field, extra forbidden) (*body, *apierr.Error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, invalid("", "The request body is empty; send a JSON object ({} when no field is needed).")
	}
	obj, perr := contract.ParseObject(raw)
	if perr != nil {
		return nil, perr
	}
	b := &body{strs: map[string]string{}, ints: map[string]int64{}}
	for i, m := range obj.Members() {
		name := m.Name
		if i == maxBodyMembers {
			return nil, invalid("", "The request body has too many fields.")
		}
		f, ok := lookup(fields, name)
		if !ok {
			return nil, unknownField(name, fields, extra)
		}
		kind := m.Value.Kind()
		if kind == 'n' {
			return nil, invalid(name, "%s must not be null; omit a field to leave it out.", name)
		}
		if byte(kind) != f.kind {
			return nil, typeErr(f, kind)
		}
		switch f.kind {
		case kindString:
			b.strs[name] = m.Value.Text()
		case kindInteger:
			text := m.Value.Text()
			if strings.ContainsAny(text, ".eE") {
				return nil, invalid(name, "%s must be an integer, without a decimal point or exponent.", name)
			}
			n, perr := strconv.ParseInt(text, 10, 64)
			if perr != nil {
				return nil, invalid(name, "%s is out of range.", name)
			}
			b.ints[name] = n
		}
	}
	for _, f := range fields {
		if f.required && !b.has(f.name) {
			return nil, invalid(f.name, "%s is required.", f.name)
		}
	}
	return b, nil
}

func lookup(fields []field, name string) (field, bool) {
	for _, f := range fields {
		if f.name == name {
			return f, true
		}
	}
	return field{}, false
}

func typeErr(f field, got jsontext.Kind) *apierr.Error {
	want := "a string"
	if f.kind == kindInteger {
		want = "an integer"
	}
	return invalid(f.name, "%s must be %s, not %s.", f.name, want, contract.KindName(byte(got)))
}

// normalize folds a member name for the hint lists: lower case without '_' and '-'.
func normalize(name string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return unicode.ToLower(r)
	}, name)
}

var (
	projectFields = set("project", "projectid", "projectname", "region", "endpoint", "endpointid", "provider", "upstream",
		"upstreammodel", "baseurl", "route", "routing", "servicetier", "workspace", "workspaceid", "accountid", "tenant",
		"tenantid", "organization", "organizationid", "orgid", "zone", "cluster", "library", "librarytype")
	credentialFields = set("apikey", "accesskey", "accesskeyid", "secretkey", "secretaccesskey", "credentials", "credential",
		"authorization", "token", "securitytoken", "sessiontoken", "signature", "sign", "ak", "sk", "xdate", "password")
	inlineFields = set("data", "base64", "b64", "b64json", "file", "filedata", "fileid", "upload", "bytes", "content",
		"imagedata", "videodata", "audiodata", "imagebase64", "videobase64", "audiobase64", "blob")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func unknownField(name string, fields []field, extra forbidden) *apierr.Error {
	if extra != nil {
		if e := extra(name); e != nil {
			return e
		}
	}
	n := normalize(name)
	switch {
	case n == "model":
		return invalid(name, "%s is not accepted: asset library requests carry no model field.", name)
	case projectFields[n]:
		return invalid(name, "%s is not accepted: project, routing and account fields must not be sent; the API key decides the account and the path decides the library.", name)
	case credentialFields[n]:
		return invalid(name, "%s is not accepted: provider credentials and request signatures must not be sent; authenticate with the Bearer API key only.", name)
	case inlineFields[n]:
		return invalid(name, "%s is not accepted: Base64 and inline upload are not supported; register media by its URL.", name)
	}
	for _, f := range fields {
		if normalize(f.name) == n {
			return invalid(name, "%s is not a supported field; field names are case-sensitive, use %s.", name, f.name)
		}
	}
	if len(fields) == 0 {
		return invalid(name, "%s is not a supported field; this operation takes an empty object {}.", name)
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	return invalid(name, "%s is not a supported field of this operation; the fields are %s.", name, contract.OrList(names))
}

// ---------------------------------------------------------------------------------------------
// Value rules
// ---------------------------------------------------------------------------------------------

// id reads an identifier field: a non-empty string of at most MaxIDBytes. Whether it exists is
// for the lookup (404).
func (b *body) id(name string) (string, *apierr.Error) {
	s, ok := b.strs[name]
	if !ok {
		return "", nil
	}
	if s == "" {
		return "", invalid(name, "%s must not be empty.", name)
	}
	if len(s) > MaxIDBytes {
		return "", invalid(name, "%s is longer than %d bytes.", name, MaxIDBytes)
	}
	return s, nil
}

// text reads a free-text field: trimmed, at most max characters, no control characters
// (newlines and tabs allowed when multiline). required demands a non-blank value.
func (b *body) text(name string, max int, required, multiline bool) (string, bool, *apierr.Error) {
	s, ok := b.strs[name]
	if !ok {
		return "", false, nil
	}
	s, err := checkText(name, s, max, required, multiline)
	return s, true, err
}

// checkText applies the free-text rules of body.text to s, a value of the field name, and
// returns it trimmed. It is the one place these rules live: a value the service makes up in
// place of one the client left out (the default Name of an asset) must pass them too.
func checkText(name, s string, max int, required, multiline bool) (string, *apierr.Error) {
	// A JSON body is valid UTF-8 already; a value made from a URL (percent-decoded) may not
	// be, and would then fail every JSON answer that carries it.
	if !utf8.ValidString(s) {
		return "", invalid(name, "%s must be valid UTF-8.", name)
	}
	s = strings.TrimSpace(s)
	if required && s == "" {
		return "", invalid(name, "%s must not be empty or only white space.", name)
	}
	if utf8.RuneCountInString(s) > max {
		return "", invalid(name, "%s is longer than %d characters.", name, max)
	}
	for _, r := range s {
		if unicode.IsControl(r) && !(multiline && (r == '\n' || r == '\t' || r == '\r')) {
			return "", invalid(name, "%s must not contain control characters.", name)
		}
	}
	return s, nil
}

// enum reads an optional string that must be one of values (case-sensitive).
func (b *body) enum(name string, values ...string) (string, *apierr.Error) {
	s, ok := b.strs[name]
	if !ok {
		return "", nil
	}
	for _, v := range values {
		if s == v {
			return s, nil
		}
	}
	return "", invalid(name, "%s must be one of %s (case-sensitive).", name, contract.OrList(values))
}

// paging reads PageNumber (from 1) and PageSize (1 to MaxPageSize).
func (b *body) paging() (number, size int, err *apierr.Error) {
	number, size = 1, DefaultPageSize
	if n, ok := b.ints["PageNumber"]; ok {
		if n < 1 || n > maxPageNumber {
			return 0, 0, invalid("PageNumber", "PageNumber must be an integer from 1 to %d.", maxPageNumber)
		}
		number = int(n)
	}
	if n, ok := b.ints["PageSize"]; ok {
		if n < 1 || n > MaxPageSize {
			return 0, 0, invalid("PageSize", "PageSize must be an integer from 1 to %d.", MaxPageSize)
		}
		size = int(n)
	}
	return number, size, nil
}
