package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/provider/seedspeech/seedspeechfake"
	"mediagen/internal/store"
	"mediagen/internal/store/postgres/pgtest"
)

// The money property over the seedspeech kind: random texts, with no reference or one to three
// audio references, spoken through the fake Doubao API at random faults (5xx, 429, a refused
// text, garbage, answers lost after billing, syntheses that never answer). Whatever happens,
// every speech ends; a completed one is charged exactly its stored audio's measured seconds,
// at most its reservation; a failed one nothing; the vendor billed each speech at most once;
// every billed answer that was lost left a lost_create excess; the ledger balances. On both
// stores.
func TestSeedSpeechMoneyPropertyHoldsUnderRandomReferencesAndFaults(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("random speeches through a faulty fake upstream")
	}
	t.Run("sqlite", func(t *testing.T) { t.Parallel(); seedSpeechPropertyRun(t, "") })
	t.Run("postgres", func(t *testing.T) { t.Parallel(); seedSpeechPropertyRun(t, pgtest.URL(t)) })
}

func seedSpeechPropertyRun(t *testing.T, pgURL string) {
	tools := requireTools(t)
	dir := t.TempDir()
	faults := []string{seedspeechfake.Fault500, seedspeechfake.Fault429, seedspeechfake.FaultRefuse, seedspeechfake.FaultGarbage,
		seedspeechfake.FaultLose, seedspeechfake.FaultNeverEnds}
	var mu sync.Mutex
	frng := rand.New(rand.NewPCG(9, 9))
	w := startSeedSpeechWorld(t, tools, dir, func(string) string {
		mu.Lock()
		defer mu.Unlock()
		if frng.IntN(100) >= 35 {
			return ""
		}
		f := faults[frng.IntN(len(faults))]
		if f == seedspeechfake.FaultNeverEnds && frng.IntN(3) > 0 {
			return seedspeechfake.Fault500 // each never-ending one costs the whole wait: fewer of them
		}
		return f
	})
	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"SEEDSPEECH_TEST_TOKEN": seedSpeechTestToken}), &out, &logs)
	m.FetchTLS = w.fake.TLS()
	path := demoCatalogWith(t, t.TempDir(), seedSpeechAccount("seed-main", w.fake.Base(), "SEEDSPEECH_TEST_TOKEN"), map[string]string{"demo-speech": "seed-main"})
	args := []string{"--speech-timeout", "3s", "--sandbox-samples", "on", "--catalog", path}
	if pgURL != "" {
		args = append(args, "--db", pgURL)
	}
	e := startRemote(t, m, dir, tools, 1000*money.Scale, args...)
	tenant, _ := m.cat().Tenant("demo")

	n := sizeFromEnv(t, "MEDIAGEN_PROPERTY_TASKS", 30)
	rng := rand.New(rand.NewPCG(10, 10))
	words := []string{"harbour", "7", "ß", "中文", "!", "km/h", "quiet", "2026-11-29", "Hello"}
	outcomes := map[int]int{}
	for i := range n {
		var b strings.Builder
		fmt.Fprintf(&b, "s%d", i)
		for range 1 + rng.IntN(12) {
			b.WriteString(" " + words[rng.IntN(len(words))])
		}
		text := b.String()
		meta := ""
		if k := rng.IntN(4); k > 0 {
			meta = `,"metadata":{` + refsJSON("audio_url", w.refs[:k]...) + `}`
		}
		before := e.used()
		status, body := e.call("POST", "/v1/audio/speech", fmt.Sprintf(`{"model":"demo-speech","input":%q%s}`, text, meta))
		outcomes[status]++
		billed := w.fake.BilledFor(text)
		if billed > 1 {
			t.Errorf("%q: billed %d syntheses", text, billed)
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
	ex, err := m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "seed-main", Limit: 10 * n})
	if err != nil {
		t.Fatal(err)
	}
	lost := 0
	for _, r := range ex {
		if r.Kind == billing.ExcessLostCreate {
			lost++
		}
	}
	if lost != w.fake.Lost()+w.fake.Hung() {
		t.Errorf("%d lost_create records, want one per lost answer (%d) and never-ending synthesis (%d)", lost, w.fake.Lost(), w.fake.Hung())
	}
	t.Logf("%d speeches: statuses %v; %d trainings; %d excess records (%d lost_create); the fake lost %d answers",
		n, outcomes, len(w.fake.Uploads()), len(ex), lost, w.fake.Lost())
	if w.fake.Lost() == 0 {
		t.Error("no answer was lost: the property did not meet the fault it is about")
	}
	if v := w.fake.Violations(); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
	if err := m.db.CheckLedger(context.Background()); err != nil {
		t.Error(err)
	}
}
