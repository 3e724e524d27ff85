package speech

import (
	"unicode"
	"unicode/utf8"

	"mediagen/internal/catalog"
)

// Bound is an upper bound of the audio an engine makes for a text: a cost per code point by
// class, plus a fixed overhead, plus a margin. It is a measured property of an engine, not a
// guess: `go run ./bench/speechbound` synthesises a corpus (prose, numbers, symbols,
// non-Latin scripts, every ASCII character alone, repeated, spaced, after a digit, after a
// letter and on its own line) and reports the largest measured/bound ratio, which must stay
// at most 1. Each engine gets its own Bound; EspeakBound is the sandbox's.
type Bound struct {
	// Per code point, in microseconds.
	Space       int64 // ' ' and '\t'
	LineBreak   int64 // every other white space: espeak pauses as for a sentence end
	Letter      int64 // ASCII letters: a letter run may be spelled out letter by letter
	Digit       int64 // ASCII digits: long digit strings are read digit by digit
	Punctuation int64 // other printable ASCII: many are read by name ("exclamation mark")
	Other       int64 // any other code point: symbols and other scripts are read by name
	// Overhead is added once per text (leading and trailing silence, MP3 padding).
	Overhead int64
	// MarginPercent is added on top of the sum, for what the corpus did not cover.
	MarginPercent int64
}

// EspeakBound is the bound of the sandbox engine (espeak-ng at 175 words per minute, MP3).
// Measured with `go run ./bench/speechbound` (docs/speech.md#billing): the costliest
// contexts are a letter on its own line ("w\n", 0.79 s), a digit next to a symbol read by
// name ("7!", 1.25 s for the pair; "! " 0.88 s), and scripts espeak names per character (Korean after a
// Latin letter, 2.2 s for the pair; a braille pattern is read as "braille 1 2 3 4 5 6 7 8",
// 2.3 s for one code point); long digit strings read digit by digit cost 0.36 s a
// digit. Ordinary prose measures at about 0.07 s a character, so prose is over-reserved
// about five times; settlement refunds the difference.
var EspeakBound = Bound{
	Space:         50_000,
	LineBreak:     400_000,
	Letter:        500_000,
	Digit:         750_000,
	Punctuation:   850_000,
	Other:         2_350_000,
	Overhead:      600_000,
	MarginPercent: 10,
}

// Micros is the bound, in microseconds, of the audio made for text.
func (b Bound) Micros(text string) int64 {
	sum := b.Overhead
	for _, r := range text {
		switch {
		case r == ' ' || r == '\t':
			sum += b.Space
		case unicode.IsSpace(r):
			sum += b.LineBreak
		case r < utf8.RuneSelf && ('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z'):
			sum += b.Letter
		case '0' <= r && r <= '9':
			sum += b.Digit
		case r < utf8.RuneSelf:
			sum += b.Punctuation
		default:
			sum += b.Other
		}
	}
	return sum + sum*b.MarginPercent/100
}

// OpenAIBound is the default bound of an openai account (POST /audio/speech, speed 1, MP3).
// Derived, not guessed: OpenAI's voices speak at about 150 words a minute against espeak's
// 175, so each class of EspeakBound's measured worst cases is scaled by 1.2 (≥ 175/150);
// the overhead is 1 s (the API's leading and trailing silence, MP3 padding). The test
// TestOpenAIBoundCoversTheFakesAnswers measures it against the fake OpenAI API
// (openaifake serves the MP3 it is given for every text): the adversarial corpus spoken at
// 150 words a minute, fetched through the openai client and measured as the service bills,
// stays within it. An operator who measures a real account differently sets speech_bound.
var OpenAIBound = Bound{
	Space:         60_000,
	LineBreak:     480_000,
	Letter:        600_000,
	Digit:         900_000,
	Punctuation:   1_020_000,
	Other:         2_820_000,
	Overhead:      1_000_000,
	MarginPercent: 10,
}

// ElevenLabsBound is the default bound of an elevenlabs account (mp3_44100_128, the voice's
// stored speed 1). ElevenLabs' voices speak at about the pace of OpenAI's (some 150 words a
// minute), so it is OpenAIBound's. TestElevenLabsBoundCoversTheFakesAnswers measures it as
// OpenAIBound's is, against the fake ElevenLabs API (not against ElevenLabs itself, which
// cannot be reached from here). A voice stored with a slower speed (down to 0.7)
// needs the account's own speech_bound.
var ElevenLabsBound = OpenAIBound

// SeedSpeechBound is the default bound of a seedspeech account. Its preset voices speak at
// about OpenAI's pace, but a voice cloned from a reference keeps the reference speaker's
// pace, which may be slower: OpenAIBound's figures with a margin of 50% instead of 10%
// (a speaker down to some 110 words a minute). Audio past the bound is cut and billed to it
// (docs/billing.md); an operator whose speakers are slower sets speech_bound.
var SeedSpeechBound = Bound{
	Space: OpenAIBound.Space, LineBreak: OpenAIBound.LineBreak, Letter: OpenAIBound.Letter, Digit: OpenAIBound.Digit,
	Punctuation: OpenAIBound.Punctuation, Other: OpenAIBound.Other, Overhead: OpenAIBound.Overhead, MarginPercent: 50,
}

// KindBound is the measured default bound of an account: its catalog speech_bound when it
// sets one, else its kind's (OpenAIBound for openai, ElevenLabsBound for elevenlabs, EspeakBound for espeak and
// sandbox).
func KindBound(acc catalog.UpstreamAccount) Bound {
	if b := acc.SpeechBound; b != nil {
		return Bound{Space: b.SpaceUS, LineBreak: b.LineBreakUS, Letter: b.LetterUS, Digit: b.DigitUS,
			Punctuation: b.PunctuationUS, Other: b.OtherUS, Overhead: b.OverheadUS, MarginPercent: b.MarginPercent}
	}
	if acc.Kind == catalog.KindOpenAI {
		return OpenAIBound
	}
	if acc.Kind == catalog.KindElevenLabs {
		return ElevenLabsBound
	}
	if acc.Kind == catalog.KindSeedSpeech {
		return SeedSpeechBound
	}
	return EspeakBound
}

// boundOf is the bound of an account: the one set in Bounds (tests), else the account's
// (KindBound) found by accounts, else the espeak bound.
func (s *Service) boundOf(upstream string, accounts func(string) (catalog.UpstreamAccount, bool)) Bound {
	if b, ok := s.Bounds[upstream]; ok {
		return b
	}
	if accounts != nil {
		if acc, ok := accounts(upstream); ok {
			return KindBound(acc)
		}
	}
	return EspeakBound
}

// largestBound is, of the accounts' bounds, the one that bounds the text highest: a request
// that fails over to any of them is never under-reserved.
func (s *Service) largestBound(upstreams []string, accounts func(string) (catalog.UpstreamAccount, bool), text string) Bound {
	var best Bound
	var most int64 = -1
	for _, u := range upstreams {
		b := s.boundOf(u, accounts)
		if m := b.Micros(text); m > most {
			best, most = b, m
		}
	}
	if most < 0 {
		return EspeakBound
	}
	return best
}
