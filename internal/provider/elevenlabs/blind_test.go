package elevenlabs

import (
	"testing"

	"mediagen/internal/provider"
)

// A run of an ElevenLabs synthesis picked up after its process died is never sent again
// (internal/speech TestSpeechRerunOnABlindSynthesizerIsNotSentAgain holds what a
// provider.BlindSynthesizer gets): the client must be one.
func TestElevenLabsClientIsABlindSynthesizer(t *testing.T) {
	var s provider.Synthesizer = &Client{}
	if _, ok := s.(provider.BlindSynthesizer); !ok {
		t.Fatal("*elevenlabs.Client is not a provider.BlindSynthesizer: a re-run after a crash could bill a second synthesis")
	}
}
