package catalog

import (
	"strings"
	"testing"

	"mediagen/internal/contract"
)

const withSeedSpeech = `upstreams:
  - name: seed-main
    kind: seedspeech
    base_url: https://openspeech.bytedance.com
    api_key_env: SEEDSPEECH_TOKEN
    app_id: "123456789"
    speaker_id: S_abc123
    voice: BV001_streaming
tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-speech
        product: speech
        upstream: seed-main
        model: seed-icl
    rates:
      speech: 0.0002
`

// A seedspeech account speaks, with its preset voice or a voice cloned from audio
// references; it refuses image references and serves nothing else; its mistakes stop the
// load naming the account and the field.
func TestSeedSpeechAccountsCloneFromAudioAndRefuseImages(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withSeedSpeech))
	if err != nil {
		t.Fatal(err)
	}
	acc, _ := c.Upstream("seed-main")
	if acc.AppID != "123456789" || acc.SpeakerID != "S_abc123" || !acc.Kind.Remote() || !acc.Kind.Serves(ProductSpeech) || acc.Kind.Serves(ProductNative) {
		t.Errorf("seedspeech account %+v", acc)
	}
	for _, tt := range []struct{ name, old, new, want string }{
		{"an app id is required", "    app_id: \"123456789\"\n", "", `upstream "seed-main": app_id is required`},
		{"a clone slot is required", "    speaker_id: S_abc123\n", "", `upstream "seed-main": speaker_id is required`},
		{"a clone slot has the console's form", "S_abc123", "abc", `speaker_id is required`},
		{"the key must be named", "    api_key_env: SEEDSPEECH_TOKEN\n", "", "give exactly one of api_key_env"},
		{"no app id on other kinds", "    kind: seedspeech\n", "    kind: elevenlabs\n", "app_id and speaker_id apply to kind seedspeech only"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("c.yaml", []byte(strings.Replace(withSeedSpeech, tt.old, tt.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	audio := []contract.SpeechReference{{Type: "audio_url", URL: "https://x/a.mp3"}, {Type: "audio_url", URL: "https://x/b.mp3"}, {Type: "audio_url", URL: "https://x/c.mp3"}}
	image := []contract.SpeechReference{{Type: "image_url", URL: "https://x/a.png"}}
	noVoice := acc
	noVoice.Voice = ""
	for _, tt := range []struct {
		name string
		acc  UpstreamAccount
		refs []contract.SpeechReference
		want string
	}{
		{"three audio references are cloned", acc, audio, ""},
		{"text only speaks with the preset voice", acc, nil, ""},
		{"an image reference is refused", acc, image, "metadata.references"},
		{"text only without a preset voice is refused", noVoice, nil, "metadata.references"},
		{"audio without a preset voice is cloned", noVoice, audio, ""},
		{"espeak refuses audio references", UpstreamAccount{Kind: KindEspeak}, audio, "metadata.references"},
		{"espeak refuses an image reference", UpstreamAccount{Kind: KindEspeak}, image, "metadata.references"},
		{"espeak speaks text", UpstreamAccount{Kind: KindEspeak}, nil, ""},
		{"openai refuses audio references", UpstreamAccount{Kind: KindOpenAI}, audio, "metadata.references"},
		{"the sandbox uses references", UpstreamAccount{Kind: KindSandbox}, image, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, msg := tt.acc.RefuseSpeech(&contract.SpeechRequest{Text: "hi", References: tt.refs})
			if p != tt.want || (p != "" && msg == "") {
				t.Errorf("RefuseSpeech = %q %q, want %q", p, msg, tt.want)
			}
		})
	}
}
