package seedspeech_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"mediagen/internal/provider"
	"mediagen/internal/provider/seedspeech"
	"mediagen/internal/provider/seedspeech/seedspeechfake"
	"mediagen/internal/routing"
)

// Test audios: the fake does not decode them, only the client names their format.
var refs = map[string][]byte{
	"a.mp3": append([]byte("ID3\x04"), make([]byte, 64)...),
	"b.wav": append([]byte("RIFF\x00\x00\x00\x00WAVE"), make([]byte, 64)...),
	"c.ogg": append([]byte("OggS"), make([]byte, 64)...),
	"d.txt": []byte("not audio at all"),
}

func start(t *testing.T, cfg seedspeechfake.Config) (*seedspeechfake.Server, *seedspeech.Client) {
	t.Helper()
	mp3 := filepath.Join(t.TempDir(), "s.mp3")
	if err := os.WriteFile(mp3, []byte("ID3 fake mp3"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Token, cfg.AppID, cfg.Speakers, cfg.Voices, cfg.Speech = "tok-0123", "app-1", []string{"S_slot1"}, []string{"BV001_streaming"}, mp3
	fake := seedspeechfake.Start(cfg)
	t.Cleanup(fake.Close)
	c, err := seedspeech.New(seedspeech.Config{BaseURL: fake.Base(), Token: "tok-0123", AppID: "app-1", SpeakerID: "S_slot1", Voice: "BV001_streaming",
		HTTP: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: fake.TLS()}}, Poll: time.Millisecond,
		ReadReference: func(_ context.Context, src provider.Source, _ int64) ([]byte, error) { return refs[src.URL], nil }})
	if err != nil {
		t.Fatal(err)
	}
	return fake, c
}

func audio(names ...string) []provider.Input {
	var out []provider.Input
	for _, n := range names {
		out = append(out, provider.Input{Type: "audio_url", Role: "reference_audio", Source: provider.Source{URL: n}})
	}
	return out
}

// Three audio references train the slot once (their bytes and formats as sent), and the
// synthesis speaks with the voice trained on them; the same references again do not train
// again; text only speaks with the preset voice.
func TestSeedSpeechClonesFromThreeAudioReferences(t *testing.T) {
	t.Parallel()
	fake, c := start(t, seedspeechfake.Config{})
	ctx := context.Background()
	sp, err := c.Synthesize(ctx, provider.SpeechRequest{IdempotencyKey: "speech_1", Text: "hello", Mode: "audio", References: audio("a.mp3", "b.wav", "c.ogg")})
	if err != nil {
		t.Fatal(err)
	}
	rc, _ := sp.Source.Open(ctx)
	got, _ := io.ReadAll(rc)
	if string(got) != "ID3 fake mp3" || sp.ContentType != "audio/mpeg" {
		t.Errorf("audio %q %s", got, sp.ContentType)
	}
	want := []string{seedspeechfake.Digest(refs["a.mp3"]), seedspeechfake.Digest(refs["b.wav"]), seedspeechfake.Digest(refs["c.ogg"])}
	ups := fake.Uploads()
	if len(ups) != 1 || !slices.Equal(ups[0].Digests, want) || !slices.Equal(ups[0].Formats, []string{"mp3", "wav", "ogg"}) || ups[0].ModelType != 1 {
		t.Errorf("uploads %+v", ups)
	}
	if _, err := c.Synthesize(ctx, provider.SpeechRequest{IdempotencyKey: "speech_2", Text: "again", Mode: "audio", References: audio("a.mp3", "b.wav", "c.ogg")}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Synthesize(ctx, provider.SpeechRequest{IdempotencyKey: "speech_3", Text: "plain", Mode: "text"}); err != nil {
		t.Fatal(err)
	}
	syn := fake.Syntheses()
	if len(fake.Uploads()) != 1 || len(syn) != 3 || syn[0].Cluster != "volcano_icl" || syn[0].Voice != "S_slot1" || !slices.Equal(syn[0].TrainedOn, want) ||
		syn[0].ReqID != "speech_1" || !slices.Equal(syn[1].TrainedOn, want) || syn[2].Cluster != "volcano_tts" || syn[2].Voice != "BV001_streaming" {
		t.Errorf("syntheses %+v, uploads %d", syn, len(fake.Uploads()))
	}
	if v := fake.Violations(); len(v) > 0 {
		t.Errorf("violations %v", v)
	}
}

// Each failure is classified so that the speech service retries what made nothing, moves to
// another account on an account's problem, and never pays twice for a synthesis whose
// answer was lost.
func TestSeedSpeechFaultsAreClassified(t *testing.T) {
	t.Parallel()
	isPermanent := func(err error) bool { return errors.Is(err, provider.ErrPermanent) }
	for _, tt := range []struct {
		name   string
		fault  string
		train  string
		refs   []provider.Input
		is     func(error) bool
		billed int
	}{
		{"a 500 is transient", seedspeechfake.Fault500, "", nil, func(err error) bool { return errors.Is(err, provider.ErrTransient) }, 0},
		{"a 429 is rate-limited", seedspeechfake.Fault429, "", nil, routing.RateLimited, 0},
		{"a 401 is the account's", seedspeechfake.Fault401, "", nil, func(err error) bool { return errors.Is(err, provider.ErrAccount) }, 0},
		{"a 403 is the account's", seedspeechfake.Fault403, "", nil, func(err error) bool { return errors.Is(err, provider.ErrAccount) }, 0},
		{"a lost answer is never sent again", seedspeechfake.FaultLose, "", nil, func(err error) bool { return isPermanent(err) && errors.Is(err, provider.ErrOutcomeUnknown) }, 1},
		{"garbage is a lost answer", seedspeechfake.FaultGarbage, "", nil, func(err error) bool { return isPermanent(err) && errors.Is(err, provider.ErrOutcomeUnknown) }, 1},
		{"a refused text is permanent", seedspeechfake.FaultRefuse, "", nil, isPermanent, 0},
		{"a call that never ends times out", seedspeechfake.FaultNeverEnds, "", nil, func(err error) bool {
			return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, provider.ErrOutcomeUnknown)
		}, 0},
		{"a failed training is permanent", "", seedspeechfake.TrainFail, audio("a.mp3"), isPermanent, 0},
		{"a refused training audio is permanent", "", seedspeechfake.TrainRefuse, audio("a.mp3"), isPermanent, 0},
		{"a reference that is no audio is permanent", "", "", audio("d.txt"), isPermanent, 0},
		{"an image reference is refused", "", "", []provider.Input{{Type: "image_url", Source: provider.Source{URL: "x.png"}}}, isPermanent, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake, c := start(t, seedspeechfake.Config{Fault: func(string) string { return tt.fault }, TrainFault: tt.train})
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			defer cancel()
			_, err := c.Synthesize(ctx, provider.SpeechRequest{IdempotencyKey: "speech_f", Text: "hello", References: tt.refs})
			if err == nil || !tt.is(err) {
				t.Fatalf("error %v", err)
			}
			if n, _ := fake.Billed(); n != tt.billed {
				t.Errorf("billed %d, want %d", n, tt.billed)
			}
		})
	}
}

// Check reads the clone slot's status with the account's token, and names a refused token.
func TestSeedSpeechCheck(t *testing.T) {
	t.Parallel()
	_, c := start(t, seedspeechfake.Config{})
	if err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	fake, _ := start(t, seedspeechfake.Config{})
	bad, _ := seedspeech.New(seedspeech.Config{BaseURL: fake.Base(), Token: "wrong", AppID: "app-1", SpeakerID: "S_slot1",
		HTTP: &http.Client{Transport: &http.Transport{TLSClientConfig: fake.TLS()}}})
	if err := bad.Check(context.Background()); !errors.Is(err, provider.ErrAccount) {
		t.Fatalf("check with a wrong token: %v", err)
	}
}

// Requests with different references at once never speak with each other's voice: the slot
// is held from a training to the end of its synthesis.
func TestSeedSpeechConcurrentClonesKeepTheirOwnVoice(t *testing.T) {
	t.Parallel()
	fake, c := start(t, seedspeechfake.Config{})
	sets := map[string][]string{"r-mp3": {"a.mp3"}, "r-wav": {"b.wav"}, "r-ogg": {"c.ogg"}, "r-two": {"a.mp3", "b.wav"}}
	errs := make(chan error, 4*len(sets))
	for i := range 4 {
		for key, names := range sets {
			go func() {
				_, err := c.Synthesize(context.Background(), provider.SpeechRequest{IdempotencyKey: key + "-" + string(rune('0'+i)), Text: "hi", References: audio(names...)})
				errs <- err
			}()
		}
	}
	for range 4 * len(sets) {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range fake.Syntheses() {
		var want []string
		for _, n := range sets[s.ReqID[:len(s.ReqID)-2]] {
			want = append(want, seedspeechfake.Digest(refs[n]))
		}
		if !slices.Equal(s.TrainedOn, want) {
			t.Errorf("%s spoke with a voice trained on %v, want %v", s.ReqID, s.TrainedOn, want)
		}
	}
}
