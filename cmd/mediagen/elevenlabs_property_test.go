package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/elevenlabs/elevenlabsfake"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres/pgtest"
)

// The money property over the elevenlabs kind: random texts spoken through the fake
// ElevenLabs API at random faults (5xx, 429 with and without Retry-After, content refusals,
// garbage, audio longer than the text allows, answers lost or cut after billing, syntheses
// that never answer). Whatever happens, every speech ends; a completed one is charged at most
// its reservation and exactly its stored audio's measured seconds; a failed one is charged
// nothing; ElevenLabs billed each speech at most once (once when completed); every billed
// answer that was lost left a lost_create excess; the ledger balances. On both stores.
func TestElevenLabsMoneyPropertyHoldsUnderRandomTextsAndFaults(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("random speeches through a faulty fake upstream")
	}
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); elevenlabsPropertyRun(t, "") })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); elevenlabsPropertyRun(t, pgtest.URL(t)) })
}

func elevenlabsPropertyRun(t *testing.T, pgURL string) {
	tools := requireTools(t)
	dir := t.TempDir()
	short, long := filepath.Join(dir, "short.mp3"), filepath.Join(dir, "long.mp3")
	if err := tools.Speak(context.Background(), "Hello from the fake", short, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tools.Speak(context.Background(), strings.Repeat("This audio is far longer than the text asked for. ", 8), long, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	faults := []string{elevenlabsfake.Fault500, elevenlabsfake.Fault429, elevenlabsfake.Fault429After, elevenlabsfake.FaultRefuse,
		elevenlabsfake.FaultGarbage, elevenlabsfake.FaultLonger, elevenlabsfake.FaultLose, elevenlabsfake.FaultTruncate, elevenlabsfake.FaultNeverEnds}
	var mu sync.Mutex
	frng := rand.New(rand.NewPCG(7, 7))
	fake := elevenlabsfake.Start(elevenlabsfake.Config{Key: elevenlabsTestKey, Speech: short, Long: long,
		Fault: func(string) string {
			mu.Lock()
			defer mu.Unlock()
			if frng.IntN(100) >= 35 {
				return ""
			}
			f := faults[frng.IntN(len(faults))]
			if f == elevenlabsfake.FaultNeverEnds && frng.IntN(3) > 0 {
				return elevenlabsfake.Fault500 // each never-ending one costs the whole wait: fewer of them
			}
			return f
		}})
	t.Cleanup(fake.Close)
	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"ELEVENLABS_TEST_KEY": elevenlabsTestKey}), &out, &logs)
	m.FetchTLS = fake.TLS()
	args := []string{"--speech-timeout", "3s", "--catalog", elevenlabsCatalog(t, t.TempDir(), fake.Base())}
	if pgURL != "" {
		args = append(args, "--db", pgURL)
	}
	e := startRemote(t, m, dir, tools, 1000*money.Scale, args...)
	tenant, _ := m.cat().Tenant("demo")

	n := sizeFromEnv(t, "MEDIAGEN_PROPERTY_TASKS", 30)
	rng := rand.New(rand.NewPCG(8, 8))
	words := []string{"harbour", "7", "ß", "中文", "!", "km/h", "quiet", "2026-11-29", "⣿", "Hello"}
	outcomes := map[int]int{}
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "s%d", i)
		for range 1 + rng.IntN(12) {
			b.WriteString(" " + words[rng.IntN(len(words))])
		}
		text := b.String()
		before := e.used()
		status, body := e.call("POST", "/v1/audio/speech", fmt.Sprintf(`{"model":"demo-speech","input":%q}`, text))
		outcomes[status]++
		billed := fake.BilledFor(text)
		if billed > 1 {
			t.Errorf("%q: ElevenLabs billed %d syntheses", text, billed)
		}
		if status != 200 {
			if got := e.used() - before; got != 0 {
				t.Errorf("%q: failed (%d) and charged %s", text, status, got)
			}
			continue
		}
		var s apiSpeech
		if err := json.Unmarshal(body, &s); err != nil {
			t.Fatal(err)
		}
		rec, err := m.db.Speech(context.Background(), s.ID)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := billing.SecondsCost(rate(tenant.Rates.SpeechRate()), billing.SecondsToMicros(s.Duration))
		if rec.Charged > rec.Reserved || rec.Charged != want || e.used()-before != want || billed != 1 {
			t.Errorf("%q: charged %s (reserved %s), want %s for %.3f s; billed %d", text, rec.Charged, rec.Reserved, want, s.Duration, billed)
		}
	}
	ex, err := m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "eleven-main", Limit: 10 * n})
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, r := range ex {
		if r.Kind == billing.ExcessLostCreate {
			lost++
		}
	}
	if lost != fake.Lost()+fake.Hung() {
		t.Errorf("%d lost_create records, want one per lost or cut answer (%d) and never-ending synthesis (%d)", lost, fake.Lost(), fake.Hung())
	}
	t.Logf("%d speeches: statuses %v; %d excess records (%d lost_create); the fake lost %d answers", n, outcomes, len(ex), lost, fake.Lost())
	if fake.Lost() == 0 {
		t.Error("no answer was lost: the property did not meet the fault it is about")
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
