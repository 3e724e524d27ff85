package blob

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/apierr"
	"mediagen/internal/testkit"
)

// serveFixture is an FS with a controlled clock, an open counter and an HTTP server on
// 127.0.0.1 that routes /v1/files/{key...} to ServeFile and writes errors as envelopes.
type serveFixture struct {
	fs    *FS
	clock *testkit.Clock // still, on a whole second: links carry whole seconds
	opens atomic.Int64
	srv   *httptest.Server
}

func newServeFixture(t *testing.T) *serveFixture {
	t.Helper()
	f := &serveFixture{fs: newTestFS(t), clock: testkit.NewClock(time.Now().Truncate(time.Second))}
	f.fs.now = f.clock.Now
	f.fs.openFile = func(name string) (*os.File, error) {
		f.opens.Add(1)
		return os.Open(name)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/files/{key...}", func(w http.ResponseWriter, r *http.Request) {
		if err := f.fs.ServeFile(w, r); err != nil {
			e := apierr.As(err)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(e.Status())
			_ = json.NewEncoder(w).Encode(map[string]map[string]string{
				"error": {"code": e.CodeOrDefault(), "type": e.Type(), "message": e.Message}})
		}
	})
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	f.fs.publicBase = f.srv.URL
	return f
}

func (f *serveFixture) do(t *testing.T, method, link string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, link, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func TestSignedURL_HasDocumentedFormat(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	s.publicBase = "https://media.example.com"
	s.now = func() time.Time { return time.Unix(1_700_000_000, 500_000_000) }
	link, exp := s.SignedURL("videos/video_abc/result.mp4", time.Hour)
	if want := time.Unix(1_700_003_601, 0); !exp.Equal(want) {
		t.Errorf("expires = %v, want %v (rounded up to a whole second)", exp.Unix(), want.Unix())
	}
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	if u.Scheme != "https" || u.Host != "media.example.com" || u.Path != "/v1/files/videos/video_abc/result.mp4" {
		t.Errorf("link = %s", link)
	}
	q := u.Query()
	if q.Get("expires") != "1700003601" || len(q.Get("sig")) != 64 || len(q) != 2 {
		t.Errorf("query = %v", q)
	}
	other, _ := s.SignedURL("videos/video_abc/result.mp4", time.Hour)
	if other != link {
		t.Error("same key and expiry gave different links")
	}
}

func TestServeFile_ValidLinkServesFileWithHeaders(t *testing.T) {
	t.Parallel()
	f := newServeFixture(t)
	content := strings.Repeat("0123456789", 1000)
	put(t, f.fs, "videos/video_abc/result.mp4", content)
	link, _ := f.fs.SignedURL("videos/video_abc/result.mp4", 10*time.Minute)

	resp, body := f.do(t, http.MethodGet, link, nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status = %d, body %s", resp.StatusCode, body)
	}
	if string(body) != content {
		t.Errorf("body has %d bytes, want %d", len(body), len(content))
	}
	wantHeaders := map[string]string{
		"Content-Type":           "video/mp4",
		"Content-Length":         strconv.Itoa(len(content)),
		"Cache-Control":          "private, max-age=600",
		"Content-Disposition":    `inline; filename="result.mp4"`,
		"X-Content-Type-Options": "nosniff",
		"Accept-Ranges":          "bytes",
	}
	for k, want := range wantHeaders {
		if got := resp.Header.Get(k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if resp.Header.Get("Last-Modified") == "" || resp.Header.Get("ETag") == "" {
		t.Errorf("missing validators: %v", resp.Header)
	}

	// max-age counts down with the link's remaining life.
	f.clock.Advance(7 * time.Minute)
	resp, _ = f.do(t, http.MethodGet, link, nil)
	if got := resp.Header.Get("Cache-Control"); got != "private, max-age=180" {
		t.Errorf("Cache-Control 7 minutes later = %q, want max-age=180", got)
	}
}

func TestServeFile_ContentTypePerExtension(t *testing.T) {
	t.Parallel()
	f := newServeFixture(t)
	tests := []struct{ key, want string }{
		{"videos/v/result.mp4", "video/mp4"},
		{"videos/v/result.mov", "video/quicktime"},
		{"videos/v/last_frame.jpg", "image/jpeg"},
		{"assets/a/image.png", "image/png"},
		{"assets/a/image.webp", "image/webp"},
		{"speech/s/audio.mp3", "audio/mpeg"},
		{"speech/s/audio.wav", "audio/wav"},
		{"speech/s/audio.m4a", "audio/mp4"},
		// HTML content under an unknown extension must not be sniffed as HTML.
		{"assets/a/page.html", "application/octet-stream"},
	}
	for _, tc := range tests {
		t.Run(tc.key+" is served as "+tc.want, func(t *testing.T) {
			put(t, f.fs, tc.key, "<html><script>alert(1)</script></html>")
			link, _ := f.fs.SignedURL(tc.key, time.Minute)
			resp, _ := f.do(t, http.MethodGet, link, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d", resp.StatusCode)
			}
			if got := resp.Header.Get("Content-Type"); got != tc.want {
				t.Errorf("Content-Type = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestServeFile_RangeHeadAndConditionalRequests(t *testing.T) {
	t.Parallel()
	f := newServeFixture(t)
	content := []byte(strings.Repeat("abcdefghijklmnopqrstuvwxyz", 100))
	put(t, f.fs, "videos/v/result.mp4", string(content))
	link, _ := f.fs.SignedURL("videos/v/result.mp4", time.Hour)
	resp, _ := f.do(t, http.MethodGet, link, nil)
	etag, lastMod := resp.Header.Get("ETag"), resp.Header.Get("Last-Modified")

	tests := []struct {
		name       string
		method     string
		hdr        map[string]string
		wantStatus int
		wantBody   []byte
		wantHdr    map[string]string
	}{
		{
			name: "range request gets 206 with the requested bytes", method: http.MethodGet,
			hdr: map[string]string{"Range": "bytes=10-19"}, wantStatus: http.StatusPartialContent,
			wantBody: content[10:20],
			wantHdr:  map[string]string{"Content-Range": "bytes 10-19/2600", "Content-Length": "10"},
		},
		{
			name: "suffix range gets the last bytes", method: http.MethodGet,
			hdr: map[string]string{"Range": "bytes=-5"}, wantStatus: http.StatusPartialContent,
			wantBody: content[len(content)-5:],
			wantHdr:  map[string]string{"Content-Range": "bytes 2595-2599/2600"},
		},
		{
			name: "unsatisfiable range gets 416", method: http.MethodGet,
			hdr: map[string]string{"Range": "bytes=5000-6000"}, wantStatus: http.StatusRequestedRangeNotSatisfiable,
		},
		{
			name: "HEAD gets headers without body", method: http.MethodHead, wantStatus: http.StatusOK,
			wantBody: []byte{},
			wantHdr:  map[string]string{"Content-Length": "2600", "Content-Type": "video/mp4"},
		},
		{
			name: "If-None-Match with the ETag gets 304", method: http.MethodGet,
			hdr: map[string]string{"If-None-Match": etag}, wantStatus: http.StatusNotModified, wantBody: []byte{},
		},
		{
			name: "If-Modified-Since the Last-Modified gets 304", method: http.MethodGet,
			hdr: map[string]string{"If-Modified-Since": lastMod}, wantStatus: http.StatusNotModified, wantBody: []byte{},
		},
		{
			name: "If-Range with a stale ETag gets the whole file", method: http.MethodGet,
			hdr:        map[string]string{"Range": "bytes=0-1", "If-Range": `"stale"`},
			wantStatus: http.StatusOK, wantBody: content,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := f.do(t, tc.method, link, tc.hdr)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if tc.wantBody != nil && !bytes.Equal(body, tc.wantBody) {
				t.Errorf("body = %q, want %q", body, tc.wantBody)
			}
			for k, want := range tc.wantHdr {
				if got := resp.Header.Get(k); got != want {
					t.Errorf("%s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

// alter returns link with one query parameter set (or removed when v is empty).
func alter(t *testing.T, link, param, v string) string {
	t.Helper()
	u, err := url.Parse(link)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if v == "" {
		q.Del(param)
	} else {
		q.Set(param, v)
	}
	u.RawQuery = q.Encode()
	return u.String()
}

func flipHex(s string) string {
	b := []byte(s)
	if b[0] == '0' {
		b[0] = '1'
	} else {
		b[0] = '0'
	}
	return string(b)
}

func TestServeFile_RejectsBadLinksBeforeTouchingDisk(t *testing.T) {
	t.Parallel()
	const key = "videos/video_a/result.mp4"
	tests := []struct {
		name      string
		link      func(t *testing.T, f *serveFixture) string // request URL (path and query)
		before    func(f *serveFixture)                      // runs after minting, before the request
		wantKind  apierr.Kind
		wantCode  string
		wantOpens int64
	}{
		{
			name: "expired link is link_expired",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Minute)
				return l
			},
			before:   func(f *serveFixture) { f.clock.Advance(2 * time.Minute) },
			wantKind: apierr.KindPermission, wantCode: "link_expired",
		},
		{
			name: "link at its exact expiry second is link_expired",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Minute)
				return l
			},
			before:   func(f *serveFixture) { f.clock.Advance(time.Minute) },
			wantKind: apierr.KindPermission, wantCode: "link_expired",
		},
		{
			name: "altered signature is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Minute)
				u, _ := url.Parse(l)
				return alter(t, l, "sig", flipHex(u.Query().Get("sig")))
			},
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "extended expiry is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				l, exp := f.fs.SignedURL(key, time.Minute)
				return alter(t, l, "expires", strconv.FormatInt(exp.Unix()+86400, 10))
			},
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "expired link with extended expiry is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				l, exp := f.fs.SignedURL(key, time.Minute)
				return alter(t, l, "expires", strconv.FormatInt(exp.Unix()+86400, 10))
			},
			before:   func(f *serveFixture) { f.clock.Advance(time.Hour) },
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "expiry with a plus sign is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				l, exp := f.fs.SignedURL(key, time.Minute)
				return alter(t, l, "expires", "+"+strconv.FormatInt(exp.Unix(), 10))
			},
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "altered key is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL("videos/video_b/result.mp4", time.Minute)
				return strings.Replace(l, "video_b", "video_a", 1)
			},
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "missing signature is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Minute)
				return alter(t, l, "sig", "")
			},
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "missing expiry is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Minute)
				return alter(t, l, "expires", "")
			},
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "duplicated signature parameter is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Minute)
				u, _ := url.Parse(l)
				return l + "&sig=" + u.Query().Get("sig")
			},
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "link signed with another signing key is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				other, err := NewFS(t.TempDir(), bytes.Repeat([]byte{0x17}, 32), f.srv.URL)
				if err != nil {
					t.Fatal(err)
				}
				other.now = f.clock.Now
				l, _ := other.SignedURL(key, time.Minute)
				return l
			},
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "traversal key with a forged signature is invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				return f.srv.URL + "/v1/files/../../../../etc/passwd?expires=9999999999&sig=" + strings.Repeat("ab", 32)
			},
			wantKind: apierr.KindPermission, wantCode: "invalid_signature",
		},
		{
			name: "deleted object with a valid link is file_not_found",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Minute)
				return l
			},
			before: func(f *serveFixture) {
				if err := f.fs.Delete(context.Background(), key); err != nil {
					panic(err)
				}
			},
			wantKind: apierr.KindNotFound, wantCode: "file_not_found", wantOpens: 1,
		},
		{
			name: "valid link to an invalid key is file_not_found without opening",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL("videos/../secret", time.Minute)
				return l
			},
			wantKind: apierr.KindNotFound, wantCode: "file_not_found",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newServeFixture(t)
			put(t, f.fs, key, "secret video bytes")
			put(t, f.fs, "videos/video_b/result.mp4", "other tenant's bytes")
			link := tc.link(t, f)
			if tc.before != nil {
				tc.before(f)
			}

			// Call ServeFile directly to check the returned error value.
			req := httptest.NewRequest(http.MethodGet, link, nil)
			if p, ok := strings.CutPrefix(req.URL.Path, FilesPath); ok {
				req.SetPathValue("key", p)
			}
			rec := httptest.NewRecorder()
			err := f.fs.ServeFile(rec, req)
			var ae *apierr.Error
			if !errors.As(err, &ae) {
				t.Fatalf("ServeFile error = %v, want *apierr.Error", err)
			}
			if ae.Kind != tc.wantKind || ae.Code != tc.wantCode {
				t.Errorf("error = kind %v code %q, want kind %v code %q", ae.Kind, ae.Code, tc.wantKind, tc.wantCode)
			}
			if ae.Message == "" {
				t.Error("empty message")
			}
			if tc.wantCode == "link_expired" && !(strings.Contains(ae.Message, "temporary") && strings.Contains(ae.Message, "fresh link")) {
				t.Errorf("link_expired message does not tell the client to fetch a fresh link: %q", ae.Message)
			}
			if rec.Body.Len() != 0 || len(rec.Header()) != 0 {
				t.Errorf("ServeFile wrote on error: headers %v, body %q", rec.Header(), rec.Body.String())
			}
			if got := f.opens.Load(); got != tc.wantOpens {
				t.Errorf("files opened = %d, want %d", got, tc.wantOpens)
			}
		})
	}
}

func TestServeFile_ErrorStatusesOverHTTP(t *testing.T) {
	t.Parallel()
	const key = "speech/sp_1/audio.wav"
	tests := []struct {
		name       string
		link       func(t *testing.T, f *serveFixture) string
		wantStatus int
		wantCode   string
	}{
		{
			name: "expired link answers 403 link_expired",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Second)
				f.clock.Advance(time.Hour)
				return l
			},
			wantStatus: http.StatusForbidden, wantCode: "link_expired",
		},
		{
			name: "altered key answers 403 invalid_signature",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Minute)
				return strings.Replace(l, "sp_1", "sp_2", 1)
			},
			wantStatus: http.StatusForbidden, wantCode: "invalid_signature",
		},
		{
			name: "deleted object answers 404 file_not_found",
			link: func(t *testing.T, f *serveFixture) string {
				l, _ := f.fs.SignedURL(key, time.Minute)
				if err := f.fs.Delete(context.Background(), key); err != nil {
					t.Fatal(err)
				}
				return l
			},
			wantStatus: http.StatusNotFound, wantCode: "file_not_found",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newServeFixture(t)
			put(t, f.fs, key, "RIFF....WAVE")
			put(t, f.fs, "speech/sp_2/audio.wav", "RIFF....WAVE other")
			resp, body := f.do(t, http.MethodGet, tc.link(t, f), nil)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status = %d, want %d; body %s", resp.StatusCode, tc.wantStatus, body)
			}
			var env struct {
				Error struct{ Code string } `json:"error"`
			}
			if err := json.Unmarshal(body, &env); err != nil || env.Error.Code != tc.wantCode {
				t.Errorf("body = %s (err %v), want code %q", body, err, tc.wantCode)
			}
			if resp.Header.Get("Content-Disposition") != "" || resp.Header.Get("Cache-Control") != "" {
				t.Errorf("error response carries file headers: %v", resp.Header)
			}
		})
	}
}

func TestServeFile_RejectsOtherMethods(t *testing.T) {
	t.Parallel()
	f := newServeFixture(t)
	put(t, f.fs, "videos/v/result.mp4", "x")
	link, _ := f.fs.SignedURL("videos/v/result.mp4", time.Minute)
	req := httptest.NewRequest(http.MethodPost, link, nil)
	rec := httptest.NewRecorder()
	err := f.fs.ServeFile(rec, req)
	var ae *apierr.Error
	if !errors.As(err, &ae) || ae.Kind != apierr.KindMethodNotAllowed {
		t.Fatalf("ServeFile(POST) = %v, want KindMethodNotAllowed", err)
	}
	if f.opens.Load() != 0 {
		t.Error("POST opened the file")
	}
}

func TestLinker_MintsVerifiableLinks(t *testing.T) {
	t.Parallel()
	f := newServeFixture(t)
	put(t, f.fs, "videos/v/result.mp4", "linked")
	l := Linker{Store: f.fs, TTL: time.Minute}
	resp, body := f.do(t, http.MethodGet, l.Link("videos/v/result.mp4"), nil)
	if resp.StatusCode != http.StatusOK || string(body) != "linked" {
		t.Fatalf("status %d body %q", resp.StatusCode, body)
	}
}

// A link minted under a tenant's address (WithLinkBase) is the same link on that address: the
// same path, expiry and signature, so it verifies wherever the service answers. Through the
// tracing wrapper too; without a base, the store's own.
func TestSignedURLIn_IsTheSameLinkOnTheTenantsAddress(t *testing.T) {
	t.Parallel()
	s := newTestFS(t)
	s.publicBase = "https://media.example.com"
	s.now = func() time.Time { return time.Unix(1_700_000_000, 0) }
	own, _ := s.SignedURL("videos/v/result.mp4", time.Hour)
	ctx := WithLinkBase(context.Background(), "https://acme.media.example.com")
	for name, st := range map[string]Store{"fs": s, "traced": tracedStore{Store: s}} {
		tenant, _ := SignedURLIn(ctx, st, "videos/v/result.mp4", time.Hour)
		if want := strings.Replace(own, "https://media.example.com", "https://acme.media.example.com", 1); tenant != want {
			t.Errorf("%s: link under the tenant's base %q, want %q", name, tenant, want)
		}
		if plain, _ := SignedURLIn(context.Background(), st, "videos/v/result.mp4", time.Hour); plain != own {
			t.Errorf("%s: link without a base %q, want the store's own %q", name, plain, own)
		}
	}
}
