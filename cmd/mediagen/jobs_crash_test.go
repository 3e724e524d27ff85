package main

import (
	"database/sql"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/testkit"
)

// heldSource is a loopback HTTPS server for the sources and callbacks of a crash test: while
// held, every request hangs until its client goes away (the killed process), so the kill
// lands mid-fetch and mid-delivery; released, it answers.
type heldSource struct {
	srv      *httptest.Server
	hold     atomic.Bool
	fetching chan string // paths of requests being held
	mu       sync.Mutex
	hooks    []string // X-Mediagen-Attempt of each callback answered
	certFile string   // its certificate, for the child's SSL_CERT_FILE
}

func newHeldSource(t *testing.T, png []byte) *heldSource {
	t.Helper()
	h := &heldSource{fetching: make(chan string, 16)}
	h.hold.Store(true)
	h.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if h.hold.Load() {
			h.fetching <- r.URL.Path
			<-r.Context().Done()
			return
		}
		if r.URL.Path == "/hook" {
			h.mu.Lock()
			h.hooks = append(h.hooks, r.Header.Get("X-Mediagen-Attempt"))
			h.mu.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Content-Type", "image/png")
		_, _ = w.Write(png)
	}))
	t.Cleanup(h.srv.Close)
	h.certFile = filepath.Join(t.TempDir(), "source.pem")
	block := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.srv.Certificate().Raw})
	if err := os.WriteFile(h.certFile, block, 0o600); err != nil {
		t.Fatal(err)
	}
	return h
}

// waitHeld waits until a request for path is being held.
func (h *heldSource) waitHeld(t *testing.T, path string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case p := <-h.fetching:
			if p == path {
				return
			}
		case <-timeout:
			t.Fatalf("no request for %s arrived", path)
		}
	}
}

func (h *heldSource) answeredHooks() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.hooks...)
}

// postJSON calls the API with the key (postAs) and decodes the answer, demanding a 2xx status.
func postJSON(t *testing.T, base, key, path, body string) map[string]any {
	t.Helper()
	status, b := postAs(t, base, key, path, body)
	if status/100 != 2 {
		t.Fatalf("%s: %d %s", path, status, b)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v: %s", path, err, b)
	}
	return m
}

// TestSIGKILLMidJobLosesNoJobOfAnyKind kills the server with SIGKILL while a job of every
// per-record kind runs — a video task mid-render, an asset mid-fetch, a verification callback
// mid-delivery — restarts it on the same data, and checks that each job is taken over and
// finished once, with its killed attempt counted, and that the periodic jobs are neither lost
// nor doubled.
func TestSIGKILLMidJobLosesNoJobOfAnyKind(t *testing.T) {
	t.Parallel()
	requireTools(t)
	src := newHeldSource(t, pngOf(t, 20, 10))
	dir := t.TempDir()
	addr := testkit.FreeAddr(t)
	base := "http://" + addr
	// A short job lease: the killed process's jobs are taken over within 2 s of the restart.
	args := []string{"serve", "--listen", addr, "--data-dir", dir, "--sandbox-pace", "1500ms", "--workers", "2",
		"--log-level", "warn", "--fetch-allow", "loopback", "--job-lease", "2s"}
	childEnv := []string{"MEDIAGEN_TEST_MAIN=1", "SSL_CERT_FILE=" + src.certFile}
	key := childKey(t, dir)
	first := startChild(t, childEnv, args...)
	waitReady(t, base)
	e := &e2e{t: t, key: key, tools: ffmpeg.Tools{}, base: base}

	g := postJSON(t, base, key, "/v1/vidgen/virtual/asset-groups/create", `{"Name":"crash"}`)["Id"].(string)
	asset := postJSON(t, base, key, "/v1/vidgen/virtual/assets/create",
		`{"GroupId":"`+g+`","URL":"`+src.srv.URL+`/cat.png","AssetType":"Image"}`)["Id"].(string)
	s := postJSON(t, base, key, "/v1/vidgen/real-human/validate-session/create", `{"CallbackURL":"`+src.srv.URL+`/hook"}`)
	token := s["VerifyToken"].(string)
	postJSON(t, base, "", "/verify/"+token+"/start", `{}`)
	src.waitHeld(t, "/cat.png")
	// The confirm is refused (check_incomplete) until the liveness check's shortest
	// duration (2 s) has passed since the start.
	testkit.WaitEvery(t, 50*time.Millisecond, 30*time.Second, "the verification was never confirmed", func() bool {
		status, _ := postAs(t, base, "", "/verify/"+token+"/confirm", `{}`)
		return status/100 == 2
	})
	src.waitHeld(t, "/hook")
	task := e.create(`{"model":"demo-video-mini","prompt":"kill me","metadata":{"duration":4,"resolution":"480p","ratio":"1:1"}}`)
	killMidRender(t, first, dir)
	src.hold.Store(false)

	startChild(t, childEnv, args...)
	waitReady(t, base)
	if got := e.wait(task); got.Status != "completed" {
		t.Errorf("task %s ended %s: %+v", task, got.Status, got.Error)
	}
	deadline := time.Now().Add(30 * time.Second)
	testkit.WaitEvery(t, 50*time.Millisecond, time.Until(deadline), "the asset was still Processing after the restart", func() bool {
		a := postJSON(t, base, key, "/v1/vidgen/virtual/assets/get", `{"Id":"`+asset+`"}`)
		if a["Status"] != "Active" && a["Status"] != "Processing" {
			t.Fatalf("asset after the restart: %v", a)
		}
		return a["Status"] == "Active"
	})
	testkit.WaitEvery(t, 50*time.Millisecond, time.Until(deadline), "the callback was never delivered after the restart", func() bool {
		return len(src.answeredHooks()) > 0
	})

	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "mediagen.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var attempts int
	if err := db.QueryRow(`SELECT attempts FROM assets WHERE id = ?`, asset).Scan(&attempts); err != nil || attempts != 2 {
		t.Errorf("asset attempts %d (%v), want 2: the killed fetch and the one that finished", attempts, err)
	}
	// The hook answered before the server recorded the delivery and finished its job: wait
	// (bounded) for that record before reading it and the jobs left.
	var cbState string
	var cbAttempts int
	testkit.PollEvery(20*time.Millisecond, time.Until(deadline), func() bool {
		err := db.QueryRow(`SELECT callback_state, callback_attempts FROM verify_sessions WHERE callback_url <> ''`).Scan(&cbState, &cbAttempts)
		var callbackJobs int
		_ = db.QueryRow(`SELECT COUNT(*) FROM jobs WHERE kind = 'verify.callback'`).Scan(&callbackJobs)
		return err == nil && cbState != "pending" && callbackJobs == 0
	})
	if err := db.QueryRow(`SELECT callback_state, callback_attempts FROM verify_sessions WHERE callback_url <> ''`).Scan(&cbState, &cbAttempts); err != nil ||
		cbState != "delivered" || cbAttempts != 1 {
		t.Errorf("callback %s after %d recorded attempts (%v), want delivered after 1: the killed delivery recorded nothing", cbState, cbAttempts, err)
	}
	if hooks := src.answeredHooks(); len(hooks) != 1 || hooks[0] != "1" {
		t.Errorf("callbacks answered %v, want one, attempt 1", hooks)
	}
	var settled int
	_ = db.QueryRow(`SELECT COUNT(*) FROM ledger_txns WHERE ref = ? AND kind IN ('settle','release')`, task).Scan(&settled)
	if settled != 1 {
		t.Errorf("task settled %d times, want 1", settled)
	}
	// Every per-record job is finished (deleted); each periodic job is there once.
	rows, err := db.Query(`SELECT kind, COUNT(*) FROM jobs GROUP BY kind ORDER BY kind`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var left []string
	for rows.Next() {
		var kind string
		var n int
		if err := rows.Scan(&kind, &n); err != nil {
			t.Fatal(err)
		}
		left = append(left, fmt.Sprintf("%s=%d", kind, n))
	}
	if got := strings.Join(left, " "); got != "blob.retention=1 webhook.log_retention=1" {
		t.Errorf("jobs left: %s, want each periodic job once", got)
	}
}
