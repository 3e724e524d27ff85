package main

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"mediagen/internal/money"
	"mediagen/internal/provider/vertex/vertexfake"
)

// The money property over the vertex kind, on both stores (blindProperty): random requests
// (Veo 3's 8 s or the model's default, with or without sound) through the fake Vertex AI at
// 30% random faults of creates and operation reads, its access token revoked every tenth
// create (the next call fetches a new one), its results of random lengths.
func TestVertexMoneyPropertyHoldsUnderRandomRequestsAndFaults(t *testing.T) {
	blindProperty{upstream: "veo-vertex", durations: []int{8, -1}, lengths: []float64{3, 8, 11.5, 14},
		meta: func(rng *rand.Rand) string {
			return fmt.Sprintf(`,"generate_audio":%v`, []bool{true, false}[rng.IntN(2)])
		},
		start: func(t *testing.T, clip string, clipFor func(string) string, loseFor func(string) bool, args ...string) (*e2e, blindFake, func(int), func() string) {
			e, fake, _ := startVertex(t, vertexfake.Config{Clip: clip, ClipFor: clipFor, LoseFor: loseFor, FaultPercent: 30, Seed: 4}, false, 1000*money.Scale, args...)
			expire := func(i int) {
				if i%10 == 9 {
					fake.ExpireTokens() // revoked mid-run: the next call of the account fetches a new one
				}
			}
			return e, fake, expire, func() string { return fmt.Sprintf(", issued %d tokens", fake.TokensIssued()) }
		}}.runOnBothStores(t)
}
