package speech

import (
	"fmt"
	"unicode/utf8"

	"mediagen/internal/billing"
	"mediagen/internal/money"
)

// Quote is the frozen pricing of a speech request, stored with its record.
type Quote struct {
	Currency string       `json:"currency"`
	Rate     money.Micros `json:"rate"` // per second of generated audio
	// Characters is the length of the combined text in Unicode code points, the contract's
	// counting rule.
	Characters       int          `json:"characters"`
	EstimatedSeconds int64        `json:"estimated_seconds"`
	Amount           money.Micros `json:"amount"` // the reservation
}

// EstimateSeconds is the reservation length of a text under the engine's bound, in whole
// seconds rounded up, at least 1.
func EstimateSeconds(b Bound, text string) int64 {
	return max((b.Micros(text)+999_999)/1_000_000, 1)
}

// Estimate prices the reservation of a text: EstimateSeconds under the bound × rate. The
// reservation bounds the charge (docs/billing.md): the engine's audio for the text is never
// longer than the bound.
func Estimate(currency string, rate money.Micros, b Bound, text string) (Quote, error) {
	n := utf8.RuneCountInString(text)
	secs := EstimateSeconds(b, text)
	amount, err := billing.SecondsCost(rate, secs*1_000_000)
	if err != nil {
		return Quote{}, fmt.Errorf("speech estimate: %w", err)
	}
	return Quote{Currency: currency, Rate: rate, Characters: n, EstimatedSeconds: secs, Amount: amount}, nil
}

// Charge is the final amount: the measured duration in integer microseconds (fractions of a
// second kept) × rate, rounded half away from zero to the micro-unit.
func Charge(q Quote, durationMicros int64) (money.Micros, error) {
	return billing.SecondsCost(q.Rate, durationMicros)
}
