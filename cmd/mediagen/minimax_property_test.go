package main

import (
	"testing"

	"mediagen/internal/money"
	"mediagen/internal/provider/minimax/minimaxfake"
)

// The money property over the minimax kind, on both stores (blindProperty): random requests
// (6 s, 10 s or the model's default) through the fake MiniMax at 30% random faults, its results
// of random lengths — some within the request, some longer than it allows.
func TestMiniMaxMoneyPropertyHoldsUnderRandomRequestsAndFaults(t *testing.T) {
	blindProperty{upstream: "minimax-main", durations: []int{6, 10, -1}, lengths: []float64{3, 6, 9.5, 14},
		start: func(t *testing.T, clip string, clipFor func(string) string, loseFor func(string) bool, args ...string) (*e2e, blindFake, func(int), func() string) {
			e, fake, _ := startMiniMax(t, minimaxfake.Config{Clip: clip, ClipFor: clipFor, LoseFor: loseFor, FaultPercent: 30, Seed: 4}, 1000*money.Scale,
				append(args, "--account-extra", "    timeout_seconds: 2\n")...)
			return e, fake, nil, nil
		}}.runOnBothStores(t)
}
