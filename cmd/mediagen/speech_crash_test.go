package main

import (
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/testkit"
)

// retryBound is how long the first retry after a crash may take to answer: the dead attempt's
// heartbeat lease (5 s) plus a generation, with room for a loaded machine — and far below the
// 60 s speech timeout the server runs with, which is what a retry waited before the heartbeat.
const retryBound = 20 * time.Second

// TestCrashDuringSpeechIsTakenOverOnce kills the server with SIGKILL while it generates a
// speech request, restarts it, and retries the request with the same client_request_id, as
// the contract tells clients to. The record written before the engine was called survives;
// its attempt stops renewing its heartbeat lease when the process dies, so the first retry
// takes it over within seconds and answers with the audio — not after the speech timeout,
// and not with 409. The key is charged once, for the measured audio, and the ledger balances.
func TestCrashDuringSpeechIsTakenOverOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("kills and restarts the server")
	}
	t.Parallel()
	requireTools(t)
	dir := t.TempDir()
	addr := testkit.FreeAddr(t)
	base := "http://" + addr
	args := []string{"serve", "--listen", addr, "--data-dir", dir, "--speech-timeout", "60s", "--log-level", "warn"}
	key := childKey(t, dir)
	first := startChild(t, []string{"MEDIAGEN_TEST_MAIN=1"}, args...)
	waitReady(t, base)
	e := &e2e{t: t, key: key, base: base, tools: requireTools(t), cat: catalog.Demo()}
	body := `{"model":"demo-speech","input":"Crash test. [sandbox:slow=1s]","metadata":{"client_request_id":"crash-speech"}}`

	// The first request is cut off by the crash; it never answers.
	cut := make(chan int, 1)
	go func() {
		// Not e.call: the connection breaks, and only the test goroutine may fail the test.
		req, _ := http.NewRequest("POST", base+"/v1/audio/speech", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			cut <- 0
			return
		}
		res.Body.Close()
		cut <- res.StatusCode
	}()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "mediagen.db")+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	testkit.WaitEvery(t, 20*time.Millisecond, 10*time.Second, "the speech request was never recorded", func() bool {
		var n int
		err := db.QueryRow(`SELECT COUNT(*) FROM speeches WHERE status = 'pending'`).Scan(&n)
		return err == nil && n == 1
	})
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = first.cmd.Process.Wait()
	killed := time.Now()
	if status := <-cut; status == 200 {
		t.Fatal("the request answered 200 although the server was killed while generating")
	}

	startChild(t, []string{"MEDIAGEN_TEST_MAIN=1"}, args...)
	waitReady(t, base)
	// The first retry is answered, with the audio, well within the speech timeout.
	req, _ := http.NewRequest("POST", base+"/v1/audio/speech", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	res, err := (&http.Client{Timeout: retryBound}).Do(req)
	if err != nil {
		t.Fatalf("retry after the crash unanswered %v after the kill: %v", time.Since(killed).Round(time.Millisecond), err)
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("retry after the crash: %d %s", res.StatusCode, b)
	}
	took := time.Since(killed)
	if took > retryBound {
		t.Fatalf("retry answered %v after the kill, want within %v", took.Round(time.Millisecond), retryBound)
	}
	t.Logf("retry answered 200 %v after the kill (speech timeout 60 s)", took.Round(time.Millisecond))
	var got apiSpeech
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}

	// The audio is real, and the charge is its measured duration × the rate, once.
	_, info := e.download(got.URL, "crash.mp3")
	demo, _ := e.cat.Tenant("demo")
	want, err := billing.SecondsCost(rate(demo.Rates.SpeechRate()), billing.SecondsToMicros(info.Duration))
	if err != nil {
		t.Fatal(err)
	}
	if used := e.used(); used != want {
		t.Errorf("used %s, want %s (measured %.3f s)", used, want, info.Duration)
	}
	again := e.speech(body)
	if again.ID != got.ID || e.used() != want {
		t.Errorf("replay: id %s (want %s), used %s", again.ID, got.ID, e.used())
	}
	var settlements, unbalanced int
	if err := db.QueryRow(`SELECT COUNT(*) FROM ledger_txns WHERE ref = ? AND kind <> 'reserve'`, got.ID).Scan(&settlements); err != nil || settlements != 1 {
		t.Errorf("settlements of %s: %d (%v), want 1", got.ID, settlements, err)
	}
	_ = db.QueryRow(`SELECT COUNT(*) FROM (SELECT txn_id FROM ledger_entries GROUP BY txn_id HAVING SUM(amount) <> 0)`).Scan(&unbalanced)
	if unbalanced != 0 {
		t.Errorf("%d unbalanced ledger transactions", unbalanced)
	}
}
