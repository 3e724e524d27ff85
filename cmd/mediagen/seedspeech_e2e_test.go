package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/media/ffmpeg"
	"mediagen/internal/media/samples"
	"mediagen/internal/money"
	"mediagen/internal/provider/seedspeech/seedspeechfake"
	"mediagen/internal/store"
)

const seedSpeechTestToken = "seed-e2e-token-0123456789"

// seedSpeechAccount is a seedspeech account's catalog entry at base.
func seedSpeechAccount(name, base, tokenEnv string) string {
	return "  - name: " + name + "\n    kind: seedspeech\n    base_url: " + base + "\n    api_key_env: " + tokenEnv + "\n" +
		"    app_id: \"app-e2e\"\n    speaker_id: S_e2e\n    voice: BV001_streaming\n    cost: {currency: USD, per_character: 0.00002}\n"
}

// seedSpeechWorld is the fake Doubao speech API with the sandbox's sample voice as the
// references (the contract takes only public hosts: the samples are served in-process).
type seedSpeechWorld struct {
	fake *seedspeechfake.Server
	refs []string // three reference URLs
}

func startSeedSpeechWorld(t *testing.T, tools ffmpeg.Tools, dir string, fault func(string) string, opts ...func(*seedspeechfake.Config)) seedSpeechWorld {
	t.Helper()
	speech := filepath.Join(dir, "speech.mp3")
	if err := tools.Speak(context.Background(), "Hello from the fake", speech, ffmpeg.SpeakOptions{}); err != nil {
		t.Fatal(err)
	}
	voice := samples.URL("voice.mp3")
	w := seedSpeechWorld{refs: []string{voice, voice + "?take=2", voice + "?take=3"}}
	cfg := seedspeechfake.Config{Token: seedSpeechTestToken, AppID: "app-e2e", Speakers: []string{"S_e2e"},
		Voices: []string{"BV001_streaming"}, Speech: speech, Fault: fault}
	for _, o := range opts {
		o(&cfg)
	}
	w.fake = seedspeechfake.Start(cfg)
	t.Cleanup(w.fake.Close)
	return w
}

// sampleDigest is the fake's digest of a sample the server made in its data directory.
func sampleDigest(t *testing.T, dir, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "data", "samples", name))
	if err != nil {
		t.Fatal(err)
	}
	return seedspeechfake.Digest(b)
}

func refsJSON(typ string, urls ...string) string {
	var items []string
	for _, u := range urls {
		items = append(items, `{"type":"`+typ+`","url":"`+u+`"}`)
	}
	return `"references":[` + strings.Join(items, ",") + `]`
}

// Speech on a seedspeech account runs through the real server on the fake Doubao API: three
// audio references are read through the fetch policy and sent, as the vendor expects, as
// the audios of one voice-clone training into the account's slot, and the synthesis speaks
// with the voice trained on exactly them; text only speaks with the preset voice; an image
// reference is refused at submission, nothing written; the tenant pays the measured audio.
// A 500 is tried again; a lost answer, a refused text and a call that never ends fail refunded, the lost one never sent
// twice and recorded as the operator's possible loss.
func TestSeedSpeechClonesAVoiceFromThreeReferences(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	busy := 0
	w := startSeedSpeechWorld(t, tools, dir, func(text string) string {
		switch {
		case strings.HasPrefix(text, "busy") && busy == 0:
			busy++
			return seedspeechfake.Fault500
		case strings.HasPrefix(text, "lose"):
			return seedspeechfake.FaultLose
		case strings.HasPrefix(text, "refuse"):
			return seedspeechfake.FaultRefuse
		case strings.HasPrefix(text, "never"):
			return seedspeechfake.FaultNeverEnds
		}
		return ""
	})
	path := demoCatalogWith(t, t.TempDir(), seedSpeechAccount("seed-main", w.fake.Base(), "SEEDSPEECH_TEST_TOKEN"), map[string]string{"demo-speech": "seed-main"})
	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"SEEDSPEECH_TEST_TOKEN": seedSpeechTestToken}), &out, &logs)
	m.FetchTLS = w.fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--speech-timeout", "3s", "--sandbox-samples", "on", "--catalog", path)
	tenant, _ := m.cat().Tenant("demo")

	// An image reference: the vendor has no image-reference API; refused, nothing charged or sent.
	bad := e.speechError(`{"model":"demo-speech","input":"x","metadata":{`+refsJSON("image_url", samples.URL("still.jpg"))+`}}`, 400, "invalid_request_error")
	if bad.Error.Param != "metadata.references" {
		t.Errorf("image reference refused on %q", bad.Error.Param)
	}
	if e.used() != 0 || len(w.fake.Syntheses()) != 0 || len(w.fake.Uploads()) != 0 {
		t.Fatalf("a refused request charged %s or reached the vendor", e.used())
	}

	// Three audio references: one training on their bytes, a synthesis with that voice.
	s := e.speech(`{"model":"demo-speech","input":"Speak like them","metadata":{` + refsJSON("audio_url", w.refs...) + `}}`)
	if s.Duration <= 0 {
		t.Fatalf("speech on seedspeech: %+v", s)
	}
	d := sampleDigest(t, dir, "voice.mp3")
	digests := []string{d, d, d}
	ups := w.fake.Uploads()
	if len(ups) != 1 || ups[0].SpeakerID != "S_e2e" || !slices.Equal(ups[0].Digests, digests) || !slices.Equal(ups[0].Formats, []string{"mp3", "mp3", "mp3"}) {
		t.Errorf("trainings %+v, want one on the three references", ups)
	}
	syn := w.fake.Syntheses()
	if len(syn) != 1 || syn[0].Cluster != "volcano_icl" || syn[0].Voice != "S_e2e" || !slices.Equal(syn[0].TrainedOn, digests) || syn[0].Text != "Speak like them" {
		t.Errorf("syntheses %+v, want one with the voice trained on the references", syn)
	}
	if want, _ := billing.SecondsCost(rate(tenant.Rates.SpeechRate()), billing.SecondsToMicros(s.Duration)); e.used() != want {
		t.Errorf("speech charged %s, want %s for %.3f s", e.used(), want, s.Duration)
	}

	// Text only: the preset voice, no training.
	e.speech(`{"model":"demo-speech","input":"Plain text"}`)
	if syn := w.fake.Syntheses(); len(syn) != 2 || syn[1].Cluster != "volcano_tts" || syn[1].Voice != "BV001_streaming" || len(w.fake.Uploads()) != 1 {
		t.Errorf("text-only synthesis %+v", syn[len(syn)-1])
	}

	// A 500 made no audio: tried again, one synthesis billed.
	if s := e.speech(`{"model":"demo-speech","input":"busy at first"}`); s.Duration <= 0 {
		t.Fatalf("speech after a 500: %+v", s)
	}
	if w.fake.BilledFor("busy at first") != 1 {
		t.Errorf("a retried 500 billed %d syntheses", w.fake.BilledFor("busy at first"))
	}

	// Failures are refunded in full; a lost answer is never sent again.
	before := e.used()
	e.speechError(`{"model":"demo-speech","input":"lose this answer","metadata":{`+refsJSON("audio_url", w.refs[0])+`}}`, 502, "speech_generation_failed")
	if n := w.fake.BilledFor("lose this answer"); n != 1 || w.fake.Lost() != 1 {
		t.Errorf("a lost answer billed %d times (lost %d), want once", n, w.fake.Lost())
	}
	// A text the vendor refuses (3011): the client's own input, a 400 on it, nothing charged.
	if r := e.speechError(`{"model":"demo-speech","input":"refuse this text"}`, 400, "invalid_request_error"); r.Error.Param != "input" {
		t.Errorf("a refused text blamed %q", r.Error.Param)
	}
	e.speechError(`{"model":"demo-speech","input":"never answers"}`, 504, "speech_timeout")
	if e.used() != before {
		t.Errorf("failed speeches charged %s", e.used()-before)
	}
	ex, err := m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "seed-main"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 2 || ex[0].Kind != billing.ExcessLostCreate || ex[1].Kind != billing.ExcessLostCreate {
		t.Errorf("upstream excess %+v, want two lost_create records (the lost answer, the call that never ended)", ex)
	}
	if v := w.fake.Violations(); len(v) > 0 {
		t.Errorf("wire format violations %v", v)
	}
	if strings.Contains(logs.String(), seedSpeechTestToken) || strings.Contains(out.String(), seedSpeechTestToken) {
		t.Error("the token is in the logs")
	}
}

// A speech alias over [espeak, seedspeech] sends each request only to the accounts that can
// use it: text to espeak (first in the list), audio references to the seedspeech account
// alone (espeak refuses references rather than ignore them), and an image reference, which
// neither can use, is refused at submission with nothing written, reserved or sent. An
// alias over espeak alone refuses references the same way.
func TestRoutedSpeechSendsReferencesOnlyToSeedSpeech(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	w := startSeedSpeechWorld(t, tools, dir, nil)
	accounts := "  - name: local-speech\n    kind: espeak\n" + seedSpeechAccount("seed-main", w.fake.Base(), "SEEDSPEECH_TEST_TOKEN")
	path := demoCatalogWith(t, t.TempDir(), accounts, map[string]string{"demo-speech": "local-speech"})
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte("upstream: local-speech\n        model: sandbox-speech"),
		[]byte("upstreams: [local-speech, seed-main]\n        model: seed-icl"), 1)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	m := NewMain(env(map[string]string{"SEEDSPEECH_TEST_TOKEN": seedSpeechTestToken}), io.Discard, io.Discard)
	m.FetchTLS = w.fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--speech-timeout", "5s", "--sandbox-samples", "on", "--catalog", path)

	// Text: the first account, espeak; nothing reaches the vendor.
	if s := e.speech(`{"model":"demo-speech","input":"Plain text for espeak"}`); s.Duration <= 0 {
		t.Fatalf("text speech: %+v", s)
	}
	if n := len(w.fake.Syntheses()); n != 0 {
		t.Errorf("a text-only request reached the vendor %d times", n)
	}
	// Audio references: seedspeech alone, its voice trained on them.
	if s := e.speech(`{"model":"demo-speech","input":"Cloned voice please","metadata":{` + refsJSON("audio_url", w.refs...) + `}}`); s.Duration <= 0 {
		t.Fatalf("reference speech: %+v", s)
	}
	syn := w.fake.Syntheses()
	if len(w.fake.Uploads()) != 1 || len(syn) != 1 || syn[0].Cluster != "volcano_icl" || len(syn[0].TrainedOn) != 3 {
		t.Errorf("the reference request on the vendor: uploads %+v, syntheses %+v", w.fake.Uploads(), syn)
	}
	// An image reference: no account can use it; refused, nothing charged or sent.
	before := e.used()
	r := e.speechError(`{"model":"demo-speech","input":"x","metadata":{"client_request_id":"img-1",`+refsJSON("image_url", samples.URL("still.jpg"))+`}}`, 400, "invalid_request_error")
	if r.Error.Param != "metadata.references" || e.used() != before || len(w.fake.Syntheses()) != 1 {
		t.Errorf("image reference: param %q, charged %s, syntheses %d", r.Error.Param, e.used()-before, len(w.fake.Syntheses()))
	}
	// Nothing was written: its client_request_id is still free for another request.
	if s := e.speech(`{"model":"demo-speech","input":"Another request","metadata":{"client_request_id":"img-1"}}`); s.Duration <= 0 {
		t.Errorf("the refused request's client_request_id: %+v", s)
	}

	// espeak alone refuses references (it used to accept and ignore them).
	solo := demoCatalogWith(t, t.TempDir(), "  - name: local-speech\n    kind: espeak\n", map[string]string{"demo-speech": "local-speech"})
	m2 := NewMain(env(nil), io.Discard, io.Discard)
	e2 := startRemote(t, m2, t.TempDir(), tools, 100*money.Scale, "--sandbox-samples", "on", "--catalog", solo)
	for _, refs := range []string{refsJSON("audio_url", w.refs[0]), refsJSON("image_url", samples.URL("still.jpg"))} {
		r := e2.speechError(`{"model":"demo-speech","input":"x","metadata":{`+refs+`}}`, 400, "invalid_request_error")
		if r.Error.Param != "metadata.references" || !strings.Contains(r.Error.Message, "text only") {
			t.Errorf("espeak with %s: %+v", refs, r.Error)
		}
	}
	if e2.used() != 0 {
		t.Errorf("refused requests charged %s", e2.used())
	}
}
