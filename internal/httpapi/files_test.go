package httpapi

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"mediagen/internal/blob"
	"mediagen/internal/catalog"
	"mediagen/internal/testkit"
)

// filesEnv is the API serving signed file links from a blob store, with one stored file.
type filesEnv struct {
	ts      *httptest.Server
	link    string // a valid signed link to the file, on ts
	content []byte
}

func newFilesEnv(t *testing.T) *filesEnv {
	t.Helper()
	root := t.TempDir()
	db := testkit.SQLite(t)
	fs, err := blob.NewFS(filepath.Join(root, "blobs"), bytes.Repeat([]byte("k"), 32), testPublicURL)
	if err != nil {
		t.Fatal(err)
	}
	content := bytes.Repeat([]byte("0123456789"), 100)
	if _, err := fs.Put(context.Background(), "videos/task_1/result.mp4", bytes.NewReader(content)); err != nil {
		t.Fatal(err)
	}
	s := New(Config{Store: db, Catalog: catalog.Demo(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Files: fs})
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	link, _ := fs.SignedURL("videos/task_1/result.mp4", time.Hour)
	return &filesEnv{ts: ts, link: strings.Replace(link, testPublicURL, ts.URL, 1), content: content}
}

// get sends one request without following redirects.
func get(t *testing.T, method, url string, header map[string]string) response {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{res.StatusCode, res.Header, b}
}

func TestFileLinkRangeAnswersOverTheAPI(t *testing.T) {
	t.Parallel()
	e := newFilesEnv(t)
	if r := get(t, "GET", e.link, map[string]string{"Range": "bytes=abc"}); r.status != 200 || !bytes.Equal(r.body, e.content) {
		t.Errorf("malformed range: %d, %d bytes; want 200 and the whole file", r.status, len(r.body))
	}
	r := get(t, "GET", e.link, map[string]string{"Range": "bytes=-0"})
	checkEnvelope(t, r, 416, "invalid_request_error", "range_not_satisfiable")
	if got := r.header.Get("Content-Range"); got != "bytes */1000" {
		t.Errorf("Content-Range %q", got)
	}
	if got := r.header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q on an error", got)
	}
	checkEnvelope(t, get(t, "GET", e.link, map[string]string{"If-Match": `"x"`}), 412, "invalid_request_error", "precondition_failed")
	checkEnvelope(t, get(t, "GET", strings.Replace(e.link, "sig=", "sig=0", 1), nil), 403, "permission_error", "invalid_signature")
	checkEnvelope(t, get(t, "POST", e.link, nil), 405, "invalid_request_error", "method_not_allowed")
	if r := get(t, "HEAD", e.link, map[string]string{"Range": "bytes=-0"}); r.status != 416 || r.header.Get("Content-Range") != "bytes */1000" {
		t.Errorf("HEAD unsatisfiable: %d %q", r.status, r.header.Get("Content-Range"))
	}
}

// Paths the mux would redirect to their clean form (a 301 with an HTML body) are answered
// with a 404 envelope: the API has one spelling per path, and a redirect would turn a POST
// into a GET in most clients.
func TestUncleanPathsAnswerEnvelopesNotRedirects(t *testing.T) {
	t.Parallel()
	e := newFilesEnv(t)
	u := e.ts.URL
	tests := []struct{ name, method, url string }{
		{"double slash at the start", "GET", u + "//v1/videos/task_1"},
		{"double slash inside", "POST", u + "/v1//videos"},
		{"dot dot in a file link", "GET", strings.Replace(e.link, "/v1/files/", "/v1/files/../files/", 1)},
		{"dot segment", "GET", u + "/v1/./billing/balance"},
		{"subtree root without its slash", "GET", u + "/v1/files"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := get(t, tt.method, tt.url, nil)
			checkEnvelope(t, r, 404, "not_found_error", "not_found")
			if loc := r.header.Get("Location"); loc != "" {
				t.Errorf("Location %q", loc)
			}
		})
	}
}

// A 405 names the method only when it is a known one: an invented method of any length is
// not echoed back.
func TestMethodNotAllowedDoesNotEchoInventedMethods(t *testing.T) {
	t.Parallel()
	e := newFilesEnv(t)
	long := strings.Repeat("X", 4000)
	for _, url := range []string{e.ts.URL + "/v1/billing/balance", e.link} {
		r := get(t, long, url, nil)
		checkEnvelope(t, r, 405, "invalid_request_error", "method_not_allowed")
		if strings.Contains(string(r.body), "XXXX") || len(r.body) > 300 {
			t.Errorf("%s: the answer echoes the method: %.120s", url, r.body)
		}
		if r := get(t, "PUT", url, nil); !strings.Contains(string(r.body), "PUT") {
			t.Errorf("%s: a known method is not named: %s", url, r.body)
		}
	}
}

// The last-resort answer of writeJSON (a value that cannot be marshalled) is an envelope too.
func TestWriteJSONFallbackIsAnEnvelope(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, make(chan int))
	checkEnvelope(t, response{rec.Code, rec.Header(), rec.Body.Bytes()}, 500, "api_error", "internal_error")
}
