package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"github.com/mediagen-dev/mediagen/client"
)

// faultProxy forwards every request to the service and misbehaves on the ones fault picks:
// "drop" forwards the request, reads the service's whole answer and closes the connection
// without sending any of it (the client cannot know whether the create happened); "cut"
// sends the headers and half of the body, then closes.
type faultProxy struct {
	target string
	fault  func(r *http.Request, n int) string
	mu     sync.Mutex
	seen   []*http.Request
	bodies [][]byte // the service's answers, also those the client never got
}

func (p *faultProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	n := len(p.seen)
	p.seen = append(p.seen, r.Clone(context.Background()))
	p.mu.Unlock()
	out, _ := http.NewRequestWithContext(r.Context(), r.Method, p.target+r.URL.RequestURI(), bytes.NewReader(body))
	out.Header = r.Header.Clone()
	res, err := http.DefaultTransport.RoundTrip(out)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer res.Body.Close()
	answer, _ := io.ReadAll(res.Body)
	p.mu.Lock()
	p.bodies = append(p.bodies, answer)
	p.mu.Unlock()
	switch p.fault(r, n) {
	case "drop":
		panic(http.ErrAbortHandler)
	case "cut":
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		w.Write(answer[:len(answer)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	}
	for k, v := range res.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(res.StatusCode)
	w.Write(answer)
}

func (p *faultProxy) start(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

func newClient(t *testing.T, base, key string) *client.Client {
	t.Helper()
	c, err := client.New(base, key, client.Options{PollInterval: 100 * time.Millisecond, MinBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientCreateRetriedAfterDroppedConnectionMakesOneTask(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	p := &faultProxy{target: e.m.URL(), fault: func(r *http.Request, n int) string {
		if n == 0 {
			return "drop"
		}
		return ""
	}}
	c := newClient(t, p.start(t), e.key)
	availableBefore, _ := e.balance()
	req := &client.NativeRequest{Model: "demo-video-fast", Prompt: "one task only",
		Metadata: client.NativeMetadata{Duration: client.Int(4), Resolution: "480p", GenerateAudio: client.Bool(false)}}
	v, err := c.CreateVideo(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.seen) != 2 {
		t.Fatalf("%d requests reached the proxy, want the dropped one and its retry", len(p.seen))
	}
	var first client.Video
	if err := json.Unmarshal(p.bodies[0], &first); err != nil || first.ID == "" {
		t.Fatalf("the dropped answer was not a task: %s (%v)", p.bodies[0], err)
	}
	if v.ID != first.ID {
		t.Fatalf("the retry made task %s; the dropped create had made %s", v.ID, first.ID)
	}
	// One reservation: a second task would have reserved again.
	second, err := c.CreateVideo(context.Background(), req) // an explicit replay: same id, same task
	if err != nil || second.ID != v.ID {
		t.Fatalf("replay: %v %v", second, err)
	}
	done, err := newClient(t, e.m.URL(), e.key).Wait(context.Background(), v.ID, nil)
	if err != nil || done.ResultURL() == "" {
		t.Fatalf("wait: %+v %v", done, err)
	}
	availableAfter, used := e.balance()
	if availableAfter == availableBefore || used == "0" {
		t.Fatalf("balance did not move: %s → %s", availableBefore, availableAfter)
	}
	if n := countTasks(t, filepath.Join(e.m.Config.DataDir, "mediagen.db")); n != 1 {
		t.Fatalf("%d tasks in the store, want 1", n)
	}
}

func countTasks(t *testing.T, dbPath string) int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+dbPath+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM tasks`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func TestClientWaitResumedInANewClientFinishesTheSameTask(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	first := newClient(t, e.m.URL(), e.key)
	v, err := first.CreateVideo(context.Background(), &client.NativeRequest{Model: "demo-video-2.5", Prompt: "a slow one [sandbox:slow=2s]",
		Metadata: client.NativeMetadata{Duration: client.Int(4), Resolution: "480p"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := first.Wait(ctx, v.ID, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first wait: %v, want it cut short", err)
	}
	// A new client (as after a restart) knows only the id.
	var progress []int
	done, err := newClient(t, e.m.URL(), e.key).Wait(context.Background(), v.ID, func(v *client.Video) { progress = append(progress, v.Progress) })
	if err != nil {
		t.Fatal(err)
	}
	if done.ID != v.ID || done.Status != client.StatusCompleted || done.ResultURL() == "" || done.Usage == nil {
		t.Fatalf("resumed wait: %+v", done)
	}
	if progress[len(progress)-1] != 100 {
		t.Fatalf("progress %v does not end at 100", progress)
	}
}

func TestClientDownloadInterruptedHalfWayResumes(t *testing.T) {
	t.Parallel()
	e := startE2E(t)
	c := newClient(t, e.m.URL(), e.key)
	v, err := c.CreateVideo(context.Background(), &client.NativeRequest{Model: "demo-video-fast", Prompt: "download me",
		Metadata: client.NativeMetadata{Duration: client.Int(4), Resolution: "720p", GenerateAudio: client.Bool(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if v, err = c.Wait(context.Background(), v.ID, nil); err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{target: e.m.URL(), fault: func(r *http.Request, n int) string {
		if n == 0 {
			return "cut"
		}
		return ""
	}}
	proxied := p.start(t) + strings.TrimPrefix(v.ResultURL(), e.m.URL())
	dst := filepath.Join(t.TempDir(), "result.mp4")
	var calls int
	var last, total int64
	n, err := c.DownloadFile(context.Background(), proxied, dst, func(done, tot int64) { calls++; last, total = done, tot })
	if err != nil {
		t.Fatal(err)
	}
	direct, _ := e.download(v.ResultURL(), "direct.mp4")
	want, _ := os.ReadFile(direct)
	got, _ := os.ReadFile(dst)
	if sha256.Sum256(got) != sha256.Sum256(want) || n != int64(len(want)) || last != n || total != n || calls < 2 {
		t.Fatalf("got %d bytes (progress %d/%d over %d calls), want the %d of the direct download", len(got), last, total, calls, len(want))
	}
	if len(p.seen) != 2 {
		t.Fatalf("%d requests, want the cut one and a resumption", len(p.seen))
	}
	resumed := p.seen[1]
	if !strings.HasPrefix(resumed.Header.Get("Range"), "bytes=") || resumed.Header.Get("If-Range") == "" || resumed.Header.Get("Authorization") != "" {
		t.Fatalf("resumption headers: Range %q If-Range %q Authorization %q", resumed.Header.Get("Range"), resumed.Header.Get("If-Range"), resumed.Header.Get("Authorization"))
	}
	if _, _, ok := strings.Cut(resumed.Header.Get("Range"), "-"); !ok || resumed.Header.Get("Range") == "bytes=0-" {
		t.Fatalf("resumption did not start past the cut: %q", resumed.Header.Get("Range"))
	}
}
