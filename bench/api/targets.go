package main

import (
	"bytes"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// target is one thing to measure, as data: a method, a path and a body template. Templates
// may hold {id} (the next seeded task id, cycling), {uniq} (unique per request across the whole
// bench) and {model}.
type target struct {
	name   string // label in the table
	server string // "bare" or "api"
	method string
	path   string
	body   string
	expect int // the status that counts as OK
	videos bool
	keys   int // requests rotate over this many keys of the demo tenant (0: the bench's one key)
}

// The default target set.
func targets() []*target {
	return []*target{
		{name: "bare", server: "bare", method: http.MethodGet, path: "/v1/videos/{id}", expect: http.StatusOK},
		{name: "GET /v1/videos/{id}", server: "api", method: http.MethodGet, path: "/v1/videos/{id}", expect: http.StatusOK, videos: true},
		{name: "GET /v1/billing/balance", server: "api", method: http.MethodGet, path: "/v1/billing/balance", expect: http.StatusOK},
		{name: "POST /v1/videos", server: "api", method: http.MethodPost, path: "/v1/videos", body: createBody, expect: http.StatusAccepted, videos: true},
		{name: "POST /v1/videos, 100 keys", server: "api", method: http.MethodPost, path: "/v1/videos", body: createBody, expect: http.StatusAccepted, videos: true, keys: manyKeys},
	}
}

// manyKeys is how many keys of one tenant the many-keys create target spreads over.
const manyKeys = 100

// createBody is a native text-to-video request with a unique client_request_id, so that every
// create is a real new task (task, reservation and idempotency record in one transaction).
const createBody = `{"model":"{model}","prompt":"a cat walking on a beach, benchmark {uniq}",` +
	`"metadata":{"duration":5,"resolution":"720p","client_request_id":"bench-{uniq}"}}`

// tmpl is a template split at its placeholders, so that expanding it per request is only
// appends.
type tmpl []piece

type piece struct {
	lit string
	v   string // placeholder name without braces; empty for a literal
}

var placeholders = []string{"id", "uniq", "model"}

func compile(s string) (tmpl, error) {
	var t tmpl
	for s != "" {
		i := strings.IndexByte(s, '{')
		if i < 0 {
			t = append(t, piece{lit: s})
			break
		}
		name, found := "", false
		for _, p := range placeholders {
			if strings.HasPrefix(s[i:], "{"+p+"}") {
				name, found = p, true
				break
			}
		}
		if !found { // a JSON brace, not a placeholder
			t = append(t, piece{lit: s[:i+1]})
			s = s[i+1:]
			continue
		}
		if i > 0 {
			t = append(t, piece{lit: s[:i]})
		}
		t = append(t, piece{v: name})
		s = s[i+len(name)+2:]
	}
	return t, nil
}

func (t tmpl) expand(buf []byte, vars func(name string) string) []byte {
	for _, p := range t {
		if p.v == "" {
			buf = append(buf, p.lit...)
		} else {
			buf = append(buf, vars(p.v)...)
		}
	}
	return buf
}

// requester makes the requests of one measurement of a target.
type requester struct {
	base       string
	auths      []string // Authorization values, used in turn
	method     string
	path, body tmpl
	hasBody    bool
	ids        []string
	model      string
	uniqPrefix string // unique per measurement: run id and segment number
}

// newRequester makes the requester of t; secrets are the bench's keys (the first is the one
// key; a target with keys > 1 rotates over that many).
func newRequester(t *target, base string, secrets []string, model, uniqPrefix string, ids []string) (*requester, error) {
	path, err := compile(t.path)
	if err != nil {
		return nil, err
	}
	body, err := compile(t.body)
	if err != nil {
		return nil, err
	}
	r := &requester{base: base, method: t.method, path: path, body: body, hasBody: t.body != "",
		ids: ids, model: model, uniqPrefix: uniqPrefix}
	if len(secrets) > 0 && t.server == "api" {
		n := max(1, t.keys)
		if n > len(secrets) {
			return nil, fmt.Errorf("%s needs %d keys, the bench made %d", t.name, n, len(secrets))
		}
		for _, s := range secrets[:n] {
			r.auths = append(r.auths, "Bearer "+s)
		}
	}
	return r, nil
}

func (r *requester) vars(i int) func(string) string {
	return func(name string) string {
		switch name {
		case "id":
			if len(r.ids) == 0 { // only the bare baseline runs without seeded tasks
				return "task_none"
			}
			return r.ids[i%len(r.ids)]
		case "uniq":
			return r.uniqPrefix + "-" + strconv.Itoa(i)
		case "model":
			return r.model
		}
		return ""
	}
}

// newRequest is load.Config.NewRequest.
func (r *requester) newRequest(i int) (*http.Request, error) {
	v := r.vars(i)
	url := r.path.expand([]byte(r.base), v)
	var req *http.Request
	var err error
	if r.hasBody {
		req, err = http.NewRequest(r.method, string(url), bytes.NewReader(r.body.expand(nil, v)))
		if err == nil {
			req.Header.Set("Content-Type", "application/json")
		}
	} else {
		req, err = http.NewRequest(r.method, string(url), nil)
	}
	if err != nil {
		return nil, err
	}
	if len(r.auths) > 0 {
		req.Header.Set("Authorization", r.auths[i%len(r.auths)])
	}
	return req, nil
}
