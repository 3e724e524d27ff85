package speech

import (
	"unicode/utf8"

	"mediagen/internal/billing"
	"mediagen/internal/money"
)

// Quote is the frozen pricing of a speech request (billing owns the arithmetic).
type Quote = billing.SpeechQuote

// Estimate prices the reservation of a text under the engine's bound: speech measures the
// text, billing prices it. The engine's audio for the text is never longer than the bound.
func Estimate(currency string, rate money.Micros, b Bound, text string) (Quote, error) {
	return billing.EstimateSpeech(currency, rate, b.Micros(text), utf8.RuneCountInString(text))
}

// Charge is the final amount of a measured duration (billing.SpeechCharge).
func Charge(q Quote, durationMicros int64) (money.Micros, error) {
	return billing.SpeechCharge(q, durationMicros)
}
