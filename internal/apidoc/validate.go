package apidoc

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"mediagen/internal/contract"
)

// maxJSONDepth bounds the nesting of a JSON body the validator will build.
const maxJSONDepth = 256

// ValidateRequest checks a request against the document: the operation exists for method and
// path (a concrete path, optionally with a query); path, query and header parameters are
// present when required and fit their schemas; a security requirement of the operation is met
// (for a bearer scheme: "Authorization: Bearer <token>"); and the body is absent when the
// operation takes none, or has a documented Content-Type and fits its schema. A body schema
// that is a top-level anyOf passes when the body matches at least one branch; oneOf is exact.
func (d *Doc) ValidateRequest(method, path string, header http.Header, body []byte) error {
	op, vals, query, err := d.lookup(method, path)
	if err != nil {
		return err
	}
	var errs []error
	for _, p := range op.params {
		var value string
		var present bool
		switch p.in {
		case "path":
			value, present = vals[p.name]
		case "query":
			if vs, ok := query[p.name]; ok && len(vs) > 0 {
				value, present = vs[0], true
			}
		case "header":
			if vs := header.Values(p.name); len(vs) > 0 {
				value, present = strings.Join(vs, ", "), true
			}
		case "cookie":
			if c, err := (&http.Request{Header: header}).Cookie(p.name); err == nil {
				value, present = c.Value, true
			}
		}
		if !present {
			if p.required {
				errs = append(errs, fmt.Errorf("missing required %s parameter %q", p.in, p.name))
			}
			continue
		}
		if err := d.validateText(p, value); err != nil {
			errs = append(errs, fmt.Errorf("%s parameter %q: %v", p.in, p.name, err))
		}
	}
	if err := d.checkSecurity(op, header, query); err != nil {
		errs = append(errs, err)
	}
	switch {
	case op.body == nil:
		if len(body) > 0 {
			errs = append(errs, fmt.Errorf("the operation takes no request body, got %d bytes", len(body)))
		}
	case len(body) == 0:
		if op.body.required {
			errs = append(errs, errors.New("the request body is required"))
		}
	default:
		md, err := matchMedia(op.body.content, header.Get("Content-Type"))
		if err != nil {
			errs = append(errs, fmt.Errorf("request: %v", err))
		} else if err := d.validateBody(md, body); err != nil {
			errs = append(errs, fmt.Errorf("request body: %v", err))
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s %s (%s): %w", method, path, op.id, errors.Join(errs...))
	}
	return nil
}

// ValidateResponse checks a response against the document: the status is documented for the
// operation (exact code, then range such as 4XX, then default); documented required headers
// are present and every documented header present fits its schema; a response documented
// without content has an empty body; otherwise Content-Type names a documented media type and
// the body fits its schema (JSON bodies are parsed strictly). A gzip Content-Encoding is
// undone first.
func (d *Doc) ValidateResponse(method, path string, status int, header http.Header, body []byte) error {
	op, _, _, err := d.lookup(method, path)
	if err != nil {
		return err
	}
	resp := op.response(status)
	if resp == nil {
		return fmt.Errorf("%s %s (%s): status %d is not documented (documented: %s)", method, path, op.id, status, strings.Join(op.codes(), ", "))
	}
	if errs := d.checkResponse(resp, status, header, body); len(errs) > 0 {
		return fmt.Errorf("%s %s → %d (%s): %w", method, path, status, op.id, errors.Join(errs...))
	}
	return nil
}

// ValidateResponseBody checks what a sample answer in prose shows: the status is documented for
// the operation and the body fits the schema of the documented media type contentType. Headers
// are not checked: a sample seldom shows them all, and ValidateResponse checks real answers.
func (d *Doc) ValidateResponseBody(method, path string, status int, contentType string, body []byte) error {
	op, _, _, err := d.lookup(method, path)
	if err != nil {
		return err
	}
	resp := op.response(status)
	if resp == nil {
		return fmt.Errorf("%s %s (%s): status %d is not documented (documented: %s)", method, path, op.id, status, strings.Join(op.codes(), ", "))
	}
	md, err := matchMedia(resp.content, contentType)
	if err == nil {
		err = d.validateBody(md, body)
	}
	if err != nil {
		return fmt.Errorf("%s %s → %d (%s): body: %w", method, path, status, op.id, err)
	}
	return nil
}

// ValidateUnrouted checks the answer to a request that matches no documented operation: a path
// the document does not describe must be answered 404 as components/responses/NotFound says,
// and a documented path with an undocumented method 405 as MethodNotAllowed says. Use it for
// exchanges that probe unknown routes on purpose; Check itself treats them as errors.
func (d *Doc) ValidateUnrouted(method, path string, status int, header http.Header, body []byte) error {
	p, _, _ := strings.Cut(path, "?")
	method = strings.ToUpper(method)
	if op, _ := d.find(method, p); op != nil {
		return fmt.Errorf("%s %s is a documented operation (%s)", method, p, op.id)
	}
	want := "404"
	for _, m := range methods {
		if op, _ := d.find(strings.ToUpper(m), p); op != nil {
			want = "405"
			break
		}
	}
	if strconv.Itoa(status) != want {
		return fmt.Errorf("%s %s → %d: a request matching no operation is answered %s", method, p, status, want)
	}
	resp := d.unrouted[want]
	if resp == nil {
		return fmt.Errorf("%s %s → %d: the document has no components/responses entry for %s", method, p, status, want)
	}
	if errs := d.checkResponse(resp, status, header, body); len(errs) > 0 {
		return fmt.Errorf("%s %s → %d (unrouted): %w", method, p, status, errors.Join(errs...))
	}
	return nil
}

// checkResponse validates headers, content type and body against a documented response.
func (d *Doc) checkResponse(resp *response, status int, header http.Header, body []byte) []error {
	var errs []error
	for _, h := range resp.headers {
		if strings.EqualFold(h.name, "Content-Type") {
			continue // described by content, ignored in headers by the specification
		}
		vs := header.Values(h.name)
		if len(vs) == 0 {
			if h.required {
				errs = append(errs, fmt.Errorf("missing required header %s", h.name))
			}
			continue
		}
		if err := d.validateText(h, strings.Join(vs, ", ")); err != nil {
			errs = append(errs, fmt.Errorf("header %s: %v", h.name, err))
		}
	}
	body, err := decodeContentEncoding(header.Get("Content-Encoding"), body)
	if err != nil {
		return append(errs, err)
	}
	if len(resp.content) == 0 {
		if len(body) > 0 {
			errs = append(errs, fmt.Errorf("status %d is documented without content, got %d bytes", status, len(body)))
		}
		return errs
	}
	md, err := matchMedia(resp.content, header.Get("Content-Type"))
	if err != nil {
		return append(errs, err)
	}
	if err := d.validateBody(md, body); err != nil {
		errs = append(errs, fmt.Errorf("body: %v", err))
	}
	return errs
}

// decodeContentEncoding undoes gzip (which net/http clients ask for by default, and which
// promhttp honours); other encodings cannot be validated.
func decodeContentEncoding(enc string, body []byte) ([]byte, error) {
	switch strings.ToLower(strings.TrimSpace(enc)) {
	case "", "identity":
		return body, nil
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return nil, fmt.Errorf("Content-Encoding gzip: %v", err)
		}
		out, err := io.ReadAll(io.LimitReader(zr, MaxRecordedBody+1))
		if err != nil {
			return nil, fmt.Errorf("Content-Encoding gzip: %v", err)
		}
		if len(out) > MaxRecordedBody {
			return nil, fmt.Errorf("Content-Encoding gzip: more than %d bytes decompressed", MaxRecordedBody)
		}
		return out, nil
	}
	return nil, fmt.Errorf("Content-Encoding %q cannot be validated", enc)
}

// lookup finds the operation of method and path and splits off the query.
func (d *Doc) lookup(method, path string) (*operation, map[string]string, url.Values, error) {
	p, rawQuery, _ := strings.Cut(path, "?")
	op, vals := d.find(strings.ToUpper(method), p)
	if op == nil {
		return nil, nil, nil, fmt.Errorf("%s %s: no such operation in %s", method, p, d.path)
	}
	query, err := url.ParseQuery(rawQuery)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s %s: malformed query: %v", method, path, err)
	}
	return op, vals, query, nil
}

func (op *operation) response(status int) *response {
	code := strconv.Itoa(status)
	if r, ok := op.responses[code]; ok {
		return r
	}
	if r, ok := op.responses[code[:1]+"XX"]; ok && len(code) == 3 {
		return r
	}
	return op.responses["DEFAULT"]
}

func (op *operation) codes() []string {
	out := make([]string, 0, len(op.responses))
	for _, r := range op.responses {
		out = append(out, r.code)
	}
	sort.Strings(out)
	return out
}

// validateText validates a parameter or header value, coerced by the schema's type.
func (d *Doc) validateText(p *param, s string) error {
	if p.schema == nil {
		return nil
	}
	var v any = s
	switch p.typ {
	case "integer", "number":
		n := json.Number(s)
		if _, err := n.Float64(); err != nil {
			return fmt.Errorf("%q is not a number", s)
		}
		v = n
	case "boolean":
		b, err := strconv.ParseBool(s)
		if err != nil || (s != "true" && s != "false") {
			return fmt.Errorf("%q is not true or false", s)
		}
		v = b
	}
	if err := p.schema.Validate(v); err != nil {
		return errors.New(d.clean(err.Error()))
	}
	return nil
}

// checkSecurity: at least one alternative of the operation's security requirement is met.
func (d *Doc) checkSecurity(op *operation, header http.Header, query url.Values) error {
	if len(op.security) == 0 {
		return nil
	}
	var names []string
	for _, alt := range op.security {
		ok := true
		for name := range alt {
			names = append(names, name)
			if !d.schemes[name].satisfied(header, query) {
				ok = false
			}
		}
		if ok {
			return nil
		}
	}
	sort.Strings(names)
	return fmt.Errorf("no security requirement is met (%s)", strings.Join(names, ", "))
}

func (s secScheme) satisfied(header http.Header, query url.Values) bool {
	switch s.typ {
	case "apiKey":
		switch s.in {
		case "header":
			return header.Get(s.name) != ""
		case "query":
			return query.Get(s.name) != ""
		case "cookie":
			_, err := (&http.Request{Header: header}).Cookie(s.name)
			return err == nil
		}
		return false
	case "mutualTLS":
		return true // not visible in headers
	case "http":
		scheme, cred, _ := strings.Cut(strings.TrimSpace(header.Get("Authorization")), " ")
		return strings.EqualFold(scheme, s.scheme) && strings.TrimSpace(cred) != ""
	}
	// oauth2 and openIdConnect carry bearer tokens.
	scheme, cred, _ := strings.Cut(strings.TrimSpace(header.Get("Authorization")), " ")
	return strings.EqualFold(scheme, "bearer") && strings.TrimSpace(cred) != ""
}

// matchMedia picks the documented media type for a Content-Type header: an exact type (whose
// documented parameters, if any, must all be present with the same values), then type/*, then
// */*.
func matchMedia(content []*media, contentType string) (*media, error) {
	documented := make([]string, len(content))
	for i, m := range content {
		documented[i] = m.key
	}
	if contentType == "" {
		return nil, fmt.Errorf("no Content-Type (documented: %s)", strings.Join(documented, ", "))
	}
	mt, params, err := mime.ParseMediaType(contentType)
	if err != nil {
		return nil, fmt.Errorf("malformed Content-Type %q: %v", contentType, err)
	}
	mt = strings.ToLower(mt)
	major, _, _ := strings.Cut(mt, "/")
	var wildMajor, wildAll *media
	for _, m := range content {
		switch m.typ {
		case mt:
			if paramsMatch(m.params, params) {
				return m, nil
			}
		case major + "/*":
			wildMajor = m
		case "*/*":
			wildAll = m
		}
	}
	if wildMajor != nil {
		return wildMajor, nil
	}
	if wildAll != nil {
		return wildAll, nil
	}
	return nil, fmt.Errorf("Content-Type %q is not documented (documented: %s)", contentType, strings.Join(documented, ", "))
}

func paramsMatch(want, got map[string]string) bool {
	for k, v := range want {
		if !strings.EqualFold(got[k], v) {
			return false
		}
	}
	return true
}

func isJSON(mt string) bool {
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// validateBody decodes body for its media type and validates it.
func (d *Doc) validateBody(md *media, body []byte) error {
	if !isJSON(md.typ) {
		// Text bodies are validated as one string; other media types are opaque here.
		if strings.HasPrefix(md.typ, "text/") {
			if !utf8.Valid(body) {
				return errors.New("not valid UTF-8")
			}
			return d.validateValue(md, string(body))
		}
		return nil
	}
	v, err := decodeStrict(body)
	if err != nil {
		return err
	}
	return d.validateValue(md, v)
}

// validateValue validates a decoded value against the media type's schema, or against its
// top-level anyOf branches (at least one must match), naming each branch when none does.
func (d *Doc) validateValue(md *media, v any) error {
	if len(md.branches) > 0 {
		var errs []string
		for _, b := range md.branches {
			err := b.schema.Validate(v)
			if err == nil {
				return nil
			}
			errs = append(errs, "as "+b.name+": "+indent(d.clean(err.Error())))
		}
		return fmt.Errorf("matches none of the %d anyOf alternatives:\n  %s", len(md.branches), strings.Join(errs, "\n  "))
	}
	if md.schema == nil {
		return nil
	}
	if err := md.schema.Validate(v); err != nil {
		return errors.New(d.clean(err.Error()))
	}
	return nil
}

func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n    ") }

// jsonLimits bound a body the validator parses: a recorded body is at most MaxRecordedBody,
// and a document's schemas nest far less than maxJSONDepth.
var jsonLimits = contract.Limits{Bytes: MaxRecordedBody, Depth: maxJSONDepth, Values: MaxRecordedBody, NameBytes: MaxRecordedBody}

// decodeStrict parses exactly one JSON value with the service's one strict parser
// (contract.ParseValue): valid UTF-8, no duplicate member names, nothing after the value.
// Numbers stay exact (json.Number).
func decodeStrict(body []byte) (any, error) {
	v, perr := contract.ParseValue(body, jsonLimits)
	if perr != nil {
		if perr.Param == "" {
			return nil, fmt.Errorf("invalid JSON: %s", perr.Message)
		}
		return nil, fmt.Errorf("invalid JSON at %s: %s", perr.Param, perr.Message)
	}
	return plain(v), nil
}

// plain is v as encoding/json decodes it with UseNumber, the form the schema validator takes.
func plain(v contract.Value) any {
	switch v.Kind() {
	case '{':
		obj := map[string]any{}
		for _, m := range v.Members() {
			obj[m.Name] = plain(m.Value)
		}
		return obj
	case '[':
		arr := []any{}
		for _, e := range v.Elems() {
			arr = append(arr, plain(e))
		}
		return arr
	case '"':
		return v.Text()
	case '0':
		return json.Number(v.Text())
	case 't':
		return true
	case 'f':
		return false
	}
	return nil
}
