package main

import (
	"database/sql"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
)

// TestCrashDuringSpeechIsTakenOverOnce kills the server with SIGKILL while it generates a
// speech request, restarts it, and retries the request with the same client_request_id, as
// the contract tells clients to. The record written before the engine was called survives;
// once its attempt deadline has passed (speech timeout + the 30 s grace), the retry takes it
// over and generates the audio. The key is charged once, for the measured audio, and the
// ledger balances.
func TestCrashDuringSpeechIsTakenOverOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 30 s attempt deadline")
	}
	t.Parallel()
	requireTools(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	base := "http://" + addr
	args := []string{"serve", "--listen", addr, "--data-dir", dir, "--speech-timeout", "4s", "--log-level", "warn"}
	first := startChild(t, []string{"MEDIAGEN_TEST_MAIN=1"}, args...)
	waitReady(t, base)
	key := reKey.FindString(first.stdout.String())
	if key == "" {
		t.Fatalf("no demo key: %s", first.stdout.String())
	}
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
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		if err := db.QueryRow(`SELECT COUNT(*) FROM speeches WHERE status = 'pending'`).Scan(&n); err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the speech request was never recorded")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_, _ = first.cmd.Process.Wait()
	if status := <-cut; status == 200 {
		t.Fatal("the request answered 200 although the server was killed while generating")
	}

	startChild(t, []string{"MEDIAGEN_TEST_MAIN=1"}, args...)
	waitReady(t, base)
	// Retries answer 409 request_in_progress until the dead attempt's deadline passes.
	var got apiSpeech
	deadline = time.Now().Add(90 * time.Second)
	for {
		status, b := e.call("POST", "/v1/audio/speech", body)
		if status == 200 {
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			break
		}
		var ae apiError
		_ = json.Unmarshal(b, &ae)
		if status != 409 || ae.Error.Code != "request_in_progress" {
			t.Fatalf("retry after the crash: %d %s", status, b)
		}
		if time.Now().After(deadline) {
			t.Fatal("the abandoned attempt was never taken over")
		}
		time.Sleep(time.Second)
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
