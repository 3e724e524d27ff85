package main

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"

	"mediagen/internal/billing"
	"mediagen/internal/money"
	"mediagen/internal/provider/seedspeech/seedspeechfake"
	"mediagen/internal/store"
)

// Every fault the Doubao API can answer with, through the real server, ends in audio charged
// once or in a full refund: a 429 (code 3003) and a 5xx made no audio and are tried again; a
// refused token (401) or app (403) fails refunded with nothing billed; garbage after billing
// is a lost answer, never sent again, recorded as lost_create; a training that fails, or
// whose audio the vendor refuses, fails refunded with no synthesis billed.
func TestSeedSpeechFaultsEndChargedOnceOrRefunded(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	dir := t.TempDir()
	var mu sync.Mutex
	tries := map[string]int{}
	w := startSeedSpeechWorld(t, tools, dir, func(text string) string {
		f, _, _ := strings.Cut(text, " ")
		mu.Lock()
		tries[f]++
		n := tries[f]
		mu.Unlock()
		switch f {
		case "once429", "once500":
			if n > 1 {
				return ""
			}
			return map[string]string{"once429": seedspeechfake.Fault429, "once500": seedspeechfake.Fault500}[f]
		case "token401":
			return seedspeechfake.Fault401
		case "app403":
			return seedspeechfake.Fault403
		case "garbage":
			return seedspeechfake.FaultGarbage
		}
		return ""
	})
	path := demoCatalogWith(t, t.TempDir(), seedSpeechAccount("seed-main", w.fake.Base(), "SEEDSPEECH_TEST_TOKEN"), map[string]string{"demo-speech": "seed-main"})
	var out, logs bytes.Buffer
	m := NewMain(env(map[string]string{"SEEDSPEECH_TEST_TOKEN": seedSpeechTestToken}), &out, &logs)
	m.FetchTLS = w.fake.TLS()
	e := startRemote(t, m, dir, tools, 100*money.Scale, "--speech-timeout", "5s", "--sandbox-samples", "on", "--catalog", path)
	tenant, _ := m.cat().Tenant("demo")
	refs := `,"metadata":{` + refsJSON("audio_url", w.refs[0]) + `}`

	for _, text := range []string{"once429 then audio", "once500 then audio"} {
		before := e.used()
		s := e.speech(`{"model":"demo-speech","input":"` + text + `"` + refs + `}`)
		want, _ := billing.SecondsCost(rate(tenant.Rates.SpeechRate()), billing.SecondsToMicros(s.Duration))
		if got := e.used() - before; got != want || w.fake.BilledFor(text) != 1 {
			t.Errorf("%q: charged %s (want %s), billed upstream %d times", text, got, want, w.fake.BilledFor(text))
		}
	}
	if n := len(w.fake.Uploads()); n != 1 {
		t.Errorf("the same reference trained %d times, want once", n)
	}

	before := e.used()
	e.speechError(`{"model":"demo-speech","input":"token401 refused"}`, 502, "speech_generation_failed")
	e.speechError(`{"model":"demo-speech","input":"app403 refused"}`, 502, "speech_generation_failed")
	e.speechError(`{"model":"demo-speech","input":"garbage answer"`+refs+`}`, 502, "speech_generation_failed")
	if w.fake.BilledFor("token401 refused")+w.fake.BilledFor("app403 refused") != 0 || w.fake.BilledFor("garbage answer") != 1 {
		t.Errorf("billed upstream: 401 %d, 403 %d, garbage %d", w.fake.BilledFor("token401 refused"), w.fake.BilledFor("app403 refused"), w.fake.BilledFor("garbage answer"))
	}
	if e.used() != before {
		t.Errorf("failed speeches charged %s", e.used()-before)
	}
	ex, err := m.db.UpstreamExcess(context.Background(), store.ExcessFilter{Upstream: "seed-main"})
	if err != nil {
		t.Fatal(err)
	}
	if len(ex) != 1 || ex[0].Kind != billing.ExcessLostCreate || ex[0].Route != "speech" {
		t.Errorf("upstream excess %+v, want one lost_create (the garbage answer)", ex)
	}
	if v := w.fake.Violations(); len(v) > 0 {
		t.Errorf("wire format violations %v", v)
	}
	if strings.Contains(logs.String(), seedSpeechTestToken) || strings.Contains(out.String(), seedSpeechTestToken) {
		t.Error("the token is in the logs")
	}
}

// A training the vendor fails or refuses fails the speech as invalid input, refunded, with no
// synthesis billed.
func TestSeedSpeechRefusedTrainingIsRefunded(t *testing.T) {
	t.Parallel()
	tools := requireTools(t)
	for _, fault := range []string{seedspeechfake.TrainFail, seedspeechfake.TrainRefuse} {
		t.Run(fault, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			w := startSeedSpeechWorld(t, tools, dir, nil, func(c *seedspeechfake.Config) { c.TrainFault = fault })
			path := demoCatalogWith(t, t.TempDir(), seedSpeechAccount("seed-main", w.fake.Base(), "SEEDSPEECH_TEST_TOKEN"), map[string]string{"demo-speech": "seed-main"})
			m := NewMain(env(map[string]string{"SEEDSPEECH_TEST_TOKEN": seedSpeechTestToken}), &bytes.Buffer{}, &bytes.Buffer{})
			m.FetchTLS = w.fake.TLS()
			e := startRemote(t, m, dir, tools, 100*money.Scale, "--speech-timeout", "5s", "--sandbox-samples", "on", "--catalog", path)
			e.speechError(`{"model":"demo-speech","input":"clone me","metadata":{`+refsJSON("audio_url", w.refs...)+`}}`, 400, "invalid_request_error")
			if n, _ := w.fake.Billed(); n != 0 || len(w.fake.Syntheses()) != 0 || e.used() != 0 {
				t.Errorf("billed %d, syntheses %d, charged %s", n, len(w.fake.Syntheses()), e.used())
			}
		})
	}
}

// `admin upstream check` of a seedspeech account reads its clone slot's status with the token
// (free): OK with the token, FAILED with a wrong one, and no token in the output.
func TestAdminUpstreamCheckCallsSeedSpeech(t *testing.T) {
	t.Parallel()
	fake := seedspeechfake.Start(seedspeechfake.Config{Token: seedSpeechTestToken, AppID: "app-e2e", Speakers: []string{"S_e2e"}})
	t.Cleanup(fake.Close)
	cat := demoCatalogWith(t, t.TempDir(), seedSpeechAccount("seed-main", fake.Base(), "SEEDSPEECH_TEST_TOKEN"), map[string]string{"demo-speech": "seed-main"})
	for _, tc := range []struct {
		name, key, want string
		fails           bool
	}{
		{"with its token", seedSpeechTestToken, "seed-main (seedspeech): OK, read the clone slot S_e2e's status with the account's key at " + fake.Base(), false},
		{"with a wrong token", "seed-wrong-token-2", "seed-main (seedspeech): FAILED", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var out, errOut bytes.Buffer
			err := runAdminTLS(context.Background(), []string{"upstream", "check", "--catalog", cat, "seed-main"},
				env(map[string]string{"SEEDSPEECH_TEST_TOKEN": tc.key}), &out, &errOut, fake.TLS())
			text := out.String() + errOut.String()
			if err != nil {
				text += err.Error()
			}
			if (err != nil) != tc.fails || !strings.Contains(text, tc.want) {
				t.Errorf("check: %v\n%s; want %q", err, text, tc.want)
			}
			if strings.Contains(text, tc.key) {
				t.Errorf("the token is in the output: %s", text)
			}
			if n, _ := fake.Billed(); n != 0 || len(fake.Uploads()) != 0 {
				t.Errorf("the check billed %d syntheses, %d trainings", n, len(fake.Uploads()))
			}
		})
	}
}
