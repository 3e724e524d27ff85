package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func newTestClient(t *testing.T, url string) *Client {
	t.Helper()
	c, err := New(url, "mg_test", Options{PollInterval: 10 * time.Millisecond, MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestErrorCarriesStatusTypeCodeParamAndRequestID(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Request-Id", "req-42")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		io.WriteString(w, `{"error":{"message":"duration must be -1 or 4 to 30","type":"invalid_request_error","code":"invalid_request_error","param":"metadata.duration"}}`)
	}))
	defer srv.Close()
	_, err := newTestClient(t, srv.URL).CreateVideo(context.Background(), &NativeRequest{Model: "m", Prompt: "p", Metadata: NativeMetadata{Duration: Int(2)}})
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not *Error", err)
	}
	want := Error{Status: 400, Type: "invalid_request_error", Code: "invalid_request_error", Param: "metadata.duration",
		Message: "duration must be -1 or 4 to 30", RequestID: "req-42"}
	if *e != want {
		t.Fatalf("got %+v, want %+v", *e, want)
	}
}

// recorder answers with the scripted statuses in order, then 202, and records the bodies.
type recorder struct {
	mu       sync.Mutex
	script   []int
	header   http.Header
	bodies   [][]byte
	requests atomic.Int32
}

func (rec *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	rec.mu.Lock()
	n := len(rec.bodies)
	rec.bodies = append(rec.bodies, b)
	rec.mu.Unlock()
	rec.requests.Add(1)
	if n < len(rec.script) {
		for k, v := range rec.header {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.script[n])
		io.WriteString(w, `{"error":{"message":"x","type":"api_error","code":"`+strconv.Itoa(rec.script[n])+`"}}`)
		return
	}
	w.WriteHeader(202)
	io.WriteString(w, `{"id":"video_1","task_id":"video_1","object":"video","model":"m","status":"queued","progress":0}`)
}

func TestRetriesOnlyWhereSafe(t *testing.T) {
	tests := []struct {
		name     string
		script   []int
		header   http.Header
		call     func(*Client) error
		requests int32
		wantErr  bool
	}{
		{"create retried after 503 and 500", []int{503, 500}, nil, createNative, 3, false},
		{"create retried after 429 with Retry-After", []int{429}, http.Header{"Retry-After": {"0"}}, createNative, 2, false},
		{"400 is final", []int{400}, nil, createNative, 1, true},
		{"409 idempotency conflict is final", []int{409}, nil, createNative, 1, true},
		{"retries are bounded", []int{503, 503, 503, 503, 503, 503}, nil, createNative, 5, true},
		{"Retry-After beyond the limit is returned at once", []int{429}, http.Header{"Retry-After": {"3600"}}, createNative, 1, true},
		{"asset create not retried after 503", []int{503}, nil, createAsset, 1, true},
		{"asset create retried after 429", []int{429}, nil, createAsset, 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &recorder{script: tt.script, header: tt.header}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			err := tt.call(newTestClient(t, srv.URL))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if got := rec.requests.Load(); got != tt.requests {
				t.Fatalf("%d requests, want %d", got, tt.requests)
			}
		})
	}
}

func createNative(c *Client) error {
	_, err := c.CreateVideo(context.Background(), &NativeRequest{Model: "m", Prompt: "p"})
	return err
}

func createAsset(c *Client) error {
	_, err := c.Virtual().CreateAsset(context.Background(), NewAsset{GroupID: "g", URL: "https://x.example/a.png", AssetType: AssetImage})
	return err
}

func TestCreateKeepsOneGeneratedRequestIDAcrossRetries(t *testing.T) {
	rec := &recorder{script: []int{503, 502}}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	req := &ProductionRequest{Model: "p", Prompt: "x", Metadata: ProductionMetadata{Resolution: "1080p"}}
	if _, err := newTestClient(t, srv.URL).CreateVideo(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(req.Metadata.ClientRequestID, "mgc-") {
		t.Fatalf("request id %q not generated into the request", req.Metadata.ClientRequestID)
	}
	for i, b := range rec.bodies {
		var got struct {
			Metadata struct {
				ClientRequestID string `json:"client_request_id"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Metadata.ClientRequestID != req.Metadata.ClientRequestID {
			t.Fatalf("attempt %d sent id %q, want %q", i, got.Metadata.ClientRequestID, req.Metadata.ClientRequestID)
		}
	}
}

func TestWaitReturnsTaskErrorOnFailure(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) < 3 {
			io.WriteString(w, `{"id":"v","task_id":"v","object":"video","model":"m","status":"in_progress","progress":40}`)
			return
		}
		io.WriteString(w, `{"id":"v","task_id":"v","object":"video","model":"m","status":"failed","progress":100,"error":{"code":"InvalidParameter.TaskTypeMismatch","message":"mismatch"}}`)
	}))
	defer srv.Close()
	var seen []int
	v, err := newTestClient(t, srv.URL).Wait(context.Background(), "v", func(v *Video) { seen = append(seen, v.Progress) })
	var te *TaskError
	if !errors.As(err, &te) || te.Code != "InvalidParameter.TaskTypeMismatch" || v == nil || v.Status != StatusFailed {
		t.Fatalf("Wait = %+v, %v", v, err)
	}
	if len(seen) != 3 {
		t.Fatalf("onPoll saw %v, want 3 reads", seen)
	}
}

func TestResultURLReadsTheRouteField(t *testing.T) {
	tests := []struct {
		name string
		v    Video
		want string
	}{
		{"native", Video{Status: StatusCompleted, Metadata: VideoMetadata{URL: "u"}}, "u"},
		{"enhancement", Video{Status: StatusCompleted, Metadata: VideoMetadata{VideoURL: "e"}}, "e"},
		{"not completed", Video{Status: StatusFailed, Metadata: VideoMetadata{URL: "u"}}, ""},
	}
	for _, tt := range tests {
		if got := tt.v.ResultURL(); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// cutServer serves body with ETag and ranges; the first cuts answers stop after half of what
// they promised and drop the connection.
type cutServer struct {
	body   []byte
	etag   string
	cuts   atomic.Int32
	ranges []string
	mu     sync.Mutex
}

func (s *cutServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.ranges = append(s.ranges, r.Header.Get("Range")+"|"+r.Header.Get("If-Range"))
	body, etag := s.body, s.etag
	s.mu.Unlock()
	w.Header().Set("ETag", etag)
	if s.cuts.Add(-1) >= 0 {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(200)
		w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	http.ServeContent(w, r, "f.mp4", time.Time{}, bytes.NewReader(body))
}

// set replaces the served file.
func (s *cutServer) set(body []byte, etag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if body != nil {
		s.body = body
	}
	s.etag = etag
}

func testBody() []byte {
	b := make([]byte, 300<<10)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
}

func TestDownloadResumesAfterTheBodyIsCut(t *testing.T) {
	s := &cutServer{body: testBody(), etag: `"v1"`}
	s.cuts.Store(1)
	srv := httptest.NewServer(s)
	defer srv.Close()
	var buf bytes.Buffer
	var last int64
	n, err := newTestClient(t, srv.URL).Download(context.Background(), srv.URL+"/f", &buf, func(done, total int64) { last = done })
	if err != nil {
		t.Fatal(err)
	}
	if n != int64(len(s.body)) || !bytes.Equal(buf.Bytes(), s.body) || last != n {
		t.Fatalf("got %d bytes (progress %d), want %d identical", n, last, len(s.body))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.ranges) != 2 || s.ranges[1] != "bytes="+strconv.Itoa(len(s.body)/2)+`-|"v1"` {
		t.Fatalf("requests %q: want a second one with Range from the cut and If-Range", s.ranges)
	}
}

func TestDownloadFileResumesInALaterCall(t *testing.T) {
	s := &cutServer{body: testBody(), etag: `"v1"`}
	s.cuts.Store(1)
	srv := httptest.NewServer(s)
	defer srv.Close()
	dst := filepath.Join(t.TempDir(), "out.mp4")
	noRetry, _ := New(srv.URL, "k", Options{MaxRetries: -1})
	if _, err := noRetry.DownloadFile(context.Background(), srv.URL+"/f", dst, nil); err == nil {
		t.Fatal("first call: want the cut to fail it")
	}
	if fi, err := os.Stat(dst + ".part"); err != nil || fi.Size() != int64(len(s.body)/2) {
		t.Fatalf("partial file: %v %v", fi, err)
	}
	if _, err := newTestClient(t, srv.URL).DownloadFile(context.Background(), srv.URL+"/f?fresh=link", dst, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	if sha256.Sum256(got) != sha256.Sum256(s.body) {
		t.Fatal("file differs")
	}
	if _, err := os.Stat(dst + ".part"); !os.IsNotExist(err) {
		t.Fatalf("partial file left: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !strings.HasPrefix(s.ranges[1], "bytes=") {
		t.Fatalf("second call did not resume: %q", s.ranges)
	}
}

func TestDownloadFileStartsOverWhenTheFileChanged(t *testing.T) {
	s := &cutServer{body: testBody(), etag: `"v1"`}
	s.cuts.Store(1)
	srv := httptest.NewServer(s)
	defer srv.Close()
	dst := filepath.Join(t.TempDir(), "out.mp4")
	noRetry, _ := New(srv.URL, "k", Options{MaxRetries: -1})
	_, _ = noRetry.DownloadFile(context.Background(), srv.URL+"/f", dst, nil)
	// The file is replaced: If-Range no longer matches, so the server sends all of it.
	s.set(bytes.Repeat([]byte("new"), 50<<10), `"v2"`)
	if _, err := newTestClient(t, srv.URL).DownloadFile(context.Background(), srv.URL+"/f", dst, nil); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(dst)
	if want := bytes.Repeat([]byte("new"), 50<<10); !bytes.Equal(got, want) {
		t.Fatalf("got %d bytes, want the new file of %d", len(got), len(want))
	}
}

func TestDownloadIntoAWriterRefusesAChangedFile(t *testing.T) {
	s := &cutServer{body: testBody(), etag: `"v1"`}
	s.cuts.Store(1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Range") != "" {
			s.set(nil, `"v2"`) // changed between the two requests
		}
		s.ServeHTTP(w, r)
	}))
	defer srv.Close()
	_, err := newTestClient(t, srv.URL).Download(context.Background(), srv.URL+"/f", io.Discard, nil)
	if !errors.Is(err, ErrSourceChanged) {
		t.Fatalf("err = %v, want ErrSourceChanged", err)
	}
}
