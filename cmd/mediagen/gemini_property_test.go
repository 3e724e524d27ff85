package main

import (
	"testing"

	"mediagen/internal/money"
	"mediagen/internal/provider/gemini/geminifake"
)

// The money property over the gemini kind, on both stores (blindProperty): random requests
// (Veo 3's 8 s or the model's default) through the fake Gemini API at 30% random faults, its
// results of random lengths — some within the request, some longer than it allows.
func TestGeminiMoneyPropertyHoldsUnderRandomRequestsAndFaults(t *testing.T) {
	blindProperty{upstream: "veo-main", durations: []int{8, -1}, lengths: []float64{3, 8, 11.5, 14},
		start: func(t *testing.T, clip string, clipFor func(string) string, loseFor func(string) bool, args ...string) (*e2e, blindFake, func(int), func() string) {
			e, fake, _ := startGemini(t, geminifake.Config{Clip: clip, ClipFor: clipFor, LoseFor: loseFor, FaultPercent: 30, Seed: 4}, 1000*money.Scale, args...)
			return e, fake, nil, nil
		}}.runOnBothStores(t)
}
