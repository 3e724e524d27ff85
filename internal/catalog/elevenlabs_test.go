package catalog

import (
	"strings"
	"testing"

	"mediagen/internal/contract"
)

const withElevenLabs = `upstreams:
  - name: eleven-main
    kind: elevenlabs
    base_url: https://api.elevenlabs.io
    api_key_env: ELEVENLABS_API_KEY
    voice: JBFqnCBsd6RMkjVDRZzb
    cost: {currency: USD, per_character: 0.00003}
tenants:
  - id: acme
    name: Acme
    currency: EUR
    aliases:
      - alias: acme-speech
        product: speech
        upstream: eleven-main
        model: eleven_multilingual_v2
    rates:
      speech: 0.0002
`

// An elevenlabs account speaks, text only, with the voice it names; it serves nothing else,
// and its mistakes stop the load naming the account and the field.
func TestElevenLabsAccountsSpeakTextOnlyWithTheirVoice(t *testing.T) {
	t.Parallel()
	c, err := Parse("c.yaml", []byte(withElevenLabs))
	if err != nil {
		t.Fatal(err)
	}
	acc, _ := c.Upstream("eleven-main")
	if acc.Voice != "JBFqnCBsd6RMkjVDRZzb" || !acc.Kind.Remote() || !acc.Kind.Serves(ProductSpeech) || acc.Kind.Serves(ProductNative) ||
		acc.Kind.Serves(ProductProduction) || acc.Kind.Serves(ProductEnhancement) {
		t.Errorf("elevenlabs account %+v", acc)
	}
	if r, ok := acc.Cost.CharacterRate(); !ok || r != 30 {
		t.Errorf("per_character cost %v %v, want 30 micro-USD", r, ok)
	}
	for _, tt := range []struct{ name, old, new, want string }{
		{"a voice is required", "    voice: JBFqnCBsd6RMkjVDRZzb\n", "", `upstream "eleven-main": voice is required for kind elevenlabs`},
		{"the key must be named", "    api_key_env: ELEVENLABS_API_KEY\n", "", "give exactly one of api_key_env"},
		{"an https base URL", "https://api.elevenlabs.io", "http://api.elevenlabs.io", "base_url must be an https URL"},
		{"it makes no video", "        product: speech\n        upstream: eleven-main\n        model: eleven_multilingual_v2",
			"        product: native\n        tier: standard\n        upstream: eleven-main\n        model: eleven_multilingual_v2", `(kind elevenlabs) cannot serve product native`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse("c.yaml", []byte(strings.Replace(withElevenLabs, tt.old, tt.new, 1)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
		})
	}
	refs := &contract.SpeechRequest{Text: "hi", References: []contract.SpeechReference{{Type: "audio_url", URL: "https://x/a.mp3"}}}
	if p, _ := KindElevenLabs.RefuseSpeech(refs); p != "metadata.references" {
		t.Errorf("elevenlabs speech with references: %q", p)
	}
	image := &contract.SpeechRequest{Text: "hi", References: []contract.SpeechReference{{Type: "image_url", URL: "https://x/a.png"}}}
	if p, _ := KindElevenLabs.RefuseSpeech(image); p != "metadata.references" {
		t.Errorf("elevenlabs speech with an image reference: %q", p)
	}
	if p, _ := KindElevenLabs.RefuseSpeech(&contract.SpeechRequest{Text: "hi"}); p != "" {
		t.Errorf("elevenlabs plain text refused: %q", p)
	}
}
