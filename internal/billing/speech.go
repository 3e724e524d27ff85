package billing

import (
	"fmt"

	"mediagen/internal/money"
)

// SpeechQuote is the frozen pricing of a speech request, stored with its record.
type SpeechQuote struct {
	Currency string       `json:"currency"`
	Rate     money.Micros `json:"rate"` // per second of generated audio
	// Characters is the length of the combined text in Unicode code points, the contract's
	// counting rule.
	Characters       int          `json:"characters"`
	EstimatedSeconds int64        `json:"estimated_seconds"`
	Amount           money.Micros `json:"amount"` // the reservation
	// BoundMicros is the engine's measured bound of the audio for the text: what the
	// reservation was rounded up from, and the longest the stored audio may measure (longer
	// audio is cut to it).
	BoundMicros int64 `json:"bound_micros,omitempty"`
}

// SpeechSeconds is the reservation length of a text whose audio is at most boundMicros long:
// whole seconds rounded up, at least 1.
func SpeechSeconds(boundMicros int64) int64 {
	return max((boundMicros+999_999)/1_000_000, 1)
}

// EstimateSpeech prices the reservation of a text of the given length whose audio the engine
// never makes longer than boundMicros (its measured bound, internal/speech.Bound):
// SpeechSeconds × rate. The reservation bounds the charge (docs/billing.md).
func EstimateSpeech(currency string, rate money.Micros, boundMicros int64, characters int) (SpeechQuote, error) {
	secs := SpeechSeconds(boundMicros)
	amount, err := SecondsCost(rate, secs*1_000_000)
	if err != nil {
		return SpeechQuote{}, fmt.Errorf("speech estimate: %w", err)
	}
	return SpeechQuote{Currency: currency, Rate: rate, Characters: characters, EstimatedSeconds: secs, Amount: amount, BoundMicros: boundMicros}, nil
}

// SpeechCharge is the final amount: the measured duration in integer microseconds (fractions
// of a second kept) × rate, rounded half away from zero to the micro-unit.
func SpeechCharge(q SpeechQuote, durationMicros int64) (money.Micros, error) {
	return SecondsCost(q.Rate, durationMicros)
}
