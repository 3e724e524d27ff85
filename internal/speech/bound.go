package speech

import (
	"unicode"
	"unicode/utf8"
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

// boundOf is the bound of the engine an alias is bound to: the one set in Bounds, else the
// espeak bound (the sandbox is the only engine today).
func (s *Service) boundOf(upstream string) Bound {
	if b, ok := s.Bounds[upstream]; ok {
		return b
	}
	return EspeakBound
}
