package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"mediagen/internal/billing"
	"mediagen/internal/catalog"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/money"
	"mediagen/internal/provider/elevenlabs/elevenlabsfake"
	"mediagen/internal/provider/openai/openaifake"
	"mediagen/internal/store"
)

const elevenlabsTestKey = "xi-e2e-key-0123456789"

// elevenlabsCatalog is the demo catalog with the speech alias bound to an elevenlabs account
// at base, speaking model eleven_flash_v2_5 with voice voice-e2e.
func elevenlabsCatalog(t *testing.T, dir, base string) string {
	t.Helper()
	accounts := "  - name: eleven-main\n    kind: elevenlabs\n    base_url: " + base + "\n    api_key_env: ELEVENLABS_TEST_KEY\n    voice: voice-e2e\n" +
		"    cost: {currency: USD, per_character: 0.00003}\n"
	path := demoCatalogWith(t, dir, accounts, map[string]string{"demo-speech": "eleven-main"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("upstream: eleven-main\n        model: sandbox-speech"), []byte("upstream: eleven-main\n        model: eleven_flash_v2_5"), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Speech on an elevenlabs account runs through the real server on the fake ElevenLabs API:
// the text and model as the SDK sends them, the account's voice in the path, billed to the
// tenant by the measured audio and to the operator's cost by characters; references are
// refused at submission; a 500 is tried again; a lost answer (billed upstream) and a content
// refusal fail the speech refunded, and the lost one is never sent twice.
func TestElevenLabsAccountSpeaksAndChargesMeasuredAudio(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	voice := filepath.Join(dir, "speech.mp3")
	if err := tools.Speak(context.Background(), "Hello from the fake", voice, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	busy := 0
	fake := elevenlabsfake.Start(elevenlabsfake.Config{Key: elevenlabsTestKey, Voices: []string{"voice-e2e"}, Speech: voice, Long: voice,
		Fault: func(text string) string {
			switch {
			case strings.HasPrefix(text, "busy") && busy == 0:
				busy++
				return elevenlabsfake.Fault500
			case strings.HasPrefix(text, "lose"):
				return elevenlabsfake.FaultLose
			case strings.HasPrefix(text, "refuse"):
				return elevenlabsfake.FaultRefuse
			case strings.HasPrefix(text, "never"):
				return elevenlabsfake.FaultNeverEnds
			}
			return ""
		}})
	t.Cleanup(fake.Close)

	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"ELEVENLABS_TEST_KEY": elevenlabsTestKey}), &out, &logs)
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--speech-timeout", "3s", "--catalog", elevenlabsCatalog(t, t.TempDir(), fake.Base()))
	tenant, _ := m.cat().Tenant("demo")

	// References: ElevenLabs text-to-speech takes none; refused at submission, nothing charged.
	e.speechError(`{"model":"demo-speech","input":"x","metadata":{"references":[{"type":"audio_url","url":"https://cdn.example.com/v.mp3"}]}}`, 400, "invalid_request_error")
	if used := e.used(); used != 0 {
		t.Fatalf("a refused request charged %s", used)
	}
	if n := len(fake.Bodies()); n != 0 {
		t.Fatalf("a refused request reached ElevenLabs %d times", n)
	}

	// Speech: input and instructions joined, as the API has one text.
	s := e.speech(`{"model":"demo-speech","input":"Hello there","instructions":"warmly"}`)
	if s.Duration <= 0 {
		t.Fatalf("speech on elevenlabs: %+v", s)
	}
	bodies := fake.Bodies()
	if len(bodies) != 1 || bodies[0]["model_id"] != "eleven_flash_v2_5" || !strings.Contains(bodies[0]["text"].(string), "Hello there") {
		t.Errorf("synthesis bodies %v", bodies)
	}
	if want, _ := billing.SecondsCost(rate(tenant.Rates.SpeechRate()), billing.SecondsToMicros(s.Duration)); e.used() != want {
		t.Errorf("speech charged %s, want %s for %.3f s", e.used(), want, s.Duration)
	}

	// A 500 made no audio: tried again, one synthesis billed.
	before := e.used()
	if s := e.speech(`{"model":"demo-speech","input":"busy at first"}`); s.Duration <= 0 {
		t.Fatalf("speech after a 500: %+v", s)
	}
	if n, _ := fake.Billed(); n != 2 {
		t.Errorf("%d syntheses billed after the 500, want 2", n)
	}
	if e.used() == before {
		t.Error("a spoken retry was not charged")
	}

	// A lost answer was billed upstream: the speech fails refunded, never sent again.
	before = e.used()
	sent := len(fake.Bodies())
	e.speechError(`{"model":"demo-speech","input":"lose this answer"}`, 502, "speech_generation_failed")
	if got := len(fake.Bodies()) - sent; got != 1 || fake.Lost() != 1 {
		t.Errorf("a lost answer was sent %d times (lost %d), want once", got, fake.Lost())
	}
	// A content refusal: failed, refunded, not retried.
	e.speechError(`{"model":"demo-speech","input":"refuse this text"}`, 502, "speech_generation_failed")
	// A synthesis that never answers: the wait ends it (speech_timeout), refunded; the call
	// left, so it too may have been billed.
	e.speechError(`{"model":"demo-speech","input":"never answers"}`, 504, "speech_timeout")
	if e.used() != before {
		t.Errorf("failed speeches charged %s", e.used()-before)
	}
	// The operator's possible loss of the two answers that were lost after the call left: one
	// lost_create excess each, at the speech's reservation; none for the refusal.
	ex, err := m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "eleven-main"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 2 || ex[0].Kind != billing.ExcessLostCreate || ex[1].Kind != billing.ExcessLostCreate || ex[0].Amount <= 0 ||
		ex[0].Route != "speech" || ex[0].Ref == ex[1].Ref {
		t.Errorf("upstream excess %+v, want two lost_create records", ex)
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("wire format violations %v", v)
	}

	// The operator's cost: characters at the account's per_character rate, of the speeches
	// that were delivered (the three failed texts count their characters, 16+16+13, at no cost).
	now := time.Now().UTC().Truncate(time.Hour)
	rows, err := m.db.UsageReport(context.Background(), store.UsageQuery{From: now.Add(-time.Hour), To: now.Add(2 * time.Hour),
		GroupBy: []string{store.UsageByUpstream, store.UsageByRoute}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Upstream != "eleven-main" || rows[0].Route != "speech" || rows[0].CostCurrency != "USD" ||
		rows[0].Characters == 0 || rows[0].Cost != money.Micros(30*(rows[0].Characters-45)) {
		t.Errorf("cost rows %+v, want speech on eleven-main at 30 micro-USD a character", rows)
	}
	if strings.Contains(logs.String(), elevenlabsTestKey) || strings.Contains(out.String(), elevenlabsTestKey) {
		t.Error("the key is in the logs")
	}
}

// A speech alias over [elevenlabs, openai] falls back across kinds: the elevenlabs account
// whose key ElevenLabs refuses is left (and avoided), the speech is spoken by the openai
// account and charged once, its cost on the account that spoke.
func TestRoutedSpeechFallsBackFromElevenLabsToOpenAI(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	voice := filepath.Join(dir, "speech.mp3")
	if err := tools.Speak(context.Background(), "Hello from a fake", voice, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	el := elevenlabsfake.Start(elevenlabsfake.Config{Key: elevenlabsTestKey, Speech: voice})
	t.Cleanup(el.Close)
	oa := openaifake.Start(openaifake.Config{Key: openaiTestKey, Speech: voice, Clip: voice})
	t.Cleanup(oa.Close)
	accounts := "  - name: eleven-refused\n    kind: elevenlabs\n    base_url: " + el.Base() + "\n    api_key_env: ELEVENLABS_WRONG_KEY\n    voice: v1\n" +
		"    cost: {currency: USD, per_character: 0.00003}\n" +
		"  - name: openai-main\n    kind: openai\n    base_url: " + oa.Base() + "\n    api_key_env: OPENAI_TEST_KEY\n" +
		"    cost: {currency: USD, per_character: 0.000015}\n"
	path := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{"demo-speech": "eleven-refused"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("upstream: eleven-refused\n        model: sandbox-speech"),
		[]byte("upstreams: [eleven-refused, openai-main]\n        model: eleven_flash_v2_5"), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"ELEVENLABS_WRONG_KEY": "xi-wrong", "OPENAI_TEST_KEY": openaiTestKey}), &out, &logs)
	m.FetchTLS = el.TLS()
	m.FetchTLS.RootCAs.AddCert(oa.Certificate())
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--catalog", path)
	tenant, _ := m.cat().Tenant("demo")

	s := e.speech(`{"model":"demo-speech","input":"Fall back, please"}`)
	if n := len(oa.Speeches()); n != 1 {
		t.Fatalf("openai spoke %d times, want once", n)
	}
	if n, _ := el.Billed(); n != 0 {
		t.Errorf("ElevenLabs billed %d syntheses for a refused key", n)
	}
	if want, _ := billing.SecondsCost(rate(tenant.Rates.SpeechRate()), billing.SecondsToMicros(s.Duration)); e.used() != want {
		t.Errorf("charged %s, want %s once", e.used(), want)
	}
	now := time.Now().UTC().Truncate(time.Hour)
	rows, err := m.db.UsageReport(context.Background(), store.UsageQuery{From: now.Add(-time.Hour), To: now.Add(2 * time.Hour),
		GroupBy: []string{store.UsageByUpstream}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Upstream != "openai-main" || rows[0].Cost != money.Micros(15*rows[0].Characters) {
		t.Errorf("cost rows %+v, want the speech on openai-main", rows)
	}
}

// `admin upstream check` of an elevenlabs account lists the models with the account's key
// (GET /v1/models: free, no synthesis billed): OK with the key, FAILED with a wrong one, and
// no key in the output.
func TestAdminUpstreamCheckCallsElevenLabs(t *testing.T) {
	t.Parallel()
	fake := elevenlabsfake.Start(elevenlabsfake.Config{Key: elevenlabsTestKey})
	t.Cleanup(fake.Close)
	cat := elevenlabsCatalog(t, t.TempDir(), fake.Base())
	for _, tc := range []struct {
		name, key, want string
		fails           bool
	}{
		{"with its key", elevenlabsTestKey, "eleven-main (elevenlabs): OK, listed models with the account's key at " + fake.Base(), false},
		{"with a wrong key", "xi-wrong-key-2", "eleven-main (elevenlabs): FAILED", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", cat, "eleven-main"},
				env(map[string]string{"ELEVENLABS_TEST_KEY": tc.key}), &out, &errOut, fake.TLS())
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err != nil) != tc.fails || !strings.Contains(text, tc.want) {
				t.Errorf("check: %v\n%s; want %q", err, text, tc.want)
			}
			if strings.Contains(text, tc.key) {
				t.Errorf("the key is in the output: %s", text)
			}
			if n, _ := fake.Billed(); n != 0 {
				t.Errorf("the check billed %d syntheses", n)
			}
		})
	}
}

// An elevenlabs account is handed no link (it speaks text only), so serve does not ask for
// --public-url because of it; its key is still required.
func TestElevenLabsAccountNeedsItsKeyButNoPublicURL(t *testing.T) {
	t.Parallel()
	cat, err := catalog.Load(elevenlabsCatalog(t, t.TempDir(), "https://api.elevenlabs.io"))
	if err != nil {
		t.Fatal(err)
	}
	c := &Config{}
	if got := c.serveNeeds(cat, env(map[string]string{"ELEVENLABS_TEST_KEY": elevenlabsTestKey}), false); len(got) != 0 {
		t.Errorf("serve needs %v", got)
	}
	if got := c.serveNeeds(cat, env(nil), false); len(got) != 1 || !strings.Contains(got[0], "ELEVENLABS_TEST_KEY") {
		t.Errorf("without the key, serve needs %v", got)
	}
}

// A reload rebuilds an elevenlabs account's client: a rotated key (its file's new content)
// and a new voice are what the next speech's call carries.
func TestCatalogReloadRebuildsTheElevenLabsClient(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	voice := filepath.Join(dir, "speech.mp3")
	if err := tools.Speak(context.Background(), "Hello from the fake", voice, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	fake := elevenlabsfake.Start(elevenlabsfake.Config{Key: "xi-key-one", MoreKeys: []string{"xi-key-two"}, Speech: voice})
	t.Cleanup(fake.Close)
	keyFile := filepath.Join(dir, "eleven.key")
	writeFile(t, keyFile, "xi-key-one\n")
	catDir := filepath.Join(dir, "cat")
	if err := os.MkdirAll(catDir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(voice string) string {
		path := elevenlabsCatalog(t, catDir, fake.Base())
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		b = bytes.Replace(b, []byte("api_key_env: ELEVENLABS_TEST_KEY\n    voice: voice-e2e"), []byte("api_key_file: "+keyFile+"\n    voice: "+voice), 1)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	m := NewMain(env(nil), &bytes.Buffer{}, &bytes.Buffer{})
	m.FetchTLS = fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--log-level", "error", "--catalog", write("voice-one"))
	e.speech(`{"model":"demo-speech","input":"before the rotation"}`)

	writeFile(t, keyFile, "xi-key-two\n")
	write("voice-two")
	if _, err := m.ReloadCatalog(context.Background(), triggerAPI); err != nil {
		t.Fatalf("reload: %v", err)
	}
	e.speech(`{"model":"demo-speech","input":"after the rotation"}`)
	want := []elevenlabsfake.Call{{Voice: "voice-one", Key: "xi-key-one"}, {Voice: "voice-two", Key: "xi-key-two"}}
	if got := fake.Calls(); !slices.Equal(got, want) {
		t.Errorf("calls %+v, want %+v", got, want)
	}
}
