package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestOwnerOfNamesTheRecordOfEveryKeyKind(t *testing.T) {
	for key, want := range map[string]string{
		"videos/video_abc/result.mp4":       "video_abc",
		"videos/video_abc/intermediate.mp4": "video_abc",
		"speech/speech_x/audio.mp3":         "speech_x",
		"assets/asset_1/source.png":         "asset_1",
		"stray.bin":                         "",
		"videos/video_abc":                  "",
	} {
		if got := ownerOf(key); got != want {
			t.Errorf("ownerOf(%q) = %q, want %q", key, got, want)
		}
	}
}

func TestVerdictFailsOnEveryBrokenFigure(t *testing.T) {
	good := func() *figures {
		return &figures{Kills: 100, LedgerOK: true, Settlements: map[int]int{1: 50}, UpstreamJobs: map[int]int{1: 20, 0: 2}}
	}
	clean := good()
	if clean.verdict(100); len(clean.Failures) != 0 {
		t.Fatalf("a clean run failed: %v", clean.Failures)
	}
	for name, c := range map[string]struct {
		breakIt func(*figures)
		want    string
	}{
		"too few kills":             {func(f *figures) { f.Kills = 99 }, "kills"},
		"a lost task":               {func(f *figures) { f.Lost = 1 }, "lost"},
		"a task not terminal":       {func(f *figures) { f.NotTerminal = 1 }, "not terminal"},
		"a double settlement":       {func(f *figures) { f.Settlements[2] = 1 }, "settled 2 times"},
		"an unsettled record":       {func(f *figures) { f.Settlements[0] = 1 }, "settled 0 times"},
		"a broken ledger":           {func(f *figures) { f.LedgerOK, f.LedgerErr = false, "txn x sums to 5" }, "ledger"},
		"a changed result":          {func(f *figures) { f.Changed = 1 }, "changed"},
		"an unreadable result":      {func(f *figures) { f.Unreadable = 1 }, "downloaded"},
		"a speech replay":           {func(f *figures) { f.SpeechChanged = 1 }, "other audio"},
		"an unanswered replay":      {func(f *figures) { f.SpeechUnanswered = 1 }, "no answer"},
		"an unreadable replay":      {func(f *figures) { f.SpeechUnreadable = 1 }, "could not be read"},
		"an unread first audio":     {func(f *figures) { f.SpeechUnseen = 1 }, "first audio"},
		"a 429 without Retry-After": {func(f *figures) { f.NoRetryAfter = 1 }, "Retry-After"},
		"a video replay":            {func(f *figures) { f.ReplayChanged = 1 }, "replays"},
		"an orphan object":          {func(f *figures) { f.Orphans = 1 }, "orphan"},
		"a duplicate paid job":      {func(f *figures) { f.UpstreamJobs[2] = 1 }, "2 upstream jobs"},
		"a completed task, no job":  {func(f *figures) { f.CompletedNotOne = 1 }, "exactly one"},
		"a wire violation":          {func(f *figures) { f.ArkViolations = 1 }, "wire format"},
	} {
		f := good()
		c.breakIt(f)
		f.verdict(100)
		if len(f.Failures) != 1 || !strings.Contains(f.Failures[0], c.want) {
			t.Errorf("%s: failures %q, want one naming %q", name, f.Failures, c.want)
		}
	}
}

// TestDownloadWaitsOutRefusalsAndReportsWhatItSaw: the harness's downloads honour Retry-After
// (a 429 then the file is the file, not changed audio), give up after downloadAttempts, and
// say what they saw: the status, or the hash.
func TestDownloadWaitsOutRefusalsAndReportsWhatItSaw(t *testing.T) {
	body := []byte("RIFF audio")
	sum := sha256.Sum256(body)
	want := hex.EncodeToString(sum[:])
	for _, c := range []struct {
		name         string
		refusals     int64 // 429s before the file
		retryAfter   string
		wantOK       bool
		wantAttempts int
		wantSeen     string
		wantNoHeader int64
	}{
		{"two refusals, then the file", 2, "0", true, 3, "200 sha256 " + want[:12], 0},
		{"refused every time: bounded", 1 << 30, "0", false, downloadAttempts, "429 after 10 attempts", 0},
		{"a Retry-After beyond the cap ends it at once", 1 << 30, "3600", false, 1, "429 after 1 attempts", 0},
		{"a 429 without Retry-After is counted", 1, "", true, 2, "200 sha256", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			var n atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if n.Add(1) <= c.refusals {
					if c.retryAfter != "" {
						w.Header().Set("Retry-After", c.retryAfter)
					}
					http.Error(w, `{"error":{}}`, http.StatusTooManyRequests)
					return
				}
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			w := &workload{client: srv.Client()}
			if c.retryAfter == "" {
				// The harness waits 1 s for a 429 without the header: keep the test short.
				defer func(d time.Duration) { noHeaderWait = d }(noHeaderWait)
				noHeaderWait = 0
			}
			got := w.download(context.Background(), srv.URL+"/v1/files/x")
			if got.ok() != c.wantOK || got.attempts != c.wantAttempts || !strings.HasPrefix(got.String(), c.wantSeen) {
				t.Fatalf("download: ok %v, %d attempts, %q; want ok %v, %d attempts, %q", got.ok(), got.attempts, got, c.wantOK, c.wantAttempts, c.wantSeen)
			}
			if c.wantOK && got.hash != want {
				t.Errorf("hash %s, want %s", got.hash, want)
			}
			if w.noRetryAfter.Load() != c.wantNoHeader {
				t.Errorf("429s without Retry-After: %d, want %d", w.noRetryAfter.Load(), c.wantNoHeader)
			}
		})
	}
}

// TestAPICallsWaitOutA429: the harness's API calls honour Retry-After too (bounded), so a
// key's rate limit is never taken for a failure of the service.
func TestAPICallsWaitOutA429(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 2 {
			w.Header().Set("Retry-After", "0")
			http.Error(w, `{"error":{}}`, http.StatusTooManyRequests)
			return
		}
		_, _ = w.Write([]byte(`{"id":"video_1"}`))
	}))
	defer srv.Close()
	w := &workload{client: srv.Client(), key: "mg_test"}
	status, b, err := w.do(context.Background(), "GET", srv.URL+"/v1/videos/video_1", "")
	if err != nil || status != http.StatusOK || string(b) != `{"id":"video_1"}` || w.apiRefusals.Load() != 2 {
		t.Errorf("do: %d %s %v after %d refusals; want 200 after 2", status, b, err, w.apiRefusals.Load())
	}
}
