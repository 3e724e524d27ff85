package main

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-json-experiment/json"

	"mediagen/internal/billing"
	"mediagen/internal/money"
)

type apiSpeech struct {
	ID               string  `json:"id"`
	Object           string  `json:"object"`
	Created          int64   `json:"created"`
	Model            string  `json:"model"`
	URL              string  `json:"url"`
	URLExpiresAt     int64   `json:"url_expires_at"`
	Duration         float64 `json:"duration"`
	OriginalDuration float64 `json:"original_duration"`
	Usage            struct {
		Type             string  `json:"type"`
		Duration         float64 `json:"duration"`
		OriginalDuration float64 `json:"original_duration"`
	} `json:"usage"`
	Metadata *struct {
		ClientRequestID string `json:"client_request_id"`
	} `json:"metadata"`
}

type apiError struct {
	Error struct {
		Message string `json:"message"`
		Type    string `json:"type"`
		Code    string `json:"code"`
		Param   string `json:"param"`
	} `json:"error"`
}

func (e *e2e) speech(body string) apiSpeech {
	e.t.Helper()
	status, b := e.call("POST", "/v1/audio/speech", body)
	if status != 200 {
		e.t.Fatalf("speech: %d %s", status, b)
	}
	var s apiSpeech
	if err := json.Unmarshal(b, &s, json.RejectUnknownMembers(true)); err != nil {
		e.t.Fatalf("speech body: %v: %s", err, b)
	}
	if strings.Contains(string(b), "null") || s.Object != "audio.speech" || s.Model != "demo-speech" || s.Usage.Type != "seconds" ||
		s.Usage.Duration != s.Duration || s.OriginalDuration != s.Duration || s.URLExpiresAt <= time.Now().Unix() {
		e.t.Errorf("speech answer %s", b)
	}
	return s
}

func (e *e2e) speechError(body string, status int, code string) apiError {
	e.t.Helper()
	got, b := e.call("POST", "/v1/audio/speech", body)
	var ae apiError
	if err := json.Unmarshal(b, &ae, json.RejectUnknownMembers(true)); err != nil || got != status || ae.Error.Code != code {
		e.t.Fatalf("got %d %s, want %d %s (%v)", got, b, status, code, err)
	}
	return ae
}

// used reads the balance's used amount as exact micro-units.
func (e *e2e) used() money.Micros {
	e.t.Helper()
	_, u := e.balance()
	m, err := money.Parse(u)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// Speech over HTTP against the running service (sandbox engine, SQLite): the audio is
// downloaded through the signed link and measured with ffprobe; the charge is that measured
// duration × the demo rate to the micro-unit; replays, conflicts and a concurrent retry of a
// slow request charge once; an engine failure and a timeout refund in full.
func TestEndToEndSpeech(t *testing.T) {
	t.Parallel()
	e := startE2E(t, "--speech-timeout", "4s")
	demo, _ := e.cat.Tenant("demo")
	rate := rate(demo.Rates.SpeechRate())
	charge := func(s apiSpeech, name string) money.Micros {
		t.Helper()
		_, info := e.download(s.URL, name)
		if info.Container != "mp3" || !info.HasAudio || info.HasVideo {
			t.Errorf("%s: downloaded %+v", name, info)
		}
		us := billing.SecondsToMicros(info.Duration)
		if s.Duration != float64(us)/1e6 {
			t.Errorf("%s: answer says %v s, the file measures %v s", name, s.Duration, info.Duration)
		}
		c, err := billing.SecondsCost(rate, us)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	// Generate, download, measure, compare the charge.
	body := `{"model":"demo-speech","input":"The quick brown fox jumps over the lazy dog.","instructions":"Read it calmly.","metadata":{"client_request_id":"e2e-speech-1"}}`
	first := e.speech(body)
	if first.Metadata == nil || first.Metadata.ClientRequestID != "e2e-speech-1" {
		t.Errorf("metadata %+v", first.Metadata)
	}
	want := charge(first, "first.mp3")
	if got := e.used(); got != want {
		t.Fatalf("used %s, want the measured duration × %s = %s", got, rate, want)
	}

	// Replay: same id, the same audio, no new charge. Conflict: 409, no charge.
	again := e.speech(body)
	if again.ID != first.ID || again.Duration != first.Duration {
		t.Fatalf("replay %+v, original %+v", again, first)
	}
	if charge(again, "again.mp3") != want || e.used() != want {
		t.Fatalf("replay charged: used %s", e.used())
	}
	e.speechError(strings.Replace(body, "lazy dog", "sleepy cat", 1), 409, "idempotency_conflict")
	if e.used() != want {
		t.Fatalf("conflict charged: used %s", e.used())
	}

	// A concurrent retry while the first is still running returns its result; one charge.
	slow := `{"model":"demo-speech","input":"Patience is a virtue. [sandbox:slow=2s]","metadata":{"client_request_id":"e2e-speech-slow"}}`
	var wg sync.WaitGroup
	results := make([]apiSpeech, 3)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * 400 * time.Millisecond) // a staggered start: each retry arrives while the first still runs
			results[i] = e.speech(slow)
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.ID != results[0].ID || r.Duration != results[0].Duration {
			t.Errorf("concurrent result %d %+v, want %+v", i, r, results[0])
		}
	}
	want += charge(results[0], "slow.mp3")
	if got := e.used(); got != want {
		t.Fatalf("used %s after the concurrent retries, want %s (one charge each)", got, want)
	}

	// Failures refund the pre-charge in full; a replay returns the same error.
	fail := `{"model":"demo-speech","input":"This will not work. [sandbox:fail]","metadata":{"client_request_id":"e2e-speech-fail"}}`
	e.speechError(fail, 502, "speech_generation_failed")
	timeout := `{"model":"demo-speech","input":"This takes too long. [sandbox:slow=30s]","metadata":{"client_request_id":"e2e-speech-timeout"}}`
	start := time.Now()
	e.speechError(timeout, 504, "speech_timeout")
	if d := time.Since(start); d < 4*time.Second || d > 15*time.Second {
		t.Errorf("timeout answered after %v with --speech-timeout 4s", d)
	}
	e.speechError(fail, 502, "speech_generation_failed")
	e.speechError(timeout, 504, "speech_timeout")
	available, used := e.balance()
	if used != want.String() || available != (100*money.Scale-want).String() {
		t.Fatalf("balance available %s used %s; want used %s and the rest available", available, used, want)
	}
	if err := e.m.db.CheckLedger(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Validation failures are not charged and leave no record.
	e.speechError(`{"model":"demo-speech","input":"Hi","voice":"alloy"}`, 400, "invalid_request_error")
	e.speechError(`{"model":"demo-video-2.5","input":"Hi"}`, 400, "invalid_request_error")
	if got := e.used(); got != want {
		t.Fatalf("validation failures charged: used %s", got)
	}
}
