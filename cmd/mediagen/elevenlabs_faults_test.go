package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/elevenlabs/elevenlabsfake"
	"mediagen/internal/store"
)

// Every fault ElevenLabs can answer a synthesis with, through the real server: what made no
// audio (5xx, 429 with and without Retry-After) is tried again within the wait and ends in
// audio charged once or in a refund; a refused key, a content refusal and audio that is no
// audio fail refunded; audio longer than the text can take is cut to the text's bound and
// the cut recorded as the upstream's excess; a lost or cut answer and a synthesis that never
// answers fail refunded, are never sent twice, and record lost_create. The ledger holds.
func TestElevenLabsFaultsEndChargedOnceOrRefunded(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short.mp3"), filepath.Join(dir, "long.mp3")
	if err := tools.Speak(context.Background(), "Hello from the fake", short, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tools.Speak(context.Background(), strings.Repeat("This audio is far longer than the text asked for. ", 8), long, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	tries := map[string]int{}
	sent := func(f string) int {
		mu.Lock()
		defer mu.Unlock()
		return tries[f]
	}
	fake := elevenlabsfake.Start(elevenlabsfake.Config{Key: elevenlabsTestKey, Speech: short, Long: long,
		Fault: func(text string) string {
			f, _, _ := strings.Cut(text, " ")
			mu.Lock()
			tries[f]++
			n := tries[f]
			mu.Unlock()
			switch f {
			case "once500", "once429", "once429after":
				if n > 1 {
					return ""
				}
				return map[string]string{"once500": elevenlabsfake.Fault500, "once429": elevenlabsfake.Fault429, "once429after": elevenlabsfake.Fault429After}[f]
			case "always500":
				return elevenlabsfake.Fault500
			case "garbage":
				return elevenlabsfake.FaultGarbage
			case "longer":
				return elevenlabsfake.FaultLonger
			case "truncate":
				return elevenlabsfake.FaultTruncate
			case "lose":
				return elevenlabsfake.FaultLose
			case "refuse":
				return elevenlabsfake.FaultRefuse
			case "never":
				return elevenlabsfake.FaultNeverEnds
			}
			return ""
		}})
	t.Cleanup(fake.Close)
	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"ELEVENLABS_TEST_KEY": elevenlabsTestKey}), &out, &logs)
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--speech-timeout", "4s", "--catalog", elevenlabsCatalog(t, t.TempDir(), fake.Base()))
	tenant, _ := m.cat().Tenant("demo")

	for _, tc := range []struct {
		text    string
		status  int
		code    string
		sends   int    // syntheses ElevenLabs received for it
		excess  string // upstream excess kind recorded, if any
		charged bool
	}{
		{text: "once500 then audio", status: 200, sends: 2, charged: true},
		{text: "once429 then audio", status: 200, sends: 2, charged: true},
		{text: "once429after then audio", status: 200, sends: 2, charged: true},
		{text: "always500 never audio", status: 502, code: "speech_generation_failed", sends: 4},
		{text: "refuse this", status: 502, code: "speech_generation_failed", sends: 1},
		// Bytes that are no audio cannot be measured: failed as the service fails any audio it
		// cannot measure (500), refunded.
		{text: "garbage body", status: 500, code: "speech_generation_failed", sends: 1},
		{text: "longer audio", status: 200, sends: 1, excess: billing.ExcessDuration, charged: true},
		{text: "truncate the answer", status: 502, code: "speech_generation_failed", sends: 1, excess: billing.ExcessLostCreate},
		{text: "lose the answer", status: 502, code: "speech_generation_failed", sends: 1, excess: billing.ExcessLostCreate},
		{text: "never answers", status: 504, code: "speech_timeout", sends: 1, excess: billing.ExcessLostCreate},
	} {
		before := e.used()
		excessBefore, err := m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "eleven-main"})
		if err != nil {
			t.Fatal(err)
		}
		body := `{"model":"demo-speech","input":"` + tc.text + `"}`
		if tc.status == 200 {
			s := e.speech(body)
			want, _ := billing.SecondsCost(rate(tenant.Rates.SpeechRate()), billing.SecondsToMicros(s.Duration))
			if got := e.used() - before; got != want || !tc.charged {
				t.Errorf("%s: charged %s, want %s for the measured %.3f s", tc.text, got, want, s.Duration)
			}
		} else {
			e.speechError(body, tc.status, tc.code)
			if got := e.used() - before; got != 0 {
				t.Errorf("%s: failed speech charged %s", tc.text, got)
			}
		}
		f, _, _ := strings.Cut(tc.text, " ")
		if n := sent(f); n != tc.sends {
			t.Errorf("%s: ElevenLabs received %d syntheses, want %d", tc.text, n, tc.sends)
		}
		ex, err := m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "eleven-main"})
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case tc.excess == "" && len(ex) != len(excessBefore):
			t.Errorf("%s: excess recorded %+v", tc.text, ex[0])
		case tc.excess != "" && (len(ex) != len(excessBefore)+1 || ex[0].Kind != tc.excess || ex[0].Amount <= 0):
			t.Errorf("%s: excess %+v, want one %s", tc.text, ex, tc.excess)
		}
	}

	// A key ElevenLabs refuses: the speech fails refunded and nothing is billed.
	bad := NewMain(env(map[string]string{"ELEVENLABS_TEST_KEY": "xi-refused"}), &out, &logs)
	bad.FetchTLS = fake.TLS()
	e2 := startRemote(t, bad, t.TempDir(), tools, 100*money.Scale, "--catalog", elevenlabsCatalog(t, t.TempDir(), fake.Base()))
	billed, _ := fake.Billed()
	e2.speechError(`{"model":"demo-speech","input":"a refused key"}`, 502, "speech_generation_failed")
	if e2.used() != 0 {
		t.Errorf("a refused key charged %s", e2.used())
	}
	if n, _ := fake.Billed(); n != billed {
		t.Error("a refused key was billed")
	}
	for _, mm := range []*Main{m, bad} {
		if err := mm.db.CheckLedger(context.Background()); err != nil {
			t.Error(err)
		}
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("wire format violations %v", v)
	}
	if strings.Contains(logs.String(), elevenlabsTestKey) || strings.Contains(logs.String(), "xi-refused") {
		t.Error("a key is in the logs")
	}
}
