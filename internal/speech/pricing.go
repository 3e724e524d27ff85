package speech

import (
	"fmt"
	"unicode/utf8"

	"mediagen/internal/billing"
	"mediagen/internal/money"
)

// EstimateCharsPerSecond is the speaking pace the reservation assumes. Typical speech is
// 14–16 characters per second (the sandbox speaks at 175 words per minute, about 15), so
// reserving at 12 usually covers the final amount; the reservation is not a cap either way.
const EstimateCharsPerSecond = 12

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

// EstimateSeconds is the documented reservation length: ceil(characters / 12), at least 1.
func EstimateSeconds(characters int) int64 {
	secs := (int64(characters) + EstimateCharsPerSecond - 1) / EstimateCharsPerSecond
	return max(secs, 1)
}

// Estimate prices the reservation of a text: EstimateSeconds × rate.
func Estimate(currency string, rate money.Micros, text string) (Quote, error) {
	n := utf8.RuneCountInString(text)
	secs := EstimateSeconds(n)
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
