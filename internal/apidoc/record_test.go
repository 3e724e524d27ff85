package apidoc

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeTB collects Errorf calls so that tests can assert what Check reports.
type fakeTB struct {
	testing.TB
	errs []string
}

func (f *fakeTB) Helper() {}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}

// fakeAPI imitates a few routes of the server, including mistakes the document must catch.
func fakeAPI() http.Handler {
	mux := http.NewServeMux()
	writeJSON := func(w http.ResponseWriter, status int, body string) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Request-Id", "req_fake")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body+"\n")
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, `{"status":"ok"}`)
	})
	// A handler that forgets Content-Type: net/http sniffs text/plain, which is not documented.
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req_fake")
		_, _ = io.WriteString(w, `{"status":"ready"}`)
	})
	mux.HandleFunc("POST /v1/videos", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Content-Type") != "application/json" {
			// Rejected before the body is read.
			writeJSON(w, 415, `{"error":{"message":"Content-Type must be application/json.","type":"invalid_request_error","code":"unsupported_media_type"}}`)
			return
		}
		body, _ := io.ReadAll(r.Body)
		if bytes.Contains(body, []byte(`"strict"`)) {
			writeJSON(w, 400, `{"error":{"message":"bad","type":"invalid_request_error","code":"invalid_request_error","param":"strict"}}`)
			return
		}
		// A lax server: anything else is accepted.
		writeJSON(w, 202, taskQueued)
	})
	mux.HandleFunc("GET /v1/videos/{id}", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 404, `{"error":{"message":"No such task.","type":"not_found_error","code":"not_found"}}`)
	})
	return mux
}

type call struct {
	method, path, contentType, body string
	auth                            bool
}

// exercise sends the calls to base with client and returns the bodies sent.
func exercise(t *testing.T, client *http.Client, base string, calls []call) {
	t.Helper()
	for _, c := range calls {
		var body io.Reader
		if c.body != "" {
			body = strings.NewReader(c.body)
		}
		req, err := http.NewRequest(c.method, base+c.path, body)
		if err != nil {
			t.Fatal(err)
		}
		if c.contentType != "" {
			req.Header.Set("Content-Type", c.contentType)
		}
		if c.auth {
			req.Header.Set("Authorization", key)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
	}
}

var calls = []call{
	{method: "GET", path: "/healthz"}, // 0 conforms
	{method: "POST", path: "/v1/videos", contentType: "application/json", auth: true, body: `{"model":"m","prompt":"x"}`},               // 1 conforms
	{method: "POST", path: "/v1/videos", contentType: "application/json", auth: true, body: `{"model":"m","prompt":"x","strict":true}`}, // 2 rejected: fine
	{method: "POST", path: "/v1/videos", contentType: "application/json", auth: true, body: `{"model":"m","prompt":"x","lax":true}`},    // 3 accepted: drift
	{method: "GET", path: "/v1/nope"}, // 4 unknown operation
	{method: "GET", path: "/readyz"},  // 5 sniffed Content-Type
	{method: "POST", path: "/v1/videos", contentType: "text/plain", auth: true, body: `hello`}, // 6 415: fine
	{method: "GET", path: "/v1/videos/video_a?x=1", auth: true},                                // 7 conforms
}

func checkRecorded(t *testing.T, exchanges []Exchange) {
	t.Helper()
	if len(exchanges) != len(calls) {
		t.Fatalf("recorded %d exchanges, want %d", len(exchanges), len(calls))
	}
	for i, ex := range exchanges {
		c := calls[i]
		if ex.Method != c.method || ex.Path != c.path || string(ex.ReqBody) != c.body {
			t.Errorf("exchange %d = %s %s %q, want %s %s %q", i, ex.Method, ex.Path, ex.ReqBody, c.method, c.path, c.body)
		}
	}
	if ex := exchanges[1]; ex.Status != 202 || !strings.Contains(string(ex.RespBody), `"queued"`) || ex.RespHeader.Get("X-Request-Id") != "req_fake" {
		t.Errorf("exchange 1 = %d %v %s", ex.Status, ex.RespHeader, ex.RespBody)
	}
	if got := exchanges[5].RespHeader.Get("Content-Type"); !strings.HasPrefix(got, "text/plain") {
		t.Errorf("sniffed Content-Type = %q", got)
	}
	tb := &fakeTB{TB: t}
	doc(t).Check(tb, exchanges)
	want := map[int]string{3: "accepted request", 4: "no such operation", 5: "Content-Type"}
	if len(tb.errs) != len(want) {
		t.Errorf("Check reported %d problems, want %d:\n%s", len(tb.errs), len(want), strings.Join(tb.errs, "\n"))
	}
	for i, w := range want {
		found := false
		for _, e := range tb.errs {
			found = found || (strings.Contains(e, fmt.Sprintf("exchange %d ", i)) && strings.Contains(e, w))
		}
		if !found {
			t.Errorf("no report for exchange %d mentioning %q in:\n%s", i, w, strings.Join(tb.errs, "\n"))
		}
	}
}

func TestMiddlewareRecordsAndCheckReports(t *testing.T) {
	rec := &Recorder{}
	ts := httptest.NewServer(Middleware(fakeAPI(), rec.Record))
	defer ts.Close()
	exercise(t, ts.Client(), ts.URL, calls)
	checkRecorded(t, rec.Exchanges())
	rec.Reset()
	if len(rec.Exchanges()) != 0 {
		t.Error("Reset kept exchanges")
	}
}

func TestTransportRecordsAndCheckReports(t *testing.T) {
	ts := httptest.NewServer(fakeAPI())
	defer ts.Close()
	rec := &Recorder{}
	client := &http.Client{Transport: &Transport{Base: ts.Client().Transport, Record: rec.Record}}
	exercise(t, client, ts.URL, calls)
	checkRecorded(t, rec.Exchanges())
}

// The middleware must not change what the handler sees: body limits and partial reads behave
// as without it, and the recorded body is complete anyway.
func TestMiddlewareIsTransparent(t *testing.T) {
	var seen []byte
	var readErr error
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen, readErr = io.ReadAll(http.MaxBytesReader(w, r.Body, 4))
		w.WriteHeader(http.StatusRequestEntityTooLarge)
	})
	var got Exchange
	req := httptest.NewRequest("POST", "/v1/videos", strings.NewReader("0123456789"))
	rr := httptest.NewRecorder()
	Middleware(h, func(ex Exchange) { got = ex }).ServeHTTP(rr, req)
	if string(seen) != "0123" || readErr == nil {
		t.Errorf("handler read %q, %v", seen, readErr)
	}
	if rr.Code != 413 || got.Status != 413 {
		t.Errorf("status %d, recorded %d", rr.Code, got.Status)
	}
	if len(got.RespBody) != 0 || got.Truncated {
		t.Errorf("recorded %+v", got)
	}

	// A handler that writes nothing answers 200 with no body.
	Middleware(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), func(ex Exchange) { got = ex }).
		ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/healthz", nil))
	if got.Status != 200 || got.RespBody != nil {
		t.Errorf("empty handler recorded %d %q", got.Status, got.RespBody)
	}
	if err := doc(t).CheckExchange(got); err == nil || !strings.Contains(err.Error(), "Content-Type") {
		t.Errorf("an empty 200 from /healthz conforms: %v", err)
	}
}

func TestCheckExchangeTruncated(t *testing.T) {
	err := doc(t).CheckExchange(Exchange{Method: "GET", Path: "/healthz", Status: 200, Truncated: true})
	if err == nil || !strings.Contains(err.Error(), "not recorded whole") {
		t.Fatalf("err = %v", err)
	}
}

func TestHasOperation(t *testing.T) {
	d := doc(t)
	for _, c := range []struct {
		method, path string
		want         bool
	}{
		{"POST", "/v1/videos", true},
		{"post", "/v1/videos?x=1", true},
		{"GET", "/v1/videos/abc", true},
		{"GET", "/v1/videos", true},
		{"DELETE", "/v1/videos", false},
		{"PUT", "/v1/videos/abc", false},
		{"GET", "/v1/billing/balance/", false},
	} {
		if got := d.HasOperation(c.method, c.path); got != c.want {
			t.Errorf("HasOperation(%s, %s) = %v", c.method, c.path, got)
		}
	}
}

func TestValidateUnrouted(t *testing.T) {
	d := doc(t)
	notFound := `{"error":{"message":"No route matches this path.","type":"not_found_error","code":"not_found"}}`
	notAllowed := `{"error":{"message":"Method PUT is not allowed on this path; see the Allow header.","type":"invalid_request_error","code":"method_not_allowed"}}`
	cases := []struct {
		method, path string
		status       int
		header       http.Header
		body, want   string
	}{
		{"GET", "/v2/nothing", 404, jsonResp(), notFound, ""},
		{"GET", "/v1/videos/a/b?x=1", 404, jsonResp(), notFound, ""},
		{"PUT", "/v1/videos/video_a", 405, hdr("Content-Type", "application/json", "X-Request-Id", "r", "Allow", "DELETE, GET, HEAD"), notAllowed, ""},
		{"PUT", "/v1/videos/video_a", 405, jsonResp(), notAllowed, "Allow"},
		{"PUT", "/v1/videos/video_a", 404, jsonResp(), notFound, "answered 405"},
		{"GET", "/v2/nothing", 405, jsonResp(), notAllowed, "answered 404"},
		{"GET", "/v2/nothing", 404, jsonResp(), `{"error":{"message":"m","type":"invalid_request_error","code":"x"}}`, "type"},
		{"GET", "/v2/nothing", 404, hdr("Content-Type", "text/plain; charset=utf-8", "X-Request-Id", "r"), "404 page not found\n", "Content-Type"},
		{"GET", "/healthz", 404, jsonResp(), notFound, "documented operation"},
	}
	for _, c := range cases {
		err := d.ValidateUnrouted(c.method, c.path, c.status, c.header, []byte(c.body))
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s %s → %d: %v", c.method, c.path, c.status, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s %s → %d: error %v, want one mentioning %q", c.method, c.path, c.status, err, c.want)
		}
	}
}

// net/http clients ask for gzip; a gzip-encoded response (promhttp's /metrics) is validated
// after decoding.
func TestGzipResponse(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Header().Set("X-Request-Id", "req_fake")
		if !strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			_, _ = io.WriteString(w, "up 1\n")
			return
		}
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		_, _ = io.WriteString(zw, "up 1\n")
		_ = zw.Close()
	})
	rec := &Recorder{}
	ts := httptest.NewServer(Middleware(h, rec.Record))
	defer ts.Close()
	resp, err := ts.Client().Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	ex := rec.Exchanges()
	if len(ex) != 1 || ex[0].RespHeader.Get("Content-Encoding") != "gzip" {
		t.Fatalf("recorded %+v", ex)
	}
	if err := doc(t).CheckExchange(ex[0]); err != nil {
		t.Fatal(err)
	}
	ex[0].RespHeader.Set("Content-Encoding", "br")
	if err := doc(t).CheckExchange(ex[0]); err == nil || !strings.Contains(err.Error(), "br") {
		t.Fatalf("unknown encoding: %v", err)
	}
}
