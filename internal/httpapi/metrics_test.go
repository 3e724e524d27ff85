package httpapi

import (
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// labelValues gathers the registry and returns, per label name, the distinct values of the
// family's series, and the number of series.
func labelValues(t *testing.T, s *Server, family string) (map[string]map[string]bool, int) {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	vals := map[string]map[string]bool{}
	n := 0
	for _, mf := range mfs {
		if mf.GetName() != family {
			continue
		}
		for _, m := range mf.Metric {
			n++
			for _, lp := range m.Label {
				if vals[lp.GetName()] == nil {
					vals[lp.GetName()] = map[string]bool{}
				}
				vals[lp.GetName()][lp.GetValue()] = true
			}
		}
	}
	return vals, n
}

func TestMetricLabelsStayInClosedSetsUnderJunkRequests(t *testing.T) {
	t.Parallel()
	e := newTestEnv(t)
	h := e.srv.Handler()
	rng := rand.New(rand.NewPCG(1, 2))
	const letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	word := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	methods := []string{"GET", "POST", "HEAD", "DELETE", "PATCH", "OPTIONS"}
	paths := []string{"/v1/videos", "/v1/videos/task_x", "/healthz", "/metrics", "/v1/billing/balance"}
	for i := range 600 {
		method := word(3 + rng.IntN(8))
		if i%4 == 0 {
			method = methods[rng.IntN(len(methods))]
		}
		path := "/" + strings.ToLower(word(1+rng.IntN(12))) + "/" + word(4)
		if i%3 == 0 {
			path = paths[rng.IntN(len(paths))]
		}
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Method = method
		h.ServeHTTP(httptest.NewRecorder(), r)
	}

	known := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
		"DELETE": true, "OPTIONS": true, "CONNECT": true, "TRACE": true, "other": true}
	vals, series := labelValues(t, e.srv, "mediagen_http_requests_total")
	for m := range vals["method"] {
		if !known[m] {
			t.Errorf("method label %q is not a known method or \"other\"", m)
		}
	}
	for route := range vals["route"] {
		if route != "unmatched" && !strings.Contains(route, "/") {
			t.Errorf("route label %q is not a pattern of the routing table", route)
		}
	}
	for st := range vals["status"] {
		if st != "other" && (len(st) != 3 || http.StatusText(atoiOrZero(st)) == "") {
			t.Errorf("status label %q is not a standard status or \"other\"", st)
		}
	}
	// 600 requests with ~450 invented methods and paths: the bound is what the routes,
	// known methods and statuses the test can reach allow, far below one series per request.
	if series > 60 {
		t.Errorf("mediagen_http_requests_total has %d series after 600 junk requests; labels are not bounded", series)
	}
	_, latency := labelValues(t, e.srv, "mediagen_http_request_duration_seconds")
	if latency > 20 {
		t.Errorf("mediagen_http_request_duration_seconds has %d series; routes are not bounded", latency)
	}
}

func atoiOrZero(s string) int {
	n := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0
		}
		n = n*10 + int(c-'0')
	}
	return n
}

func TestLabelMappingsAreClosed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string
	}{
		{"GET", "GET"}, {"TRACE", "TRACE"}, {"CONNECT", "CONNECT"},
		{"get", "other"}, {"FOO", "other"}, {"", "other"}, {"PROPFIND", "other"},
	}
	for _, c := range cases {
		if got := methodLabel(c.in); got != c.want {
			t.Errorf("methodLabel(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	statuses := []struct {
		in   int
		want string
	}{{200, "200"}, {416, "416"}, {599, "other"}, {0, "other"}, {1000, "other"}, {299, "other"}}
	for _, c := range statuses {
		if got := statusLabel(c.in); got != c.want {
			t.Errorf("statusLabel(%d) = %q, want %q", c.in, got, c.want)
		}
	}
}
